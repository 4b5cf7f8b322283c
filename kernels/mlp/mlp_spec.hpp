#pragma once
// The tiny multi-layer perceptron every MLP path trains: shapes, parameter layout, seeded
// initialisation, learning rate and the FLOP count. The CPU (mlp_cpu*.hpp) and CUDA (mlp_cuda*)
// implementations beside this file all train exactly this description.
//
// Network: inputs -> hidden[0] (ReLU) -> ... -> hidden[h-1] (ReLU) -> classes, softmax
// cross-entropy averaged over the batch, plain SGD. Every path (CPU OpenBLAS, CPU small-matrix,
// GPU eager, graph and fused) trains exactly this description from exactly the same initial
// weights, so their loss trajectories can be compared number by number.
//
// Parameter layout (shared by every path): one contiguous float vector holding, for each layer l
// in order, its weight matrix W_l (fan_in x fan_out, row-major) followed by its bias b_l (fan_out).
// W_l and b_l together are therefore a (fan_in + 1) x fan_out row-major matrix whose last row is
// the bias; a reset is one copy, and an SGD update is one pass over one vector.
//
// Data layout: a batch is row-major, one sample per row (batch x inputs), labels are class indices.
// A forward layer is Z = A W + b: a row-major GEMM with m = batch, n = fan_out, k = fan_in.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/seeded_random.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench {

// The classic example's plain SGD step size, used by every MLP workload.
inline constexpr float kMlpLearningRate = 0.01F;
// The seed of the initial weights every path starts from, so their trajectories compare.
inline constexpr std::uint64_t kMlpInitialWeightSeed = 1;

// The number format of the layer products (kernels/common/training_precision.hpp, shared with
// every trainer; kMixedPrecisionLossTolerance is there too).
using MlpPrecision = TrainingPrecision;
const char* mlp_precision_name(MlpPrecision precision);

struct MlpSpec {
  int inputs = 0;
  std::vector<int> hidden;  // width of each hidden layer, each followed by ReLU
  int classes = 0;
  float learning_rate = kMlpLearningRate;
  int epochs = 1;  // SGD steps one training run takes (each step sees the whole batch)
  std::uint64_t seed = kMlpInitialWeightSeed;

  int layer_count() const { return static_cast<int>(hidden.size()) + 1; }
  int fan_in(int layer) const { return layer == 0 ? inputs : hidden[layer - 1]; }
  int fan_out(int layer) const { return layer == layer_count() - 1 ? classes : hidden[layer]; }
  // Index of W_l's first element in the parameter vector; b_l follows W_l.
  std::size_t weight_offset(int layer) const;
  std::size_t bias_offset(int layer) const {
    return weight_offset(layer) + static_cast<std::size_t>(fan_in(layer)) * fan_out(layer);
  }
  std::size_t parameter_count() const;
  int widest_layer() const;  // max over inputs, hidden widths and classes
  // "4-10-3"
  std::string describe() const;
  // Throws std::invalid_argument naming what is wrong (zero or negative width, fewer than two
  // classes, non-positive learning rate or epoch count).
  void validate() const;
};

// Throws std::invalid_argument unless 1 <= batch <= rows_available, with a message naming both.
void validate_batch(const MlpSpec& spec, int batch, int rows_available);

// Throws std::invalid_argument naming the first of `rows` labels outside 0..spec.classes-1 (a GPU
// kernel would read out of bounds with it).
void validate_labels(const MlpSpec& spec, const int* labels, int rows);

// Initial parameters from spec.seed: every weight and bias uniform in [-1/sqrt(fan_in),
// 1/sqrt(fan_in)], PyTorch's nn.Linear default, so the Iris run starts where the classic example
// starts. The same vector seeds every path.
std::vector<float> initial_parameters(const MlpSpec& spec);

// Floating-point work of one SGD step on `batch` rows, counting the layer products only (2 flop per
// multiply-add): forward A W, weight gradient A^T dZ, and input gradient dZ W^T for every layer but
// the first. Element-wise work (bias, ReLU, softmax, update) is O(batch x width), a few percent at
// most, and is left out so the count is the same for every path.
double mlp_step_flop(const MlpSpec& spec, int batch);

// Memory traffic of one SGD step on `batch` rows by the minimum-traffic model: every operation
// reads each of its operands once and writes each of its outputs once, in 4-byte elements (fp32
// storage; int32 labels). Operations (I = fan_in, O = fan_out of a layer, B = batch, P =
// parameter_count, C = classes):
//   forward layer   reads A (B x I), W (I x O), b (O); writes the activation (B x O), bias and
//                   ReLU applied as it is written
//   loss            reads the logits (B x C) and labels (B); writes their gradient (B x C)
//   weight gradient reads A (B x I) and dZ (B x O); writes dW (I x O) and db (O)
//   input gradient  (every layer but the first) reads dZ (B x O), W (I x O) and A (B x I, the
//                   ReLU's mask); writes dA (B x I)
//   update          reads the parameters and the gradient (P each); writes the parameters (P)
// docs/workloads.md has the table. The same count for every path (a mixed-precision path reads
// 2-byte copies of some operands and writes casts the model does not count).
double mlp_step_bytes(const MlpSpec& spec, int batch);

}  // namespace gpubench
