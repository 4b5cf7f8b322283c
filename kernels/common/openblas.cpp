#include "kernels/common/openblas.hpp"

#include <cblas.h>

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>

namespace gpubench::cpu {

void set_blas_threads(int threads) {
  openblas_set_num_threads(threads);
  if (const int running = openblas_get_num_threads(); running != threads) {
    // The prefix the tools count as a skip (tools/gpubench_tools/benchjson.py, SKIP_PREFIXES): the
    // OpenBLAS build caps the count (MAX_THREADS), so the row cannot run here as asked.
    throw std::runtime_error("not supported on this machine: OpenBLAS runs " +
                             std::to_string(running) + " threads, not the " +
                             std::to_string(threads) + " asked for (" + blas_config() + ")");
  }
}

int blas_threads() { return openblas_get_num_threads(); }

int blas_threads_for_all_cores() {
  const int logical_cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const char* config = openblas_get_config();
  std::smatch match;
  const std::string text = config != nullptr ? config : "";
  // A serial build runs every call on the caller's thread and says so instead of MAX_THREADS.
  if (openblas_get_parallel() == 0 || text.find("SINGLE_THREADED") != std::string::npos) return 1;
  if (std::regex_search(text, match, std::regex(R"(MAX_THREADS=(\d+))"))) {
    return std::clamp(std::stoi(match[1].str()), 1, logical_cpus);
  }
  return logical_cpus;
}

std::string blas_config() {
  const char* config = openblas_get_config();
  return std::string(config != nullptr ? config : "unknown") + " core=" + blas_core_name();
}

std::string blas_core_name() {
  const char* core = openblas_get_corename();
  return core != nullptr ? core : "unknown";
}

}  // namespace gpubench::cpu
