#pragma once
// Grid-stride loops of 256-thread blocks, the shape of the element-wise kernels: a grid for
// `count` elements and each thread's first index and stride. Device code (include from .cu files).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace gpubench::cuda {

inline constexpr int kGridStrideThreads = 256;

// Blocks for `count` elements, at least 1 and at most 2^20: the loops stride over the rest, and a
// million blocks already fill any GPU.
inline unsigned grid_stride_blocks(std::size_t count) {
  const std::size_t blocks = (count + kGridStrideThreads - 1) / kGridStrideThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, std::size_t{1} << 20));
}

__device__ inline std::size_t grid_first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

}  // namespace gpubench::cuda
