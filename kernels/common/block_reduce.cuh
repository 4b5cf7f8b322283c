#pragma once
// Sums over a warp and over a block, in a fixed order, so the same inputs give the same bits on
// every run: the reductions of the training kernels (the loss, the bias gradients), and of the fused
// kernel that trains a whole run in one launch. Device code (include from .cu files).

#include <cuda_runtime.h>

namespace gpubench::cuda {

inline constexpr int kWarpSize = 32;

// Sum of `value` over the 32 lanes of a full warp, returned to every lane.
__device__ inline float warp_sum(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xFFFFFFFFU, value, offset);
  }
  return value;
}

// Sum of `value` over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in
// thread 0. `scratch` holds 32 floats of shared memory; a caller that reuses it syncs first.
__device__ inline float block_sum(float value, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  value = warp_sum(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = 0.0F;
  if (threadIdx.x == 0) {
    const int warps = static_cast<int>(blockDim.x) / kWarpSize;
    for (int w = 0; w < warps; ++w) total += scratch[w];
  }
  return total;
}

}  // namespace gpubench::cuda
