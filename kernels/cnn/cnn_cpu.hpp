#pragma once
// The CNN of cnn_spec.hpp on the CPU: convolution as im2col + cblas_sgemm forward and backward
// (col2im for the input gradient), max-pool with argmax indices, the two linear layers on
// OpenBLAS, softmax cross-entropy, SGD. The reference the GPU paths are checked against.
//
// How it is laid out for speed (one core runs about 4.4 GFLOP per step at batch 64, so the GEMMs
// must run near the core's peak and everything else must cost little):
// - Activations are channels-last (NHWC) inside the trainer; images come in and logits go out as
//   in PyTorch. A convolution's GEMM is then Y (pixels x out_channels) = columns (pixels x
//   25 in_channels) * W^T, with the pixels as the long dimension, which OpenBLAS ran at least as
//   fast as the channel-major orientation on every product of this network, and much faster on
//   conv1's (forward 80 against 61, weight gradient 77 against 42 GFLOP/s on one Zen 4 core);
//   pooling, bias and ReLU work on contiguous channel vectors.
// - The input of each convolution is kept with its 2-pixel zero border in place, so a row of
//   columns is five contiguous copies of 5 x in_channels floats, with no edge cases.
// - The weights are permuted once per step into that (kernel row, kernel column, channel) order,
//   and their gradients back into PyTorch's order.
// - Convolutions run in chunks of a few images (images_per_chunk): a chunk's columns (about 1 MiB)
//   stay in the core's L2 cache between the im2col that writes them and the GEMM that reads them.
//   Columns for the whole batch would be 85 MB at batch 64, and GEMMs streaming them from memory
//   measured half as fast. For the same reason the backward pass computes each chunk's columns
//   again instead of keeping them from the forward pass.
// - Bias and ReLU come after the pool, on a quarter of the values: max-pooling commutes with
//   adding a per-channel constant and with ReLU (both monotonic), and picks the same argmax.
//
// Operations of one step, in order, with the names a StepObserver sees (kernels/common/
// step_observer.hpp). A name inside "per chunk" is reported once per chunk of images, so a
// profiler should sum the times of a name over a step.
//   "conv1.gemm", "conv2.gemm", "conv3.gemm": the weights' permutation, once per step;
//   forward, for l in 1..3:  per chunk: "convL.im2col" (conv1: with the images' conversion to
//                            NHWC), "convL.gemm", "poolL.forward";
//                            then "convL.bias" (bias, and ReLU when enabled, on the pooled values)
//   "fc1.forward" (with the flattening into PyTorch's order), "fc2.forward", "loss" (softmax
//   cross-entropy and its gradient)
//   backward: "fc2.backward", "fc1.backward" (weight, bias and input gradients), then for l in
//   3..1:                    "convL.bias_gradient" (the pooled gradient through the ReLU, and
//                            its sums per channel);
//                            per chunk: "poolL.backward" (to the argmax), "convL.im2col" (the
//                            columns again), "convL.weight_gradient" (GEMM dW^T += columns^T dY;
//                            the last chunk: with the permutation back), "convL.input_gradient"
//                            (GEMM column gradient = dY W, then col2im; not for conv1)
//   "update" (the shards' gradients summed, then parameters -= lr * gradient).
//
// Threads: with `workers` > 1 the batch is split into that many shards of consecutive images (at
// most one per image; kernels/common/worker_threads.hpp). Each worker runs the whole forward and
// backward pass of its images, with single-threaded OpenBLAS, its own chunk buffers and its own
// gradient buffer (the loss gradient is divided by the whole batch, so the shard gradients add up
// to the batch's); the batch-sized activations are shared, each shard writing its own images. The
// weights are permuted once per step before the shards start; the shard gradients are summed in
// shard order and the parameters updated in one pass split among the workers; the loss is the
// mean over the whole batch. A given worker count always gives the same result; against one
// worker only the order of the sums over images differs (fp32 rounding, tests/test_cnn_cpu.cpp).
// With an observer set, worker 0 reports its shard's operations (the others run unobserved, at the
// same time), and the permutations and the update are reported from the caller's thread.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/step_observer.hpp"
#include "kernels/common/worker_threads.hpp"

