#pragma once
// The MLP of mlp_spec.hpp on the CPU through OpenBLAS: the reference every other path is checked
// against.

#include <cstddef>
#include <vector>

#include "kernels/common/worker_threads.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {
namespace cpu {

// Softmax cross-entropy of one row of `classes` logits for true class `label`, computed stably:
// log(sum_j exp(z_j - max)) + max - z_label. Writes softmax(z) into `probabilities` if non-null.
float softmax_cross_entropy(const float* logits, int classes, int label, float* probabilities);

// The OpenBLAS path: layer products with cblas_sgemm, everything else in plain loops. The workspace
// is sized once for `batch` rows, so a step allocates nothing.
//
// With `workers` > 1 the batch is split into that many shards of consecutive rows
// (kernels/common/worker_threads.hpp), at most one per row: each worker runs the forward and
// backward pass of its rows, with single-threaded OpenBLAS, into its own gradient buffer (the loss
// gradient is divided by the whole batch, so the shard gradients add up to the batch's); the shard
// gradients are summed in shard order and the parameters updated in one pass, split among the
// workers. The loss is the mean over the whole batch (the shards' sums added in shard order).
// For a given worker count the result is deterministic; against one worker only the order of the
// sums over rows differs (fp32 rounding, tests/test_mlp_cpu.cpp).
class MlpBlasTrainer {
 public:
  MlpBlasTrainer(const MlpSpec& spec, int batch, int workers = 1);

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
  int workers() const { return static_cast<int>(shards_.size()); }
  const MlpSpec& spec() const { return spec_; }

 private:
  // One shard's rows and workspace.
  struct Shard {
    int first_row = 0;
    int rows = 0;
    std::vector<std::vector<float>> activations;  // ReLU outputs of each hidden layer, rows x width
    std::vector<float> logits;                    // rows x classes; becomes dZ of the last layer
    std::vector<float> delta;                     // dL/dZ of the current layer
    std::vector<float> delta_previous;            // dL/dZ of the layer below
    std::vector<float> gradient;  // parameter-shaped; shard 0 writes the caller's buffer instead
    double loss_sum = 0;          // sum of the shard's row losses
  };

  void forward(Shard& shard, const float* parameters, const float* inputs) const;
  void forward_backward(Shard& shard, const float* parameters, const float* inputs,
                        const int* labels, float* gradient) const;
  // The whole batch's loss and gradient (into `gradient`), and, when `parameters_to_update` is
  // non-null, the update.
  float batch_step(const float* parameters, const float* inputs, const int* labels, float* gradient,
                   float* parameters_to_update);

  MlpSpec spec_;
  int batch_;
  std::vector<Shard> shards_;
  std::vector<float> gradient_;                // parameter-shaped, for step()
  std::vector<const float*> other_gradients_;  // shards 1.. gradients, for the reduction
};

// The thread plan of an OpenBLAS MLP row on `threads` cores (kernels/common/worker_threads.hpp,
// plan_cpu_threads), with the constants measured for it (docs/workloads.md).
CpuThreadPlan mlp_cpu_thread_plan(const MlpSpec& spec, int batch, int threads);

// Mean loss of `rows` rows (forward only, no workspace reuse: for checks and reports, not timing).
float mlp_loss(const MlpSpec& spec, const float* parameters, const float* inputs, const int* labels,
               int rows);
// Fraction of `rows` rows whose largest logit is the label.
double mlp_accuracy(const MlpSpec& spec, const float* parameters, const float* inputs,
                    const int* labels, int rows);

}  // namespace cpu
}  // namespace gpubench
