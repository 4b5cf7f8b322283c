// The `bench` binary: the suite's sweep through the shared runner (benchmarks/runner.hpp says
// what the command line, output and exit codes are). The rows: the GEMMs, every training
// workload's, and on a GPU the probes and the largest-batch rows; then any workload added through
// the public API (include/gpubench/workload.hpp).

#include "benchmarks/registration.hpp"
#include "benchmarks/runner.hpp"
#include "benchmarks/training_workload.hpp"
#include "benchmarks/workload_rows.hpp"

namespace {

void register_suite_rows(const gpubench::Sweep& sweep, bool with_gpu) {
  gpubench::register_matmul_cpu(sweep);
  for (const gpubench::TrainingWorkload* workload : gpubench::training_workloads()) {
    workload->register_cpu_rows(sweep);
  }
#if GPUBENCH_HAS_CUDA
  if (with_gpu) {
    gpubench::register_matmul_gpu(sweep);
    gpubench::register_overhead_probes(sweep);
    gpubench::register_alloc_probes(sweep);
    for (const gpubench::TrainingWorkload* workload : gpubench::training_workloads()) {
      if (workload->register_gpu_rows != nullptr) workload->register_gpu_rows(sweep);
    }
    gpubench::register_largest_batch(sweep);
  }
#endif
  gpubench::register_added_workloads(with_gpu);
}

}  // namespace

int main(int argc, char** argv) {
  return gpubench::run_benchmarks(argc, argv, gpubench::Program::suite, register_suite_rows);
}
