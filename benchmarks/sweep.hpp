#pragma once
// What the default and the full sweep measure. The default run of `bench` must stay within three
// minutes on a 2-core machine without a GPU and five on an H100 (measured: 27.5 s on the 2-core
// machine; about 3 min on an H100 before the CNN and allocation rows, which have not run there);
// the full sweep (`--full`, or GPUBENCH_FULL=1) adds the large sizes.

#include <cstddef>
#include <string>
#include <vector>

namespace gpubench {

struct MatmulShape {
  int m = 0;
  int n = 0;
  int k = 0;
  std::string family;  // "square", "mlp_layer" (m = batch, n = k = width) or "deepbench"
};

// One tiny-MLP training workload (names: mlp/<cpu|gpu>/<variant>/data:D/batch:B/hidden:H/...).
struct MlpCase {
  std::string data;         // "iris", "digits" or "synthetic" (harness/dataset.hpp)
  int batch = 0;            // rows per SGD step
  std::vector<int> hidden;  // width of each hidden layer (one or two)
  int epochs = 0;           // SGD steps in one timed GPU iteration
  int cpu_epochs = 0;       // the same on the CPU (fewer for the largest shapes); 0: no CPU run
  bool small_path = false;  // also the hand-written CPU path (where it beats OpenBLAS)
  bool cpu_bf16 = false;    // also the bf16 mixed-precision OpenBLAS path (precision:bf16)
  bool fused = false;       // also the fused GPU kernel (it skips itself when it does not fit)
  bool gpu_mixed_precision = false;      // also bf16 and fp16 eager and graph rows (precision:P)
  std::vector<int> gpu_readbacks = {0};  // loss read back every 1 / 200 steps, or 0 = never
  bool input_transfer = false;  // also the variants that copy the batch from host every step
  bool cpu_scaling = false;     // the OpenBLAS fp32 row at every count of cpu_scaling_threads
};

// One CNN training workload (names: cnn/<cpu|gpu>/<variant>/data:D/batch:B/readback:R/...).
struct CnnCase {
  std::string data;                      // "cifar10" (GPUBENCH_CIFAR10_DIR) or "synthetic"
  int batch = 0;                         // images per SGD step
  int steps = 0;                         // SGD steps in one timed GPU iteration; 0: no GPU run
  int cpu_steps = 0;                     // the same on the CPU (fewer at large batches); 0: none
  std::vector<int> gpu_readbacks = {0};  // loss read back every step (1) or never (0)
  bool input_transfer = false;       // also the variants that copy the batch from host every step
  bool gpu_mixed_precision = false;  // also bf16 and fp16 eager and graph rows (precision:P)
  bool cpu_scaling = false;          // the CPU row at every count of cpu_scaling_threads
};

// One largest-batch row (names: memory/gpu/largest_batch/net:N/data:D/precision:P/...):
// benchmarks/largest_batch.cpp runs the net's trainer near the largest batch that fits.
struct LargestBatchCase {
  std::string net;          // "cnn" or "mlp"
  std::string data;         // the net's data set, as its training rows name it
  std::string precision;    // "fp32", "bf16" (MLP)
  std::vector<int> hidden;  // MLP: width of each hidden layer (name: hidden:HxL); CNN: empty
};

struct Sweep {
  bool full = false;
  std::vector<MatmulShape> cpu_shapes;
  std::vector<MatmulShape> cpu_fp64_shapes;
  std::vector<MatmulShape> gpu_shapes;        // kernel-only, every precision
  std::vector<MatmulShape> gpu_layer_shapes;  // kernel-only, fp32 and bf16: MLP layers, DeepBench
  std::vector<MatmulShape> gpu_e2e_shapes;    // end-to-end, fp32 and bf16, pinned and pageable
  std::vector<int> cpu_threads;               // 1 and all cores
  // The full sweep's scaling rows: 1, 2, 4, ... and all cores, for the cases marked cpu_scaling
  // (Iris, synthetic 4096 x 512, the CNN at batch 64); the default sweep marks none.
  std::vector<int> cpu_scaling_threads;
  std::vector<std::size_t> transfer_bytes;  // 4 B .. 1 GiB
  std::vector<std::size_t> alloc_bytes;     // allocation probes: 4 KiB .. 1 GiB
  std::vector<int> launch_counts;           // kernels per burst / nodes per graph
  std::vector<MlpCase> mlp_cases;           // tiny-MLP training: iris, digits, synthetic grid
  std::vector<CnnCase> cnn_cases;           // the CIFAR-10 tutorial CNN across batch sizes
  std::vector<LargestBatchCase> largest_batch_cases;  // one per net: default and full sweep
};

Sweep make_sweep(bool full);

// Removes `--full` from argv if present; true if it was there or GPUBENCH_FULL is set to 1.
bool take_full_sweep_flag(int* argc, char** argv);

}  // namespace gpubench
