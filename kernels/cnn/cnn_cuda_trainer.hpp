#pragma once
// The CIFAR-10 tutorial CNN (kernels/cnn/cnn_spec.hpp) trained on the GPU the way a framework runs
// it: every operation its own launch on one stream, the convolutions as im2col + one cuBLAS
// product over the whole batch (layouts in kernels/cnn/cnn_cuda_kernels.cuh), and the same step
// captured in a CUDA graph.
//
// One SGD step, with the operation names a StepObserver sees (the CPU trainer's, cnn_cpu.hpp) and
// the launches each makes (a cuBLAS product counts as one):
//   forward, l = 1..3   "convL.im2col" 1, "convL.gemm" 1, "convL.bias" 1 (+ ReLU, into NCHW),
//                       "poolL.forward" 1                                              3 x 4 = 12
//   "fc1.forward", "fc2.forward": product, bias                                        2 x 2 =  4
//   "loss": softmax cross-entropy, dlogits and the mean loss                                    1
//   "fc2.backward", "fc1.backward": weight product, bias sums, input product           2 x 3 =  6
//   backward, l = 3..1  "poolL.backward" 1 (+ the ReLU mask),
//                       "convL.weight_gradient": product, bias sums 2                  3 x 3 =  9
//                       "convL.input_gradient" (not conv1): product, col2im 2          2 x 2 =  4
//   "update": parameters -= lr * gradient, every layer at once                                  1
//   total                                                                                      37
// Every step trains on the same batch; the loss stays on the device unless a readback copies it
// to the host. The products run in plain fp32 (CUBLAS_COMPUTE_32F, no TF32) so the losses can be
// compared with the CPU's within fp32 rounding.
//
// Mixed precision (bf16, fp16; kernels/common/training_precision.hpp), as every mixed-precision
// trainer does it (kernels/common/mixed_precision_kernels.cuh): every product reads 2-byte operands
// (the im2col columns, the linear layers' inputs, the gradients, and a 2-byte copy of the weights)
// with fp32 accumulation and fp32 output, through the same cublasGemmEx calls (cuBLAS picks
// tensor-core kernels from the pointers it is given, so a weight copy inside the parameter vector
// needs no alignment hint); bias, pooling, loss, gradients, master weights and the update stay
// fp32. im2col and the pool's backward write the 2-byte operands directly and the bias gradients
// sum them, so the casts add only 4 launches: fc1's input and output ("fc1.forward"), the loss
// gradient, multiplied by the loss scale for fp16 ("loss"), and fc2's input gradient
// ("fc2.backward"). fp16 adds 2 more to "update": the inf/NaN check of the unscaled gradient and
// the scale update, both on the device (kernels/common/mixed_precision_kernels.cuh), so a skipped
// step never waits for the host and eager and graph run the same way. 37 launches per step in fp32,
// 41 in bf16, 43 in fp16.
//
// Eager: the launches are issued from the host every step. Graph: `graph_steps` consecutive steps
// (with their input copies and the loss readback) are captured once and replayed, one launch per
// replay.

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/step_observer.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

// Where each step's batch comes from: already on the device (uploaded once), or copied from host
// memory before every step, like a data loader (pageable: an ordinary host array; pinned:
// page-locked).
enum class CnnInput { resident, pageable, pinned };
const char* cnn_input_name(CnnInput input);

enum class CnnExecution { eager, graph };

struct CnnRunConfig {
  CnnExecution execution = CnnExecution::eager;
  // Copy the loss to the host and wait for it (like loss.item()) after every `readback_every`-th
  // step; 0 = never.
  int readback_every = 0;
  CnnInput input = CnnInput::resident;
  // Graph only: steps captured per graph. With readbacks it is forced to readback_every, so the
  // readback ends each replay.
  int graph_steps = 1;
};

