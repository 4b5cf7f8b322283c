#pragma once
// The MLP of mlp_spec.hpp on the CPU through OpenBLAS: the reference every other path is checked
// against.

#include <cstddef>
#include <vector>

#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {
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
