#pragma once
// The CNN every CNN path trains: the classic PyTorch-tutorial CIFAR-10 network, kept exact.
//
//   input 3 x 32 x 32
//   conv1  Conv2d(3, 32, 5, padding 2)   -> 32 x 32 x 32   MaxPool2d(2) -> 32 x 16 x 16
//   conv2  Conv2d(32, 32, 5, padding 2)  -> 32 x 16 x 16   MaxPool2d(2) -> 32 x 8 x 8
//   conv3  Conv2d(32, 64, 5, padding 2)  -> 64 x 8 x 8     MaxPool2d(2) -> 64 x 4 x 4
//   Flatten (channel, row, column order, as torch.flatten)              -> 1024
//   fc1    Linear(1024, 64)                                             -> 64
//   fc2    Linear(64, 10)                                               -> 10 logits
// Softmax cross-entropy averaged over the batch, plain SGD at lr 0.01. No activation functions
// between the layers: that is the tutorial's network. `relu` adds a ReLU after each convolution
// (after its bias, before its pool), off by default.
//
// Data layout: images are NCHW float (batch x 3 x 32 x 32, row-major inside each plane), values in
// [0, 1] like torchvision's ToTensor(); labels are class indices 0..9.
//
// Parameter layout (every path): one contiguous float vector holding, for each layer in the order
// conv1, conv2, conv3, fc1, fc2, its weight followed by its bias, in PyTorch's layouts:
//   conv weight  out_channels x in_channels x 5 x 5, i.e. a row-major out_channels x
//                (in_channels * 25) matrix: the left operand of the im2col GEMM
//                Y (out_channels x H*W) = W (out_channels x K) * columns (K x H*W), K = in * 25
//   linear weight  out_features x in_features (row-major): y = x W^T + b
// so a reset is one copy, an SGD update one pass over one vector, and the initial weights can be
// loaded into torch.nn modules as they are.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gpubench {

// The tutorial's SGD step size and batch.
inline constexpr float kCnnLearningRate = 0.01F;
inline constexpr int kCnnTutorialBatch = 64;
// The seed of the initial weights every path starts from, so their trajectories compare.
inline constexpr std::uint64_t kCnnInitialWeightSeed = 1;

struct ConvShape {
  int in_channels = 0;
  int out_channels = 0;
  int size = 0;  // input height = width (square images); padding 2 keeps it through the conv
  static constexpr int kKernel = 5;
  static constexpr int kPadding = 2;
  static constexpr int kPool = 2;
  int pooled_size() const { return size / kPool; }
  // Rows of the im2col matrix: one per (input channel, kernel row, kernel column).
  int patch() const { return in_channels * kKernel * kKernel; }
  int pixels() const { return size * size; }  // columns of the im2col matrix
  std::size_t weight_count() const {
    return static_cast<std::size_t>(out_channels) * static_cast<std::size_t>(patch());
  }
};

struct LinearShape {
  int in_features = 0;
  int out_features = 0;
  std::size_t weight_count() const {
    return static_cast<std::size_t>(out_features) * static_cast<std::size_t>(in_features);
  }
};

struct CnnSpec {
  static constexpr int kChannels = 3;
  static constexpr int kImageSize = 32;
  static constexpr int kClasses = 10;
  static constexpr int kConvLayers = 3;
  static constexpr int kLinearLayers = 2;
  std::array<ConvShape, kConvLayers> conv = {
      {{kChannels, 32, kImageSize}, {32, 32, kImageSize / 2}, {32, 64, kImageSize / 4}}};
  std::array<LinearShape, kLinearLayers> linear = {{{64 * 4 * 4, 64}, {64, kClasses}}};
  bool relu = false;  // ReLU after each convolution (not the tutorial's network)
  float learning_rate = kCnnLearningRate;
  std::uint64_t seed = kCnnInitialWeightSeed;

  static constexpr int image_floats() { return kChannels * kImageSize * kImageSize; }
  // Offsets into the parameter vector (layout above). Layer index: 0..2 conv, 3..4 linear.
  std::size_t weight_offset(int layer) const;
  std::size_t bias_offset(int layer) const;
  std::size_t parameter_count() const;
  // Throws std::invalid_argument naming what is wrong (a shape that does not chain, a
  // non-positive or non-finite learning rate).
  void validate() const;
};

// Throws std::invalid_argument unless 1 <= batch <= rows_available, naming both.
void validate_cnn_batch(int batch, int rows_available);

// Initial parameters from spec.seed (kernels/common/seeded_random.hpp): every weight and bias
// uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], PyTorch's default for Conv2d and Linear
// (kaiming_uniform with a = sqrt(5)), fan_in = in_channels * 25 or in_features.
std::vector<float> initial_cnn_parameters(const CnnSpec& spec);

// Floating-point work of one SGD step on `batch` images, counting the convolutions' and linears'
// multiply-adds (2 flop each): forward, weight gradient, and input gradient for every layer but
// conv1 (whose input gradient nobody needs). Pooling, bias, loss and update are O(activations)
// and left out, so every path reports the same count.
double cnn_step_flop(const CnnSpec& spec, int batch);

// Memory traffic of one SGD step on `batch` images by the minimum-traffic model: every operation
// reads each of its operands once and writes each of its outputs once, in 4-byte elements (fp32
// storage; int32 labels). Per convolution (X its input, Y its output before the pool, X' the
// pooled output, W and b its weight and bias): forward reads X, W, b and writes Y (bias and ReLU
// applied as it is written); the pool reads Y and writes X'; the pool backward reads Y and dX' and
// writes dY; the weight gradient reads X and dY and writes dW and db; the input gradient (not
// conv1) reads dY and W and writes dX. A linear layer's forward reads its input, W and b and writes
// its output; its gradients read the input, dZ and W and write dW, db and dX; the loss reads the
// logits and labels and writes their gradient; the update reads the parameters and the gradient
// and writes the parameters. The model counts the layers' tensors, not an
// implementation's: the im2col columns and a separate bias pass are not in it. docs/workloads.md
// has the table.
double cnn_step_bytes(const CnnSpec& spec, int batch);

// The work of each operation a trainer names to its StepObserver (kernels/common/step_observer.hpp)
// in one step, by the same model applied to the operation as the trainer runs it: the products'
// flop (the other operations have none, as in cnn_step_flop, so the flop of the operations sum to
// cnn_step_flop) and each operand read once and each output written once, in 4-byte elements and
// 1-byte pool positions. Here the im2col columns count (B x pixels x in_channels x 25 per
// convolution), so the operations' bytes sum to more than cnn_step_bytes. The two trainers differ:
// the CPU trainer adds a convolution's bias after its pool, takes its bias gradient as an operation
// of its own and builds the columns again in the backward pass (convN.im2col twice per step); the
// GPU trainer adds the bias before the pool and sums the bias gradient in the weight gradient.
struct CnnOperationWork {
  double flop = 0;
  double bytes = 0;
};
enum class CnnTrainerKind { cpu, gpu };
std::map<std::string, CnnOperationWork> cnn_operation_work(const CnnSpec& spec, int batch,
                                                           CnnTrainerKind trainer);

}  // namespace gpubench