class CnnGpuTrainer {
 public:
  // Validates the network and the batch (std::invalid_argument naming the problem: a spec that
  // does not chain, batch < 1, a label outside 0..9, a batch above cnn_gpu_max_batch(spec)),
  // allocates every device buffer once, as cnn_gpu_buffers(spec, batch) sizes them
  // (device_bytes() == cnn_gpu_device_bytes(spec, batch)), uploads the batch (batch x 3
  // x 32 x 32 floats, NCHW; one label per image) and the initial parameters (spec layout), and
  // keeps host copies of the batch for the input-transfer variants. Runs one warm-up step and
  // resets the parameters, so the trainer starts at the initial parameters with their loss and
  // gradient in place. `precision` is the products' format (the buffers are
  // cnn_gpu_buffers(spec, batch, precision)); fp16 scales the loss with `loss_scaling`
  // (GradScaler's defaults unless a test asks for others; validated as LossScaler does).
  CnnGpuTrainer(const CnnSpec& spec, int batch, const float* images, const int* labels,
                const float* initial_parameters,
                TrainingPrecision precision = TrainingPrecision::fp32,
                LossScalerSettings loss_scaling = {});
  ~CnnGpuTrainer();
  CnnGpuTrainer(const CnnGpuTrainer&) = delete;
  CnnGpuTrainer& operator=(const CnnGpuTrainer&) = delete;
  CnnGpuTrainer(CnnGpuTrainer&&) = delete;
  CnnGpuTrainer& operator=(CnnGpuTrainer&&) = delete;

  // Sets the mode for run(steps). For graphs it captures and instantiates them now, outside any
  // timing: one graph of graph_steps steps, and one for the remainder of `steps` if any. Throws
  // std::invalid_argument for steps < 1, readback_every < 0, and a graph with pageable input (a
  // copy from pageable memory cannot be captured).
  void prepare(const CnnRunConfig& config, int steps);

  // Enqueues a device-to-device copy of the initial parameters: every run starts from them.
  void enqueue_reset();

  // Trains `steps` SGD steps in the prepared mode (steps must be what prepare() was given for
  // graphs). Returns once the last step is enqueued, or once its readback is on the host. Losses
  // read back are appended to `readback_losses` when it is non-null.
  void run(int steps, std::vector<float>* readback_losses);

  // One eager step on the resident batch followed by a synchronous readback of its loss
  // (validation and warm-up).
  float step_and_read_loss();

  // `steps` steps captured in a graph, for measuring the GPU time of a step with nothing else in
  // the way (no launch gaps; the caller times a replay). Every operation runs on one stream in
  // both modes, so eager and graph rows share this order. Each launch trains the parameters;
  // reset afterwards.
  CudaGraph capture_compute_graph(int steps);

  // Each operation of the following eager steps is reported to `observer` (nullptr: none), e.g.
  // to record CUDA events on stream() around it. Captured graphs never report (their operations
  // are not issued one by one).
  void set_observer(StepObserver* observer) { observer_ = observer; }

  // Synchronous reads (they wait for the stream): the loss of the last step, the parameters, and
  // the gradient the last step computed (the spec's parameter layout), for checks. Before any
  // step, the loss and gradient are the constructor's warm-up step's: at the initial parameters.
  // With fp16 the gradient is the scaled one (times the loss scale of its step), as the update
  // reads it.
  float last_loss();
  std::vector<float> parameters();
  std::vector<float> last_gradient();

  cudaStream_t stream() const { return stream_.get(); }
  const CnnSpec& spec() const { return spec_; }
  int batch() const { return batch_; }
  // Kernels and cuBLAS calls of one eager step (a cuBLAS call counts as one): 37 in fp32, 41 in
  // bf16, 43 in fp16 (see above).
  int launches_per_step() const;
  TrainingPrecision precision() const { return precision_; }
  // fp16: where the loss scale stands after the steps run so far (a synchronous read); nothing for
  // fp32 and bf16, which train without loss scaling.
  std::optional<LossScaleState> loss_scale_state();
  std::size_t input_bytes_per_step() const;
  std::size_t device_bytes() const { return device_bytes_; }
  int graph_steps() const { return graph_steps_; }

