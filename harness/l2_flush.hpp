#pragma once
// Evicts the GPU's L2 cache by writing a buffer of its size, so a kernel-only measurement starts
// from cold caches (as nvbench does by default) instead of re-reading operands a previous iteration
// left in a 50 MB L2. The write is enqueued before the start event, outside the timed region.

#include <cuda_runtime.h>

#include <cstddef>

#include "harness/cuda_resources.hpp"

namespace gpubench {

class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes) : buffer_(l2_bytes) {}
  void flush(cudaStream_t stream) const {
    if (buffer_.bytes() > 0)
      GPUBENCH_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
  }
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
};

}  // namespace gpubench
