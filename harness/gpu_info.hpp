#pragma once
// What the suite knows about the GPU it measures. Compiled in both builds: without CUDA (or with no
// visible device) query_gpu() returns no device and a reason that says why.

#include <cstdint>
#include <optional>
#include <string>

namespace gpubench {

struct GpuPeakFlops {
  // Dense (non-sparse) theoretical peaks in FLOP/s; 0 where the table has no entry.
  double fp32 = 0;     // CUDA cores (FFMA)
  double tf32 = 0;     // tensor cores
  double fp16 = 0;     // tensor cores, fp32 accumulate
  double bf16 = 0;     // tensor cores, fp32 accumulate
  double fp64 = 0;     // tensor cores where the chip has fp64 tensor cores, else FP64 units
  std::string source;  // where the per-SM numbers come from
};

struct GpuInfo {
  int device = 0;
  std::string name;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
  int sm_clock_khz = 0;      // maximum (boost) SM clock the driver reports
  int memory_clock_khz = 0;  // memory clock, as reported
  int memory_bus_width_bits = 0;
  std::uint64_t total_memory_bytes = 0;
  std::uint64_t l2_cache_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;  // 2 (DDR) x memory clock x bus width / 8
  int driver_version = 0;                   // e.g. 13000 for 13.0
  int runtime_version = 0;
  int cublas_version = 0;  // e.g. 130000 for 13.0.0
  std::string pci_bus_id;
  std::string pcie_link;                  // e.g. "gen5 x16", or "unknown"
  double pcie_bandwidth_bytes_per_s = 0;  // per direction, after line encoding; 0 if unknown
  GpuPeakFlops peak;
};

// The device the benchmarks run on (device 0), or nullopt with the reason in `why_not`.
std::optional<GpuInfo> query_gpu(std::string* why_not);

// Cached: the GPU is queried once per process.
const std::optional<GpuInfo>& gpu_info();
const std::string& gpu_unavailable_reason();

// The error a faulted kernel (an illegal address, a trap, a launch failure) left in the CUDA
// context, as "name (text)", or nullopt when the context still works or there is no GPU. Such an
// error is sticky: cudaDeviceSynchronize reports it, and again after cudaGetLastError, and every
// later CUDA call of the process fails with it. An error that clears (a failed allocation, an
// invalid argument) is not one.
std::optional<std::string> sticky_cuda_error();

// Peak of `precision_name` ("fp32", "tf32", "fp16", "bf16", "fp64") on this GPU, 0 if unknown.
double gpu_peak_flops(const GpuInfo& gpu, const std::string& precision_name);

// The per-SM table behind GpuInfo::peak (see gpu_peak.cpp for the sources).
GpuPeakFlops peak_flops_for(int compute_capability_major, int compute_capability_minor,
                            int multiprocessor_count, int sm_clock_khz);

}  // namespace gpubench
