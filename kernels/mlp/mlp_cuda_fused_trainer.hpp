#pragma once
// Owns what the fused MLP kernel (kernels/mlp/mlp_cuda_fused.cuh) trains on: the parameters, the
// batch and the loss history on the device, and the stream it runs on. The kernel itself, its
// shared- memory plan and the reason a net does not fit on chip are in
// kernels/mlp/mlp_cuda_fused.cuh.

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "kernels/common/cuda_resources.hpp"
#include "kernels/mlp/mlp_cuda_fused.cuh"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// plan_mlp_fused() for the current device: its opt-in shared memory per block.
MlpFusedPlan plan_mlp_fused_on_current_device(const MlpSpec& spec, int batch);

class MlpFusedTrainer {
 public:
  // Uploads the batch (batch x spec.inputs, row-major) and the initial parameters. Throws
  // std::runtime_error with MlpFusedPlan::why_not() when the net does not fit on chip.
  MlpFusedTrainer(const MlpSpec& spec, int batch, const float* inputs, const int* labels,
                  const float* initial_parameters);

  // Enqueues a device-to-device copy of the initial parameters.
  void enqueue_reset();
  // Enqueues the single kernel that trains `epochs` epochs (1 <= epochs <= spec.epochs) and writes
  // the mean loss of each to the device loss history.
  void launch(int epochs);

  // Synchronous reads: the first `epochs` losses of the last launch, the parameters.
  std::vector<float> loss_history(int epochs);
  std::vector<float> parameters();

  cudaStream_t stream() const { return stream_.get(); }
  const MlpFusedPlan& plan() const { return plan_; }
  std::size_t device_bytes() const;

 private:
  MlpSpec spec_;
  int batch_;
  MlpFusedPlan plan_;
  Stream stream_;
  DeviceBuffer parameters_;
  DeviceBuffer initial_parameters_;
  DeviceBuffer inputs_;
  DeviceBuffer labels_;
  DeviceBuffer loss_history_;
};

}  // namespace gpubench::cuda
