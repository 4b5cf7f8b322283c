#pragma once
// The MLP training workload's declaration and what its rows share: its cases
// (benchmarks/mlp_cases.cpp), its registration functions (benchmarks/mlp_cpu.cpp, mlp_gpu.cpp,
// mlp_largest_batch.cpp), and what every MLP row (CPU and GPU) builds from its case: the data, the
// network with its seeded initial weights, and the row's identity.

#include <string>
#include <vector>

#include "benchmarks/largest_batch.hpp"
#include "benchmarks/sweep.hpp"
#include "benchmarks/training_workload.hpp"
#include "harness/dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {

// One tiny-MLP training case (names: mlp/<cpu|gpu>/<variant>/data:D/batch:B/hidden:H/...).
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

// The cases of the default or the full sweep: Iris, digits and a synthetic grid.
std::vector<MlpCase> make_mlp_cases(bool full);

// The workload's declaration (benchmarks/training_workload.hpp) and the functions it names.
const TrainingWorkload& mlp_training_workload();
void register_mlp_cpu(const Sweep& sweep);
#if GPUBENCH_HAS_CUDA
void register_mlp_gpu(const Sweep& sweep);
std::vector<LargestBatchRow> mlp_largest_batch_rows(const Sweep& sweep);
#endif

struct MlpWorkload {
  TabularData data;
  MlpSpec spec;
  std::vector<float> initial;  // initial_parameters(spec)
};

// Loads the case's data and builds its network for `epochs` SGD steps (validated; throws naming
// the problem).
MlpWorkload make_mlp_workload(const MlpCase& mlp_case, int epochs);

// The `hidden:H` name parameter of `hidden` layers ("hidden:HxL" for L layers of width H), also
// written as the counter `hidden` (the first layer's width).
NameParameter hidden_parameter(const std::vector<int>& hidden);

// mlp/<backend>/<variant>/data:D/batch:B/hidden:H[xL]/readback:R
RowId mlp_row_id(const char* backend, const char* variant, const MlpCase& mlp_case, int readback);

}  // namespace gpubench
