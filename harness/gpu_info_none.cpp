// Built when the project is configured without CUDA.
#include "harness/gpu_info.hpp"

namespace gpubench {

std::optional<GpuInfo> query_gpu(std::string* why_not) {
  if (why_not != nullptr) *why_not = "this build of gpubench has no CUDA support";
  return std::nullopt;
}

std::optional<std::string> sticky_cuda_error() { return std::nullopt; }

}  // namespace gpubench
