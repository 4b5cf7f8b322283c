#include "harness/gpu_bandwidth.hpp"

namespace gpubench {

GpuBandwidthReading measure_gpu_bandwidth(const GpuInfo& /*gpu*/) {
  return {0, "not measured: built without CUDA"};
}

}  // namespace gpubench
