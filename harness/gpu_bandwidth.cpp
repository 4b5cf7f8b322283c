#include "harness/gpu_bandwidth.hpp"

#include <sstream>
#include <string>

#include "harness/nvml.hpp"

namespace gpubench {

GpuBandwidthReading theoretical_gpu_bandwidth(const GpuInfo& gpu) {
  std::string nvml_why;
  if (const NvmlDevice* nvml = nvml_device()) {
    if (const auto memory = nvml->memory_bus(&nvml_why)) {
      std::ostringstream source;
      source << "theoretical: NVML, 2 (double data rate) x max memory clock "
             << memory->max_clock_hz / 1e6 << " MHz x " << memory->bus_width_bits << "-bit bus / 8";
      return {2.0 * memory->max_clock_hz * memory->bus_width_bits / 8.0, source.str()};
    }
  } else {
    nvml_why = nvml_unavailable_reason();
  }
  if (gpu.memory_bandwidth_bytes_per_s > 0) {
    std::ostringstream source;
    source << "theoretical: CUDA device attributes, 2 (double data rate) x memory clock "
           << gpu.memory_clock_khz / 1e3 << " MHz x " << gpu.memory_bus_width_bits
           << "-bit bus / 8 (NVML: " << nvml_why << ")";
    return {gpu.memory_bandwidth_bytes_per_s, source.str()};
  }
  return {0, "unavailable: NVML: " + nvml_why +
                 "; the CUDA device attributes give no memory clock or bus width"};
}

}  // namespace gpubench
