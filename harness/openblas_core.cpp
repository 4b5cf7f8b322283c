#include "harness/openblas_core.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cpu/gemm.hpp"

namespace gpubench {

namespace {
std::set<std::string> cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word) flags.insert(word);
    break;
  }
  return flags;
}
}  // namespace

std::optional<std::string> better_openblas_coretype() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  // Kernel sets that already use AVX2 or better (OpenBLAS's names, as openblas_get_corename()
  // reports them; Zen uses the Haswell kernels).
  static const std::set<std::string> modern = {"Haswell", "SkylakeX", "Cooperlake",
                                               "SapphireRapids", "Zen"};
  const std::string core = cpu::blas_core_name();
  if (modern.count(core) != 0) return std::nullopt;
  const std::set<std::string> flags = cpu_flags();
  const auto has = [&](const char* flag) { return flags.count(flag) != 0; };
  if (has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl")) return "SkylakeX";
  if (has("avx2") && has("fma")) return "Haswell";
  return std::nullopt;
}

}  // namespace gpubench
