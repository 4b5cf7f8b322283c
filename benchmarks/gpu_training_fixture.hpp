#pragma once
// The one fixture of every training workload's GPU rows: it runs any GPU trainer
// (kernels/common/gpu_training_core.hpp) and times it the same way, so a workload's fixture file
// only says what it trains and how it checks it (a GpuTrainingRow).
//
// <workload>/gpu/eager/.../readback:R[/input:pageable|pinned]/manual_time
//   one launch per operation from the host, like a framework's eager mode.
// <workload>/gpu/graph/.../readback:R[/input:pinned]/manual_time
//   the same steps captured once in CUDA graphs of graph_steps steps (every step of the
//   iteration, up to kGraphSteps; with readbacks, the readback interval) and replayed.
// <workload>/gpu/<eager|graph>/.../readback:0/precision:bf16|fp16/manual_time
//   mixed precision: 2-byte products on the tensor cores with fp32 accumulation and fp32 master
//   weights; fp16 with dynamic loss scaling on the device (counters loss_scale and skipped_steps,
//   after the last timed iteration). fp32 rows keep the names above.
//
// readback:R copies the loss to the host and waits for it after every R-th step (R = 1: every
// step, like printing loss.item(); 0: never). input:pageable|pinned copies the batch from host
// memory before every step, like a data loader; without it the batch is uploaded once, before
// timing.
//
// One timed iteration trains the row's steps from the initial weights, restored before the
// iteration outside the clock. The iteration time is t_wall, the host clock around the
// synchronised iteration (harness/host_clock_timer.hpp): what the user waits for, launch and
// synchronisation costs included. Its parts (benchmarks/gpu_training_phases.hpp,
// docs/timing-method.md, "The overhead model"): t_compute = steps x the event time of one step
// when a graph of steps runs back to back, ordered as the variant orders them; t_h2d = input
// copies x the event time of one; t_d2h = readbacks x the event time of one 4-byte copy;
// t_overhead the rest. Validation before timing (the first steps against the CPU, which also warms
// up cuBLAS and loads the kernels) and after it (the losses read back, the final loss) is the
// workload's. A row that cannot fit its trainer's memory model into the device's free memory is
// skipped, saying so, before anything is allocated.
//
// Device memory: device_bytes_model is the workload's model of its trainer's buffers, computed
// from the shapes before the trainer allocates; device_bytes_peak is measured from before the
// trainer exists to the end of the timed loop (harness/device_memory.hpp), so it includes cuBLAS's
// handle, the graphs of graph rows and their upload. The copy and readback calibrations allocate
// and free their buffers between samples and are not seen.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/result_row.hpp"
#include "kernels/common/gpu_training_core.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench {

// How one GPU training row runs its trainer.
struct GpuTrainingMode {
  cuda::TrainingExecution execution = cuda::TrainingExecution::eager;
  int readback = 0;  // read the loss back after every readback-th step; 0: never
  cuda::TrainingInput input = cuda::TrainingInput::resident;
  TrainingPrecision precision = TrainingPrecision::fp32;
};

// What a row trains and how its workload checks it; run_gpu_training_row() times it.
struct GpuTrainingRow {
  GpuTrainingMode mode;
  int steps = 0;                // SGD steps of one timed iteration
  int compute_probe_steps = 0;  // steps of the graph that measures t_compute, at most
  std::size_t model_bytes = 0;  // the trainer's device bytes by the workload's memory model
  double flop = 0;              // of one iteration
  double bytes = 0;             // of one iteration, by the workload's minimum-traffic model
  TrainingResult::StepCounters step_counters = TrainingResult::StepCounters::none;
  // After the timed loop, outside it: CUDA events around every operation of this many eager
  // steps (t_op:<operation>), for a trainer whose step names its operations; 0: no profile.
  int profile_steps = 0;
  // With a profile: the work per step of each operation (flop_op:, bytes_op:), by the workload's
  // model of its trainer's operations; written for the operations the profile timed.
  std::map<std::string, ResultRow::OperationWork> operation_work;
  // Builds the trainer (it allocates its buffers and uploads the batch).
  std::function<std::unique_ptr<cuda::GpuTrainer>()> make_trainer;
  // Before timing: SkipWithError and false unless the first steps' losses match the CPU's.
  std::function<bool(benchmark::State&, cuda::GpuTrainer&)> check_first_steps;
  // After timing: SkipWithError and false unless the losses read back during the last iteration
  // and its final loss are right.
  std::function<bool(benchmark::State&, const std::vector<float>& losses, float final_loss)>
      check_run;
  // The test accuracy of the trained parameters, where the data have a test split.
  std::function<std::optional<double>(const std::vector<float>& parameters)> test_accuracy;
  // The workload's own counters, if any, added after the common ones.
  std::function<void(ResultRow&)> add_counters;
};

void run_gpu_training_row(benchmark::State& state, const RowId& id, const GpuTrainingRow& row);

// The GPU rows of one case of a training workload, in the order every workload registers them.
struct GpuTrainingVariants {
  std::vector<int> readbacks;    // fp32 eager and graph rows, resident batch, at each interval
  bool mixed_precision = false;  // bf16 and fp16 eager and graph rows, readback 0
  bool input_transfer = false;   // pageable and pinned eager rows and a pinned graph row, fp32
};

// Registers `variants` of one case: `row_id(variant, readback)` names a row ("eager" or "graph");
// `plan(mode)` builds what it trains when it runs (not before: loading data costs time).
void register_gpu_training_rows(
    const GpuTrainingVariants& variants,
    const std::function<RowId(const char* variant, int readback)>& row_id,
    const std::function<GpuTrainingRow(const GpuTrainingMode& mode)>& plan);

}  // namespace gpubench
