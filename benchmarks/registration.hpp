#pragma once
// Each benchmark file registers its benchmarks for a sweep. GPU families are registered only when
// a device is visible, so a CPU-only run has no GPU rows at all.

#include "benchmarks/sweep.hpp"

namespace gpubench {

void register_matmul_cpu(const Sweep& sweep);
#if GPUBENCH_HAS_CUDA
void register_matmul_gpu(const Sweep& sweep);
void register_overhead_probes(const Sweep& sweep);
void register_alloc_probes(const Sweep& sweep);
#endif
void register_mlp_cpu(const Sweep& sweep);
void register_cnn_cpu(const Sweep& sweep);
#if GPUBENCH_HAS_CUDA
void register_mlp_gpu(const Sweep& sweep);
void register_cnn_gpu(const Sweep& sweep);
void register_largest_batch(const Sweep& sweep);
#endif

}  // namespace gpubench
