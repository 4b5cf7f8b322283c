#pragma once
// The CNN training workload's declaration and what its rows share: its cases
// (benchmarks/cnn_cases.cpp), its registration functions (benchmarks/cnn_cpu.cpp, cnn_gpu.cpp,
// cnn_largest_batch.cpp), and what every CNN row (CPU and GPU) builds from its case: the images,
// the network with its seeded initial weights, the row's identity, and the per-operation
// profile's length.

#include <map>
#include <string>
#include <vector>

#include "benchmarks/largest_batch.hpp"
#include "benchmarks/sweep.hpp"
#include "benchmarks/training_workload.hpp"
#include "harness/image_dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_spec.hpp"

namespace gpubench {

// One CNN training case (names: cnn/<cpu|gpu>/<variant>/data:D/batch:B/readback:R/...).
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

// The image data set of this run's rows: "cifar10" where GPUBENCH_CIFAR10_DIR is set, else
// "synthetic".
std::string cnn_sweep_data();
// The cases of the default or the full sweep: the tutorial's batch 64 and the sizes around it.
std::vector<CnnCase> make_cnn_cases(bool full);

// The workload's declaration (benchmarks/training_workload.hpp) and the functions it names.
const TrainingWorkload& cnn_training_workload();
void register_cnn_cpu(const Sweep& sweep);
#if GPUBENCH_HAS_CUDA
void register_cnn_gpu(const Sweep& sweep);
std::vector<LargestBatchRow> cnn_largest_batch_rows(const Sweep& sweep);
#endif

// Steps the per-operation profile averages over (after the timed loop, outside it).
inline constexpr int kCnnProfileSteps = 3;

struct CnnWorkload {
  ImageData data;  // train: `batch` images, every step trains on them; test: held out
  CnnSpec spec;
  std::vector<float> initial;  // initial_cnn_parameters(spec)
};

// Loads the case's images and builds the network (validated; throws naming the problem).
CnnWorkload make_cnn_workload(const CnnCase& cnn_case);

// flop_op:<operation> and bytes_op:<operation> of one step of `trainer`'s operations
// (cnn_operation_work, kernels/cnn/cnn_spec.hpp), as a row writes them beside its t_op:<operation>.
std::map<std::string, ResultRow::OperationWork> cnn_operation_counters(const CnnSpec& spec,
                                                                       int batch,
                                                                       CnnTrainerKind trainer);

// cnn/<backend>/<variant>/data:D/batch:B/readback:R
RowId cnn_row_id(const char* backend, const char* variant, const CnnCase& cnn_case, int readback);

}  // namespace gpubench
