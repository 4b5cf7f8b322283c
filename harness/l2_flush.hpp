#pragma once
// Evicts the GPU's L2 cache by writing a buffer of its size, so a kernel-only measurement starts
// from cold caches (as nvbench does by default) instead of re-reading operands a previous iteration
// left in a 50 MB L2. The write is enqueued before the start event, outside the timed region.
//
// The buffer is at least kMinimumBytes even where the L2 is smaller: kernel-only GEMM rows do not
// wait for the flush (benchmarks/matmul_gpu.cpp), so it must keep the GPU busy for longer than the
// host takes to enqueue the start event, the GEMM and the stop event (a few microseconds; a 32 MiB
// memset takes about 10 us at an H100's 3 TB/s and longer on slower memory). A GPU with a few MB
// of L2 would otherwise finish the flush first and the rows would count launch latency as compute.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

class L2Flusher {
 public:
  static constexpr std::size_t kMinimumBytes = std::size_t{32} << 20;
  // Device memory a flusher for an L2 of `l2_bytes` allocates.
  static std::size_t bytes_for(std::size_t l2_bytes) { return std::max(l2_bytes, kMinimumBytes); }

  explicit L2Flusher(std::size_t l2_bytes) : buffer_(bytes_for(l2_bytes)) {}
  void flush(cudaStream_t stream) const {
    if (buffer_.bytes() > 0)
      GPUBENCH_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
  }
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
};

}  // namespace gpubench