 private:
  void enqueue_step(StepObserver* observer);
  void enqueue_input_copy(CnnInput input);
  void enqueue_readback();
  CudaGraph capture(int steps, CnnInput input, bool readback_at_end);
  DeviceBuffer allocate(std::size_t bytes);

  CnnSpec spec_;
  int batch_;
  TrainingPrecision precision_;
  LossScalerSettings loss_scaling_;
  CnnGpuBuffers buffers_;  // the size of every buffer below
  std::size_t device_bytes_ = 0;
  StepObserver* observer_ = nullptr;
  Stream stream_;
  // Declared before the handle that uses it, so the handle is destroyed first.
  DeviceBuffer cublas_workspace_;
  struct Products;  // cuBLAS handle and the products' shapes (cnn_cuda_trainer.cpp)
  std::unique_ptr<Products> products_;
  DeviceBuffer parameters_;
  DeviceBuffer initial_parameters_;
  DeviceBuffer gradient_;
  DeviceBuffer images_;
  DeviceBuffer labels_;
  // Per convolution: its im2col matrix (K x batch*pixels, in the step's precision), kept from the
  // forward pass for the weight gradient; in fp32 then overwritten by the input gradient's columns
  // (column_gradient_ holds those in a mixed step, whose columns are 2-byte).
  std::array<DeviceBuffer, CnnSpec::kConvLayers> columns_;
  // A convolution's product output (forward) or gradient (backward), channel-major; shared by the
  // layers, each uses it only between two of its own operations.
  DeviceBuffer channel_major_;
  // A convolution's output in NCHW, read only by its pool: shared by the layers.
  DeviceBuffer conv_output_;
  // Per pool: the pooled activations (the next layer's input, and the ReLU mask's source) and the
  // position of each window's maximum.
  std::array<DeviceBuffer, CnnSpec::kConvLayers> pooled_;
  std::array<DeviceBuffer, CnnSpec::kConvLayers> window_positions_;
  // The gradient with respect to a pool's output (NCHW): fc1's input gradient for pool3, col2im's
  // result for pool2 and pool1. Shared: each is consumed by its pool's backward before the next
  // is written.
  DeviceBuffer pooled_gradient_;
  DeviceBuffer hidden_;           // fc1's output, batch x 64
  DeviceBuffer hidden_gradient_;  // fc2's input gradient, batch x 64
  DeviceBuffer logits_;           // batch x 10, becomes dlogits
  DeviceBuffer loss_;
  DeviceBuffer loss_partials_;
  DeviceBuffer loss_counter_;
  // Bias-gradient scratch, shared by the layers (their sums run one after the other).
  DeviceBuffer sum_partials_;
  DeviceBuffer sum_counters_;
  // Mixed-precision step only (CnnGpuBuffers says what each holds).
  DeviceBuffer low_parameters_;
  DeviceBuffer low_channel_major_gradient_;
  DeviceBuffer low_features_;
  DeviceBuffer low_hidden_;
  DeviceBuffer low_hidden_gradient_;
  DeviceBuffer low_logits_gradient_;
  DeviceBuffer column_gradient_;
  DeviceBuffer loss_scale_;
  HostBuffer pageable_images_;
  HostBuffer pageable_labels_;
  HostBuffer pinned_images_;
  HostBuffer pinned_labels_;
  PinnedHostBuffer loss_host_;
  CnnRunConfig config_;
  int prepared_steps_ = 0;
  int graph_steps_ = 0;
  CudaGraph graph_;            // graph_steps_ steps, when prepared_steps_ >= graph_steps_
  CudaGraph remainder_graph_;  // prepared_steps_ % graph_steps_ steps, when that is not 0
};

}  // namespace gpubench::cuda
