#pragma once
// The whole MLP training loop, every epoch, in ONE kernel launch on ONE thread block, with the
// weights, the batch, the activations and the gradients in shared memory. What is left of the GPU
// cost of a tiny net once launch, synchronisation and memory round trips are gone: the arithmetic
// and two block barriers per epoch.
//
// Per epoch (same network, loss and SGD step as kernels/mlp/mlp_spec.hpp, same parameter layout):
//   phase A, one thread per sample: forward through every layer, softmax cross-entropy, and the
//     backward pass down to each layer's dZ, all into shared memory (feature-major, so consecutive
//     threads touch consecutive banks);
//   barrier;
//   phase B, `lanes_per_parameter` threads per parameter: the parameter's gradient (a dot product
//     over the batch, finished with warp shuffles) and its SGD update in place; warp 0 writes the
//     epoch's mean loss to the device loss history;
//   barrier.
// Phase B never reads the weights and phase A never writes them, so the in-place update is race
// free. The Iris shape (4-10-3) and the small digits shape (64-32-10) are compiled with their
// widths as constants (loops unrolled, offsets folded), and Iris's phase A keeps a whole sample in
// registers (measured on an H100: 1.46 us per Iris epoch, against 2.9 with shared-memory phase A
// and one chain per dot product); any other shape runs the same code with run-time widths. One
// block cannot compete at width: 64-256-10 on 64 digits takes 300 us per epoch, while the graph
// path takes 29.

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// Networks of up to this many layers (hidden layers + 1) run fused.
inline constexpr int kFusedMaxLayers = 4;

struct MlpFusedPlan {
  std::size_t shared_bytes = 0;     // what one block needs
  std::size_t available_bytes = 0;  // the device's opt-in maximum of shared memory per block
  int threads = 0;                  // block size
  int lanes_per_parameter = 0;      // threads that share one parameter's dot product in phase B
  int stride = 0;                   // floats between two features of a sample (batch, made odd)
  bool specialised = false;         // a shape compiled with constant widths
  std::string network;              // "4-10-3"
  int batch = 0;

  bool fits() const { return shared_bytes <= available_bytes; }
  // "does not fit on chip: needs X bytes of shared memory, Y available (network 64-256-10,
  // batch 1437)"
  std::string why_not() const;
};

// The plan for a device whose blocks can opt in to `available_shared_bytes` of shared memory
// (cudaDevAttrMaxSharedMemoryPerBlockOptin; kernels/mlp/mlp_cuda_fused_trainer.hpp asks the current
// device). Throws std::invalid_argument for an invalid network or batch, or more than
// kFusedMaxLayers layers.
MlpFusedPlan plan_mlp_fused(const MlpSpec& spec, int batch, std::size_t available_shared_bytes);

// Lets the kernel for `spec` use plan.shared_bytes of dynamic shared memory (above 48 KB a kernel
// must opt in). Once per plan, before the first launch.
[[nodiscard]] cudaError_t allow_mlp_fused_shared_memory(const MlpSpec& spec,
                                                        const MlpFusedPlan& plan);

// Enqueues the single kernel that trains `epochs` epochs on `stream`, updating `parameters` in
// place (spec's layout) and writing the mean loss of each epoch to loss_history[0..epochs).
// `inputs` is batch x spec.inputs, row-major; `labels` batch class indices. Returns the launch's
// status for the caller to check.
[[nodiscard]] cudaError_t launch_mlp_fused(const MlpSpec& spec, const MlpFusedPlan& plan,
                                           float* parameters, const float* inputs,
                                           const int* labels, float* loss_history, int epochs,
                                           cudaStream_t stream);

}  // namespace gpubench::cuda
