#pragma once
// The hand-written small-matrix MLP path: the same network, loss and SGD step as MlpBlasTrainer,
// without a BLAS call. For Iris (4-10-3, 120 rows) one OpenBLAS call costs more than its ~5000
// multiply-adds; here the whole step is a handful of loops over 8-float vectors (GCC/Clang vector
// types, no intrinsics): 1.2-1.3 us per Iris epoch against 6.5 for the OpenBLAS path on the 2-core
// CI machine.
//
// How it stays fast (mlp_small.cpp is compiled with -O3 -march=x86-64-v3, i.e. AVX2 + FMA):
// - Feature-major storage: every activation is width x stride with the batch along the row, so each
//   inner loop runs over 8 consecutive samples (one AVX2 register) with no gather and no tail;
//   stride = batch rounded up to 8, and padding lanes carry zero gradient.
// - Four independent accumulators in every inner loop, so FMA latency is hidden.
// - The batch is transposed into that layout once (set_batch), the counterpart of the GPU upload;
//   a step then allocates nothing and touches only the workspace.
// - Forward, loss and backward of a layer are fused: the output layer's dZ is written by the loss
//   loop, each layer's weight gradient is applied as soon as it is complete (after the gradient
//   for the layer below has been computed from the old weights), so no gradient vector is stored.
// - exp and log are branch-free polynomial versions (Cephes expf/logf, relative error ~1e-7) that
//   vectorise; libm's scalar calls would cost as much as the rest of the Iris step.

#include <vector>

#include "kernels/mlp/mlp_cpu.hpp"

namespace gpubench::cpu {

// True when this CPU has AVX2 and FMA, which mlp_small.cpp is compiled for. Defined in mlp.cpp
// (built for the baseline ISA) so that it can run on any x86-64 CPU; call it before constructing
// an MlpSmallTrainer.
bool small_path_supported();

class MlpSmallTrainer {
 public:
  static constexpr int kLanes = 8;  // floats per AVX2 register

  MlpSmallTrainer(const MlpSpec& spec, int batch);

  // Copies `batch` rows (row-major, batch x inputs) and their labels into the workspace,
  // transposed to feature-major.
  void set_batch(const float* inputs, const int* labels);

  // One SGD step on the stored batch; returns the mean loss before the update.
  float step(float* parameters);

  // Mean loss and full gradient (parameter layout of mlp.hpp), no update.
  float loss_and_gradient(const float* parameters, float* gradient);

  int batch() const { return batch_; }
  int stride() const { return stride_; }

 private:
  // With gradient == nullptr: updates `parameters` in place. Otherwise writes the gradient and
  // leaves `parameters` unchanged.
  float run(float* parameters, float* gradient);

  MlpSpec spec_;
  int batch_;
  int stride_;                                   // batch rounded up to kLanes
  std::vector<float> inputs_;                    // inputs x stride
  std::vector<int> labels_;                      // stride (padding lanes: class 0)
  std::vector<float> lane_weight_;               // 1 / batch on real lanes, 0 on padding lanes
  std::vector<float> ones_;                      // stride x 1: the bias's "input" row
  std::vector<std::vector<float>> activations_;  // each hidden layer: width x stride
  std::vector<float> logits_;                    // classes x stride, becomes dZ of the last layer
  std::vector<float> delta_;                     // dZ of a hidden layer: widest hidden x stride
  std::vector<float> delta_below_;
};

}  // namespace gpubench::cpu
