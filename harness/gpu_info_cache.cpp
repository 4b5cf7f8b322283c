// The GPU is queried once per process; every benchmark and the context writer read the cache.
#include "harness/gpu_info.hpp"

namespace gpubench {

namespace {
struct GpuQuery {
  std::optional<GpuInfo> info;
  std::string reason;
};

const GpuQuery& cached_query() {
  static const GpuQuery query = [] {
    GpuQuery result;
    result.info = query_gpu(&result.reason);
    return result;
  }();
  return query;
}
}  // namespace

const std::optional<GpuInfo>& gpu_info() { return cached_query().info; }
const std::string& gpu_unavailable_reason() { return cached_query().reason; }

}  // namespace gpubench
