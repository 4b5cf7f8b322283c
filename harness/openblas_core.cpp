#include "harness/openblas_core.hpp"

#include <cstdlib>
#include <set>
#include <string>

#include "harness/cpu_info.hpp"
#include "kernels/common/openblas.hpp"

namespace gpubench {

std::optional<std::string> better_openblas_coretype() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  // Kernel sets that already use AVX2 or better (OpenBLAS's names, as openblas_get_corename()
  // reports them; Zen uses the Haswell kernels).
  static const std::set<std::string> modern = {"Haswell", "SkylakeX", "Cooperlake",
                                               "SapphireRapids", "Zen"};
  const std::string core = cpu::blas_core_name();
  if (modern.count(core) != 0) return std::nullopt;
  const CpuInfo& cpu = cpu_info();
  if (cpu.has_flag("avx512f") && cpu.has_flag("avx512bw") && cpu.has_flag("avx512dq") &&
      cpu.has_flag("avx512vl")) {
    return "SkylakeX";
  }
  if (cpu.has_avx2 && cpu.has_fma) return "Haswell";
  return std::nullopt;
}

}  // namespace gpubench
