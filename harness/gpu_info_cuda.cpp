#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "harness/gpu_info.hpp"
#include "kernels/common/cuda_check.hpp"

namespace gpubench {

namespace {

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  GPUBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

std::string read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (file) std::getline(file, line);
  return line;
}

// The PCIe link as Linux reports it in sysfs ("32.0 GT/s PCIe" and "16"). The driver API has no
// call for it, and NVML is not a build dependency.
void read_pcie_link(GpuInfo* gpu) {
  std::string bus_id = gpu->pci_bus_id;
  for (char& character : bus_id) character = static_cast<char>(std::tolower(character));
  // cudaDeviceGetPCIBusId gives "0000:1b:00.0"; sysfs names the same device that way.
  const std::string folder = "/sys/bus/pci/devices/" + bus_id + "/";
  const std::string speed = read_first_line(folder + "current_link_speed");
  const std::string width = read_first_line(folder + "current_link_width");
  if (speed.empty() || width.empty()) {
    gpu->pcie_link = "unknown (no sysfs entry for " + gpu->pci_bus_id + ")";
    return;
  }
  const double transfers_per_s = std::atof(speed.c_str()) * 1e9;
  const int lanes = std::atoi(width.c_str());
  // Gen1/2 use 8b/10b line coding, gen3 and later 128b/130b (PCI-SIG base specifications).
  const double coding = transfers_per_s <= 5.0e9 ? 8.0 / 10.0 : 128.0 / 130.0;
  // Transfer rate per lane of generations 1..6: 2.5, 5, 8, 16, 32, 64 GT/s.
  int generation = 0;
  const double rates_gt_per_s[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int index = 0; index < 6; ++index) {
    if (std::fabs(transfers_per_s / 1e9 - rates_gt_per_s[index]) < 0.1) generation = index + 1;
  }
  gpu->pcie_bandwidth_bytes_per_s = transfers_per_s * coding * lanes / 8.0;
  gpu->pcie_link =
      "gen" + std::to_string(generation) + " x" + std::to_string(lanes) + " (" + speed + ")";
}

}  // namespace

std::optional<GpuInfo> query_gpu(std::string* why_not) {
  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      if (why_not != nullptr) {
        *why_not = status != cudaSuccess
                       ? std::string("no usable CUDA device: ") + cudaGetErrorName(status) + " (" +
                             cudaGetErrorString(status) + ")"
                       : "no CUDA device is visible";
      }
      return std::nullopt;
    }
    GpuInfo gpu;
    gpu.device = 0;
    cudaDeviceProp properties{};
    GPUBENCH_CUDA_CHECK(cudaGetDeviceProperties(&properties, gpu.device));
    gpu.name = properties.name;
    gpu.compute_capability_major = properties.major;
    gpu.compute_capability_minor = properties.minor;
    gpu.multiprocessor_count = properties.multiProcessorCount;
    gpu.total_memory_bytes = properties.totalGlobalMem;
    gpu.l2_cache_bytes = static_cast<std::uint64_t>(properties.l2CacheSize);
    // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes still report them.
    gpu.sm_clock_khz = device_attribute(cudaDevAttrClockRate, gpu.device);
    gpu.memory_clock_khz = device_attribute(cudaDevAttrMemoryClockRate, gpu.device);
    gpu.memory_bus_width_bits = device_attribute(cudaDevAttrGlobalMemoryBusWidth, gpu.device);
    gpu.memory_bandwidth_bytes_per_s =
        2.0 * gpu.memory_clock_khz * 1e3 * gpu.memory_bus_width_bits / 8.0;
    GPUBENCH_CUDA_CHECK(cudaDriverGetVersion(&gpu.driver_version));
    GPUBENCH_CUDA_CHECK(cudaRuntimeGetVersion(&gpu.runtime_version));
    {
      int major = 0, minor = 0, patch = 0;
      GPUBENCH_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
      GPUBENCH_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
      GPUBENCH_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
      gpu.cublas_version = major * 10000 + minor * 100 + patch;
    }
    char bus_id[32] = {};
    GPUBENCH_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), gpu.device));
    gpu.pci_bus_id = bus_id;
    read_pcie_link(&gpu);
    gpu.peak = peak_flops_for(gpu.compute_capability_major, gpu.compute_capability_minor,
                              gpu.multiprocessor_count, gpu.sm_clock_khz);
    return gpu;
  } catch (const CudaError& error) {
    if (why_not != nullptr) *why_not = error.what();
    return std::nullopt;
  }
}

std::optional<std::string> sticky_cuda_error() {
  if (!gpu_info()) return std::nullopt;
  static_cast<void>(cudaGetLastError());  // an earlier call's error that has cleared
  const cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess) return std::nullopt;
  static_cast<void>(cudaGetLastError());
  if (cudaDeviceSynchronize() == cudaSuccess) return std::nullopt;  // it cleared: not sticky
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

}  // namespace gpubench