namespace gpubench::cpu {

class CnnCpuTrainer {
 public:
  // Validates spec, batch and workers (std::invalid_argument naming the problem) and sizes every
  // workspace once for `batch` images, so a step allocates nothing.
  CnnCpuTrainer(const CnnSpec& spec, int batch, int workers = 1);

  // One SGD step on `batch` images (NCHW) and labels: forward, loss, backward,
  // parameters -= lr * gradient. Returns the mean loss of the forward pass (before the update).
  float step(float* parameters, const float* images, const int* labels);

  // Mean loss and its gradient with respect to every parameter (same layout), no update.
  float loss_and_gradient(const float* parameters, const float* images, const int* labels,
                          float* gradient);

  // Mean loss of the forward pass only.
  float loss(const float* parameters, const float* images, const int* labels);

  // The forward pass of the first `images` (1 <= images <= batch) images: images x 10 logits,
  // row-major, valid until the trainer's next call. For evaluation in pieces.
  const float* logits(const float* parameters, const float* images_nchw, int images);

  // Each operation of the following steps is reported to `observer` (nullptr: none).
  void set_observer(StepObserver* observer) { observer_ = observer; }

  int batch() const { return batch_; }
  int workers() const { return static_cast<int>(shards_.size()); }
  const CnnSpec& spec() const { return spec_; }

  // Images per convolution chunk of conv layer `layer` (0..2): see the header comment.
  int images_per_chunk(int layer) const { return chunk_images_[layer]; }

 private:
  // One shard's images and its own buffers: one chunk at a time, its im2col columns (or their
  // gradient) and its convolution output (or its gradient); a conv layer's transposed weight
  // gradient and bias sums while they are accumulated; its gradient (shard 0 writes the caller's).
  struct Shard {
    int first_image = 0;
    int images = 0;
    std::vector<float> columns;
    std::vector<float> conv_output;
    std::vector<float> weight_gradient_transposed;  // (ky, kx, in) x out
    std::vector<double> channel_sums;               // a conv layer's bias gradient while summed
    std::vector<float> channel_partial_sums;        // its sums over one image
    std::vector<float> gradient;
    double loss_sum = 0;
  };

  void permute_weights(const float* parameters);
  void forward(Shard& shard, const float* parameters, const float* images_nchw, int images_count,
               StepObserver* observer);
  // The shard's sum of losses; with the gradient, dL/dlogits (divided by the whole batch) in
  // place of its logits.
  double softmax_loss(const Shard& shard, const int* labels, bool with_gradient,
                      StepObserver* observer);
  void backward(Shard& shard, const float* parameters, float* gradient, StepObserver* observer);
  // The whole batch's loss and gradient (into `gradient`) and, when `parameters_to_update` is
  // non-null, the update; with a null `gradient`, the loss alone (what loss() returns).
  float batch_step(const float* parameters, const float* images, const int* labels, float* gradient,
                   float* parameters_to_update);
  void linear_forward(const float* parameters, int index, const float* input, int rows,
                      float* output) const;
  void linear_backward(const float* parameters, int index, const float* input,
                       const float* output_gradient, int rows, float* input_gradient,
                       float* gradient) const;

