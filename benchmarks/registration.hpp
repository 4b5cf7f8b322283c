#pragma once
// Each benchmark file registers its benchmarks for a sweep. GPU families are registered only when
// a device is visible, so a CPU-only run has no GPU rows at all. The training workloads register
// their rows through their declarations (benchmarks/training_workload.hpp).

#include "benchmarks/sweep.hpp"

namespace gpubench {

void register_matmul_cpu(const Sweep& sweep);
#if GPUBENCH_HAS_CUDA
void register_matmul_gpu(const Sweep& sweep);
void register_overhead_probes(const Sweep& sweep);
void register_alloc_probes(const Sweep& sweep);
// Every training workload's largest-batch rows (benchmarks/largest_batch.cpp).
void register_largest_batch(const Sweep& sweep);
#endif

}  // namespace gpubench
