#pragma once
// The memory roof of the GPU, beside its FLOP peaks (harness/gpu_info.hpp): measured, a STREAM-like
// triad over doubles in device memory (kernels/common/stream_triad.hpp) timed with CUDA events, and
// theoretical, from the driver's memory clock and bus width. Both count bytes as the CPU's triad
// does (harness/cpu_bandwidth.hpp): 24 per element, 2 reads + 1 write.

#include <string>

#include "harness/gpu_info.hpp"

namespace gpubench {

// A bandwidth and the words that say where it comes from; 0 and "not measured: <why>" (or
// "unavailable: <why>") where there is none.
struct GpuBandwidthReading {
  double bytes_per_s = 0;
  std::string source;
};

// The triad over 3 arrays of 4 x the device's L2 each (at least 64 MiB, at most an eighth of the
// free memory), the fastest of 10 launches after one untimed one, each between two events on a
// stream of its own; the result checked on a sample of elements. A few milliseconds on an H100
// besides the allocation. Built without CUDA: not measured.
GpuBandwidthReading measure_gpu_bandwidth(const GpuInfo& gpu);

// 2 (double data rate) x the maximum memory clock x the bus width / 8: NVML's
// (nvmlDeviceGetMaxClockInfo for the memory clock, nvmlDeviceGetMemoryBusWidth) where NVML gives
// both, else the CUDA device attributes' (GpuInfo::memory_bandwidth_bytes_per_s) where they are
// non-zero; labelled theoretical in its source.
GpuBandwidthReading theoretical_gpu_bandwidth(const GpuInfo& gpu);

}  // namespace gpubench
