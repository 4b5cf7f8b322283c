#pragma once
// The tiny multi-layer perceptron every MLP path trains, and its CPU reference through OpenBLAS.
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

namespace gpubench {

// Deterministic random numbers from a seed, the same on every platform and compiler (the
// <random> distributions are not specified bit for bit, the engines are, but this is simpler):
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014).
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  // Standard normal (Box-Muller; one of the pair is discarded to keep the state simple).
  double normal();
  // Uniform integer in [0, bound).
  std::uint64_t below(std::uint64_t bound) { return next_u64() % bound; }

 private:
  std::uint64_t state_;
};

struct MlpSpec {
  int inputs = 0;
  std::vector<int> hidden;  // width of each hidden layer, each followed by ReLU
  int classes = 0;
  float learning_rate = 0.01F;
  int epochs = 1;  // SGD steps one training run takes (each step sees the whole batch)
  std::uint64_t seed = 1;

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

namespace cpu {

// Softmax cross-entropy of one row of `classes` logits for true class `label`, computed stably:
// log(sum_j exp(z_j - max)) + max - z_label. Writes softmax(z) into `probabilities` if non-null.
float softmax_cross_entropy(const float* logits, int classes, int label, float* probabilities);

// The OpenBLAS path: layer products with cblas_sgemm, everything else in plain loops. The workspace
// is sized once for `batch` rows, so a step allocates nothing.
class MlpBlasTrainer {
 public:
  MlpBlasTrainer(const MlpSpec& spec, int batch);

  // One SGD step on `batch` rows: forward, loss, backward, parameters -= lr * gradient.
  // Returns the mean loss of the forward pass (before the update).
  float step(float* parameters, const float* inputs, const int* labels);

  // Mean loss and its gradient with respect to every parameter (same layout), no update.
  float loss_and_gradient(const float* parameters, const float* inputs, const int* labels,
                          float* gradient);

  // Mean loss only (forward pass through OpenBLAS): the reference the GPU paths are checked
  // against at sizes where a plain loop would take seconds.
  float loss(const float* parameters, const float* inputs, const int* labels);

  int batch() const { return batch_; }
  const MlpSpec& spec() const { return spec_; }

 private:
  void forward(const float* parameters, const float* inputs);
  float forward_backward(const float* parameters, const float* inputs, const int* labels,
                         float* gradient);

  MlpSpec spec_;
  int batch_;
  std::vector<std::vector<float>> activations_;  // ReLU outputs of each hidden layer, batch x width
  std::vector<float> logits_;                    // batch x classes; becomes dZ of the last layer
  std::vector<float> delta_;                     // dL/dZ of the current layer
  std::vector<float> delta_previous_;            // dL/dZ of the layer below
  std::vector<float> gradient_;                  // parameter-shaped
};

// Mean loss of `rows` rows (forward only, no workspace reuse: for checks and reports, not timing).
float mlp_loss(const MlpSpec& spec, const float* parameters, const float* inputs, const int* labels,
               int rows);
// Fraction of `rows` rows whose largest logit is the label.
double mlp_accuracy(const MlpSpec& spec, const float* parameters, const float* inputs,
                    const int* labels, int rows);

}  // namespace cpu
}  // namespace gpubench
