#pragma once
// A kernel that does nothing, for measuring the fixed cost of a launch.

#include <cuda_runtime.h>

namespace gpubench::cuda {

// Enqueues one empty kernel (1 block of 1 thread) on `stream`; returns the launch error, if any.
cudaError_t launch_empty_kernel(cudaStream_t stream);

}  // namespace gpubench::cuda
