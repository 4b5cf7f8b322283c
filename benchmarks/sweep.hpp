#pragma once
// What the default and the full sweep measure, beside the training workloads' own cases (each
// workload declares those in its benchmarks/<workload>_cases.cpp, for sweep.full). The default run
// of `bench` must stay within three minutes on a 2-core machine without a GPU and five on an H100
// (measured: 27.5 s on the 2-core machine; about 3 min on an H100 before the image-training and
// allocation rows, which have not run there); the full sweep (`--full`, or GPUBENCH_FULL=1) adds
// the large sizes.

#include <cstddef>
#include <string>
#include <vector>

namespace gpubench {

struct MatmulShape {
  int m = 0;
  int n = 0;
  int k = 0;
  // The label `shape`: a square, a training net's layer (m = batch, n = k = width) or a DeepBench
  // shape (the names are sweep.cpp's).
  std::string family;
};

struct Sweep {
  bool full = false;
  std::vector<MatmulShape> cpu_shapes;
  std::vector<MatmulShape> cpu_fp64_shapes;
  std::vector<MatmulShape> gpu_shapes;        // kernel-only, every precision
  std::vector<MatmulShape> gpu_layer_shapes;  // kernel-only, fp32 and bf16: layers, DeepBench
  std::vector<MatmulShape> gpu_e2e_shapes;    // end-to-end, fp32 and bf16, pinned and pageable
  std::vector<int> cpu_threads;               // 1 and all cores
  // The full sweep's scaling rows: 1, 2, 4, ... and all cores, for the cases a training workload
  // marks for thread scaling (a few per workload); the default sweep marks none.
  std::vector<int> cpu_scaling_threads;
  std::vector<std::size_t> transfer_bytes;  // 4 B .. 1 GiB
  std::vector<std::size_t> alloc_bytes;     // allocation probes: 4 KiB .. 1 GiB
  std::vector<int> launch_counts;           // kernels per burst / nodes per graph
};

Sweep make_sweep(bool full);

// Removes `--full` from argv if present; true if it was there or GPUBENCH_FULL is set to 1.
bool take_full_sweep_flag(int* argc, char** argv);

}  // namespace gpubench
