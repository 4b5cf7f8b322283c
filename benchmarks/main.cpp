// The `bench` binary: Google Benchmark's main with every --benchmark_* flag, plus
//   --full            the full sweep (also GPUBENCH_FULL=1)
//   --schema          print the output contract (counter keys, units, directions, label keys) as
//                     JSON and exit (harness/schema.hpp)
//   --list-all        list every benchmark name of the sweep, GPU families included even without
//                     a GPU, and exit (the name contract's test uses it)
// and a default --benchmark_min_time of 0.05 s per benchmark unless one is given, which keeps the
// default sweep inside its time budget. GPU benchmarks are registered only when a device is
// visible; otherwise one line on stderr says why they were skipped and the CPU benchmarks run.

#include <benchmark/benchmark.h>

#include <regex.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "benchmarks/progress_reporter.hpp"
#include "benchmarks/registration.hpp"
#include "benchmarks/sweep.hpp"
#include "harness/context.hpp"
#include "harness/gpu_info.hpp"
#include "harness/openblas_core.hpp"
#include "harness/result_row.hpp"
#include "harness/schema.hpp"

namespace {

// Removes `flag` from argv if present; true if it was there.
bool take_flag(int* argc, char** argv, const char* flag) {
  for (int index = 1; index < *argc; ++index) {
    if (std::strcmp(argv[index], flag) != 0) continue;
    for (int rest = index; rest + 1 < *argc; ++rest) argv[rest] = argv[rest + 1];
    --*argc;
    return true;
  }
  return false;
}

bool has_flag(int argc, char** argv, const char* prefix) {
  for (int index = 1; index < argc; ++index) {
    if (std::strncmp(argv[index], prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

std::string flag_value(int argc, char** argv, const std::string& prefix) {
  for (int index = 1; index < argc; ++index) {
    const std::string argument = argv[index];
    if (argument.rfind(prefix, 0) == 0) return argument.substr(prefix.size());
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // A mis-detected CPU would make OpenBLAS run SSE3 kernels (harness/openblas_core.hpp). The kernel
  // set is fixed when the library loads, so set OPENBLAS_CORETYPE and restart once.
  if (const auto coretype = gpubench::better_openblas_coretype()) {
    std::cerr << "gpubench: OpenBLAS chose its generic kernels for this CPU; restarting with "
                 "OPENBLAS_CORETYPE="
              << *coretype << " (set OPENBLAS_CORETYPE yourself to choose)\n";
    setenv("OPENBLAS_CORETYPE", coretype->c_str(), 1);
    execv("/proc/self/exe", argv);
    std::cerr << "gpubench: restart failed; measuring with OpenBLAS's own choice\n";
  }
  if (take_flag(&argc, argv, "--schema")) {
    std::cout << gpubench::schema_json() << "\n";
    return 0;
  }
  const bool list_all = take_flag(&argc, argv, "--list-all");
  const bool full = gpubench::take_full_sweep_flag(&argc, argv);

  std::vector<char*> arguments(argv, argv + argc);
  std::string default_min_time = "--benchmark_min_time=0.05";
  if (!has_flag(argc, argv, "--benchmark_min_time")) arguments.push_back(default_min_time.data());
  std::string list_tests = "--benchmark_list_tests=true";
  if (list_all) arguments.push_back(list_tests.data());
  int argument_count = static_cast<int>(arguments.size());
  arguments.push_back(nullptr);

  benchmark::Initialize(&argument_count, arguments.data());
  if (benchmark::ReportUnrecognizedArguments(argument_count, arguments.data())) return 2;

  gpubench::add_custom_context(full ? "full" : "default");
  const gpubench::Sweep sweep = gpubench::make_sweep(full);
  gpubench::register_matmul_cpu(sweep);
  gpubench::register_mlp_cpu(sweep);
  gpubench::register_cnn_cpu(sweep);
  const bool has_gpu = gpubench::gpu_info().has_value();
#if GPUBENCH_HAS_CUDA
  if (has_gpu || list_all) {
    gpubench::register_matmul_gpu(sweep);
    gpubench::register_overhead_probes(sweep);
    gpubench::register_alloc_probes(sweep);
    gpubench::register_mlp_gpu(sweep);
    gpubench::register_cnn_gpu(sweep);
    gpubench::register_largest_batch(sweep);
  }
#endif
  if (!has_gpu && !list_all) {
    std::cerr << "gpubench: GPU benchmarks skipped: " << gpubench::gpu_unavailable_reason() << "\n";
  }

  // Long sweeps report progress on stderr (benchmarks/progress_reporter.hpp); a listing does not.
  const std::string filter = flag_value(argc, argv, "--benchmark_filter=");
  std::size_t ran = 0;
  if (list_all || has_flag(argc, argv, "--benchmark_list_tests")) {
    ran = benchmark::RunSpecifiedBenchmarks();
  } else {
    gpubench::ProgressReporter progress(
        gpubench::count_selected(gpubench::registered_names(), filter));
    ran = benchmark::RunSpecifiedBenchmarks(&progress);
  }
  benchmark::Shutdown();
  if (ran == 0) {
    // Google Benchmark compiles the filter as a POSIX extended regular expression.
    regex_t compiled;
    if (regcomp(&compiled, filter.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
      std::cerr << "gpubench: --benchmark_filter='" << filter
                << "' is not a valid regular expression\n";
      return 2;
    }
    regfree(&compiled);
    std::cerr << "gpubench: no benchmark matches --benchmark_filter='" << filter << "'"
              << (has_gpu ? "" : " (GPU benchmarks are not available in this run)")
              << "; list the names with --benchmark_list_tests\n";
    return 2;
  }
  return 0;
}
