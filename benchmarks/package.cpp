// The public API's runner (include/gpubench/workload.hpp): bench's command line and output over the
// workloads a program declared, and nothing of the suite's own sweep. Only in libgpubench.

#include "benchmarks/runner.hpp"
#include "benchmarks/workload_rows.hpp"
#include "gpubench/workload.hpp"

namespace gpubench {

int run(int argc, char** argv) {
  return run_benchmarks(argc, argv, Program::declared_workloads,
                        [](const Sweep&, bool with_gpu) { register_added_workloads(with_gpu); });
}

}  // namespace gpubench
