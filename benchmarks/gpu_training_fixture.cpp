#include "benchmarks/gpu_training_fixture.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "harness/device_memory.hpp"
#include "harness/event_operation_profiler.hpp"
#include "harness/gpu_info.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/host_buffer.hpp"

namespace gpubench {

namespace {

using cuda::TrainingExecution;
using cuda::TrainingInput;

// Operations a profiled eager step names at most: room to spare for a network of a few dozen
// operations.
constexpr std::size_t kMaxOperationsPerStep = 64;

// t_op:<operation> of `steps` eager steps from the initial weights, each operation between two
// CUDA events. Leaves the trainer prepared for them.
OperationTimes profile_operations(cuda::GpuTrainer& trainer, int steps) {
  trainer.enqueue_reset();
  EventOperationProfiler profiler(trainer.stream(), steps * kMaxOperationsPerStep);
  trainer.set_observer(&profiler);
  trainer.prepare(cuda::TrainingRunConfig{}, steps);  // eager, resident batch, no readbacks
  trainer.run(steps, nullptr);
  trainer.set_observer(nullptr);
  GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(trainer.stream()));
  return profiler.per_step(steps);
}

void run_planned_row(benchmark::State& state, const RowId& id,
                     const std::function<GpuTrainingRow(const GpuTrainingMode&)>& plan,
                     GpuTrainingMode mode) {
  run_gpu_training_row(state, id, plan(mode));
}

}  // namespace

void run_gpu_training_row(benchmark::State& state, const RowId& id, const GpuTrainingRow& row) {
  const GpuInfo& gpu = require_gpu();
  const GpuTrainingMode& mode = row.mode;
  if (!fits_on_device(state, row.model_bytes)) return;
  DeviceMemoryMeter meter;  // before the trainer allocates anything
  const std::unique_ptr<cuda::GpuTrainer> trainer = row.make_trainer();
  const cudaStream_t stream = trainer->stream();
  if (!row.check_first_steps(state, *trainer)) return;

  trainer->enqueue_reset();
  TrainingStepParts parts;
  const int probe_steps = std::min(row.steps, row.compute_probe_steps);
  parts.compute_per_step_s = compute_seconds_per_step(
      trainer->capture_compute_graph(probe_steps, mode.execution), probe_steps, stream);
  trainer->enqueue_reset();
  // One copy of each kind the iteration makes, timed on its own.
  if (mode.input != TrainingInput::resident) {
    parts.h2d_per_step_s = input_copy_seconds(
        mode.input == TrainingInput::pinned ? HostMemory::pinned : HostMemory::pageable,
        trainer->batch_input_bytes(), trainer->batch_label_bytes(), stream);
  }
  if (mode.readback > 0) parts.d2h_per_readback_s = loss_readback_seconds(stream);

  cuda::TrainingRunConfig config;
  config.execution = mode.execution;
  config.readback_every = mode.readback;
  config.input = mode.input;
  config.graph_steps = kGraphSteps;
  trainer->prepare(config, row.steps);  // graphs are captured and uploaded here

  std::vector<float> losses;
  const double wall_s = time_training_runs(state, *trainer, row.steps, &losses, &meter);
  const float final_loss = trainer->last_loss();
  if (!row.check_run(state, losses, final_loss)) return;
  // Read before a profiling run prepares the trainer for eager, resident steps and resets it.
  const std::vector<float> parameters = trainer->parameters();
  const std::optional<LossScaleState> loss_scale = trainer->loss_scale_state();
  const double bytes_h2d = static_cast<double>(row.steps) * trainer->input_bytes_per_step();
  const int graph_steps = trainer->graph_steps();
  OperationTimes operation_times;
  if (row.profile_steps > 0) operation_times = profile_operations(*trainer, row.profile_steps);

  // The readbacks the iteration made: one after every readback-th step.
  const double readbacks = mode.readback > 0 ? row.steps / mode.readback : 0;
  TrainingResult result;
  result.step_counters = row.step_counters;
  result.steps = row.steps;
  result.batch = trainer->batch();
  result.seconds_per_iteration = wall_s;
  result.kernels_per_step = trainer->launches_per_step();
  result.readbacks = readbacks;
  result.bytes_h2d = bytes_h2d;
  result.final_loss = final_loss;
  result.test_accuracy = row.test_accuracy(parameters);
  result.loss_scaling = loss_scale;
  ResultRow result_row(state, id);
  result_row.phases(parts.phases(row.steps, readbacks, wall_s))
      .set(Counter::device_bytes, static_cast<double>(trainer->device_bytes()))
      .device_memory(row.model_bytes, meter.peak_bytes())
      .work(row.flop, row.bytes, wall_s,
            gpu_peak_flops(gpu, training_precision_name(mode.precision)))
      .training(result);
  if (row.profile_steps > 0) {
    result_row.operation_times(operation_times).operation_work(row.operation_work, operation_times);
  }
  if (row.add_counters) row.add_counters(result_row);
  if (mode.execution == TrainingExecution::graph) {
    result_row.set(Counter::graph_steps, graph_steps);
  }
  if (mode.input == TrainingInput::resident) result_row.label(LabelKey::input, "resident");
  result_row.publish();
}

void register_gpu_training_rows(
    const GpuTrainingVariants& variants,
    const std::function<RowId(const char* variant, int readback)>& row_id,
    const std::function<GpuTrainingRow(const GpuTrainingMode& mode)>& plan) {
  constexpr IterationTime kManual = IterationTime::manual;
  const auto variant_name = [](TrainingExecution execution) {
    return execution == TrainingExecution::eager ? "eager" : "graph";
  };
  for (int readback : variants.readbacks) {
    for (TrainingExecution execution : {TrainingExecution::eager, TrainingExecution::graph}) {
      register_row(row_id(variant_name(execution), readback), kManual, run_planned_row, plan,
                   GpuTrainingMode{execution, readback});
    }
  }
  if (variants.mixed_precision) {
    // fp32 rows keep their names; the precision goes last on the others.
    for (TrainingPrecision precision : {TrainingPrecision::bf16, TrainingPrecision::fp16}) {
      for (TrainingExecution execution : {TrainingExecution::eager, TrainingExecution::graph}) {
        const RowId id = row_id(variant_name(execution), 0)
                             .with(text_parameter("precision", training_precision_name(precision),
                                                  LabelKey::precision));
        register_row(id, kManual, run_planned_row, plan,
                     GpuTrainingMode{execution, 0, TrainingInput::resident, precision});
      }
    }
  }
  if (!variants.input_transfer) return;
  const auto input_row = [&](TrainingExecution execution, TrainingInput input) {
    const RowId id =
        row_id(variant_name(execution), 0)
            .with(text_parameter("input", cuda::training_input_name(input), LabelKey::input));
    register_row(id, kManual, run_planned_row, plan, GpuTrainingMode{execution, 0, input});
  };
  input_row(TrainingExecution::eager, TrainingInput::pageable);
  input_row(TrainingExecution::eager, TrainingInput::pinned);
  // A graph cannot capture a copy from pageable memory: pinned only.
  input_row(TrainingExecution::graph, TrainingInput::pinned);
}

}  // namespace gpubench