  CnnSpec spec_;
  int batch_;
  StepObserver* observer_ = nullptr;
  int chunk_images_[CnnSpec::kConvLayers] = {};
  std::vector<Shard> shards_;
  std::vector<const float*> other_gradients_;  // shards 1.. gradients, for the reduction
  // Activations of the batch, NHWC. conv_input_[l] is the input of the convolution with index l
  // (0..2), with its zero border: the images for l = 0, else the output of the pool before it
  // (after bias and ReLU); pooled3_ is pool3's output, the input of fc1. Their gradients have
  // the same layouts.
  std::vector<float> conv_input_[CnnSpec::kConvLayers];
  std::vector<float> conv_input_gradient_[CnnSpec::kConvLayers];  // [0] unused
  std::vector<float> pooled3_;
  std::vector<float> pooled3_gradient_;
  std::vector<std::uint8_t> argmax_[CnnSpec::kConvLayers];     // batch x (size/2)^2 x C, 0..3
  std::vector<float> permuted_weights_[CnnSpec::kConvLayers];  // out x (ky, kx, in)
  std::vector<float> features_;  // fc1's input: pool3's output in PyTorch's flatten order
  std::vector<float> features_gradient_;
  std::vector<float> hidden_;           // fc1 output, batch x 64
  std::vector<float> hidden_gradient_;  // batch x 64
  std::vector<float> logits_;           // batch x 10; becomes dL/dlogits in the backward pass
  std::vector<float> gradient_;         // parameter-shaped, for step()
};

// The thread plan of a CNN row on `threads` cores (kernels/common/worker_threads.hpp,
// plan_cpu_threads), with the constants measured for it (docs/workloads.md).
CpuThreadPlan cnn_cpu_thread_plan(const CnnSpec& spec, int batch, int threads);

// Mean loss and accuracy over `rows` images, evaluated in pieces of up to 256 images (forward
// only: for checks and the test_accuracy counter, not for timing).
struct CnnEvaluation {
  double loss = 0;
  double accuracy = 0;
};
CnnEvaluation cnn_evaluate(const CnnSpec& spec, const float* parameters, const float* images,
                           const int* labels, int rows);

// Accuracy only: cnn_evaluate(...).accuracy.
double cnn_accuracy(const CnnSpec& spec, const float* parameters, const float* images,
                    const int* labels, int rows);

// Softmax cross-entropy of one row of `classes` logits for true class `label`, computed stably:
// (max - z_label) + log(sum_j exp(z_j - max)). Writes softmax(z) into `probabilities` if non-null
// (which may alias `logits`).
float cnn_softmax_cross_entropy(const float* logits, int classes, int label, float* probabilities);

// The building blocks, exposed for the tests. Tensors are NHWC: image n, row y, column x,
// channel c of a tensor with `border` zero pixels around each `size` x `size` image is at
// ((n * padded + y + border) * padded + x + border) * channels + c, padded = size + 2 border.
struct NhwcLayout {
  int channels = 0;
  int size = 0;
  int border = 0;
  int padded_size() const { return size + 2 * border; }
  std::size_t image_floats() const {
    return static_cast<std::size_t>(padded_size()) * static_cast<std::size_t>(padded_size()) *
           static_cast<std::size_t>(channels);
  }
  std::size_t offset(int image, int y, int x) const {
    return ((static_cast<std::size_t>(image) * static_cast<std::size_t>(padded_size()) +
             static_cast<std::size_t>(y + border)) *
                static_cast<std::size_t>(padded_size()) +
            static_cast<std::size_t>(x + border)) *
           static_cast<std::size_t>(channels);
  }
};

// The im2col matrix of a 5 x 5 convolution with padding 2 (stride 1) over `images` images whose
// layout has border 2 (zeros): (images x size^2) rows (image, y, x) by (25 x channels) columns
// (kernel row, kernel column, channel). Throws std::invalid_argument for another border.
void im2col_5x5_nhwc(const float* input, NhwcLayout layout, int images, float* columns);
// Its adjoint: every input pixel the sum of the column entries copied from it. Writes the
// interiors of `output`'s `images` images (the border, which only ever held zeros, is left as it
// is).
void col2im_5x5_nhwc(const float* columns, int images, float* output, NhwcLayout layout);
// 2 x 2 max-pooling with stride 2 of `images` borderless NHWC images of `size` x `size` x
// `channels`: the largest of each window (the first of equal ones, in row-major order, like
// PyTorch) into `output` (any border), and its position 0..3 in the window (row-major) into
// `argmax`, images x (size/2)^2 x channels.
void max_pool_2x2_nhwc(const float* input, int images, float* output, NhwcLayout output_layout,
                       std::uint8_t* argmax);
// Its backward pass: each pooled gradient to its window's argmax, zeros to the other three, into
// `input_gradient` (borderless, (2 size)^2 x channels per image, size = output_layout.size).
void max_pool_2x2_nhwc_backward(const float* output_gradient, NhwcLayout output_layout,
                                const std::uint8_t* argmax, int images, float* input_gradient);

}  // namespace gpubench::cpu
