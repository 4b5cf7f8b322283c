#include "harness/device_memory.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#if GPUBENCH_HAS_CUDA
#include <cuda_runtime.h>

#include "kernels/common/cuda_check.hpp"
#endif

namespace gpubench {

DeviceMemoryInfo read_device_memory() {
#if GPUBENCH_HAS_CUDA
  DeviceMemoryInfo info;
  GPUBENCH_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
#else
  throw std::runtime_error("no device memory to read: this build of gpubench has no CUDA support");
#endif
}

DeviceMemoryMeter::DeviceMemoryMeter(Reader reader)
    : reader_(std::move(reader)), baseline_(reader_()), lowest_free_(baseline_.free_bytes) {}

void DeviceMemoryMeter::sample() {
  lowest_free_ = std::min(lowest_free_, reader_().free_bytes);
  ++samples_;
}

std::size_t usable_device_bytes(std::size_t free_bytes) {
  const auto fraction =
      static_cast<std::size_t>(kDeviceMemoryMarginFraction * static_cast<double>(free_bytes));
  const std::size_t margin = fraction + kDeviceMemoryMarginBytes;
  return free_bytes > margin ? free_bytes - margin : 0;
}

int largest_fitting_batch(const BytesAtBatch& bytes_at_batch, std::size_t budget_bytes,
                          int max_batch) {
  if (max_batch < 1) {
    throw std::invalid_argument(
        "largest_fitting_batch: the largest batch to try must be >= 1, not " +
        std::to_string(max_batch));
  }
  // 64-bit batches, so doubling towards INT_MAX never overflows.
  const auto fits = [&](long long batch) {
    return bytes_at_batch(static_cast<int>(batch)) <= budget_bytes;
  };
  if (!fits(1)) return 0;
  long long fitting = 1;  // known to fit
  long long too_large =
      static_cast<long long>(max_batch) + 1;  // known not to fit, or past the range
  for (long long batch = 2; batch <= max_batch; batch *= 2) {
    if (!fits(batch)) {
      too_large = batch;
      break;
    }
    fitting = batch;
  }
  while (too_large - fitting > 1) {
    const long long middle = fitting + (too_large - fitting) / 2;
    if (fits(middle)) {
      fitting = middle;
    } else {
      too_large = middle;
    }
  }
  return static_cast<int>(fitting);
}

}  // namespace gpubench
