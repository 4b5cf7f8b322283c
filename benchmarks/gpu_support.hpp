#pragma once
// Pieces shared by the GPU benchmark files.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "harness/device_memory.hpp"
#include "harness/gpu_info.hpp"
#include "kernels/common/cuda_check.hpp"

namespace gpubench {

// The device's facts; throws (the row reports it) when there is none, e.g. for a GPU row run from
// a listing made with --list-all on a machine without a GPU.
inline const GpuInfo& require_gpu() {
  const auto& gpu = gpu_info();
  if (!gpu) throw std::runtime_error("no GPU: " + gpu_unavailable_reason());
  return *gpu;
}

// True if `bytes` fit in the device's free memory (5% is left for cuBLAS's workspace and the
// runtime); otherwise reports SkipWithError naming both numbers, and the sweep goes on.
inline bool fits_on_device(benchmark::State& state, std::size_t bytes) {
  const DeviceMemoryInfo memory = read_device_memory();
  if (static_cast<double>(bytes) <= 0.95 * static_cast<double>(memory.free_bytes)) return true;
  const std::string message = "does not fit in device memory: needs " + std::to_string(bytes) +
                              " bytes, " + std::to_string(memory.free_bytes) + " of " +
                              std::to_string(memory.total_bytes) + " bytes free";
  state.SkipWithError(message.c_str());
  return false;
}

}  // namespace gpubench
