// cnn/gpu/eager/data:D/batch:B/readback:R[/input:pageable|pinned]/manual_time
//   the CIFAR-10 tutorial network trained on the GPU one launch per operation, like a framework's
//   eager mode (kernels/cnn/cnn_cuda_trainer.hpp): im2col/col2im, cuBLAS products, bias, pool,
//   loss and update kernels; kernels_per_step counts them.
// cnn/gpu/graph/data:D/batch:B/readback:R[/input:pinned]/manual_time
//   the same steps captured once in a CUDA graph of graph_steps steps (as every training
//   workload's graph rows: every step of the iteration, up to kGraphSteps) and replayed.
// cnn/gpu/<eager|graph>/data:D/batch:B/readback:0/precision:bf16|fp16/manual_time
//   mixed precision (kernels/cnn/cnn_cuda_trainer.hpp): 2-byte products on the tensor cores with
//   fp32 accumulation and fp32 master weights; fp16 with dynamic loss scaling on the device
//   (counters loss_scale and skipped_steps, after the last timed iteration). fp32 rows keep the
//   names above; the sweep adds these at a few batches (CnnCase::gpu_mixed_precision).
//
// readback:1 copies the loss to the host and waits for it after every step (like loss.item());
// readback:0 never. input:pageable|pinned copies the batch from host memory before every step,
// like a data loader; without it the batch is uploaded once.
//
// One timed iteration trains the case's steps from the initial weights, restored before the
// iteration outside the clock; the iteration time is t_wall, the host clock around the
// synchronised iteration (harness/host_clock_timer.hpp). Its parts, as for every GPU training row
// (benchmarks/gpu_training_phases.hpp):
// t_compute = steps x the event time of one step with nothing in the way; t_h2d = input copies x
// the event time of one; t_d2h = readbacks x the event time of one 4-byte copy; t_overhead the
// rest. Validation: the first step's loss equals the CPU's forward pass; where the CPU can afford
// it, the first steps' losses match the CPU's (mixed precision: every checked step within
// kMixedPrecisionLossTolerance, 2^-5 relative, of the fp32 CPU's). After timing, a profiling run
// records CUDA events around every operation of a few eager steps
// (harness/event_operation_profiler.hpp).
//
// Device memory: device_bytes_model is cnn_gpu_device_bytes(spec, batch, precision)
// (kernels/cnn/cnn_cuda_memory.hpp), computed from the shapes before the trainer allocates;
// device_bytes_peak is measured from before the trainer exists to the end of the timed loop
// (harness/device_memory.hpp), so it includes cuBLAS's handle, the graphs of graph rows and their
// upload. The copy and readback calibrations allocate and free their buffers between samples and
// are not seen.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/cnn_workload.hpp"
#include "benchmarks/gpu_support.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/registration.hpp"
#include "harness/device_memory.hpp"
#include "harness/event_operation_profiler.hpp"
#include "harness/gpu_info.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench {

namespace {

using cuda::CnnExecution;
using cuda::CnnInput;

// Steps in the graph that measures t_compute.
constexpr int kComputeProbeSteps = 20;
// The CPU reference trajectory: at most this many steps, and only while it costs less than
// kReferenceFlop (a few seconds of one core; the check runs on all cores).
constexpr int kReferenceSteps = 5;
constexpr double kReferenceFlop = 1e11;
// The first-step loss against the CPU forward pass (the same sums in another order), and the
// trajectory (each step carries the previous steps' rounding).
constexpr double kFirstLossTolerance = 1e-4;
constexpr double kTrajectoryTolerance = 1e-3;
// Operations a profiled eager step names at most (kernels/cnn/cnn_cpu.hpp lists 25).
constexpr std::size_t kMaxOperationsPerStep = 64;

bool close(double value, double reference, double relative) {
  return std::fabs(value - reference) <= relative * std::fabs(reference) + 1e-6;
}

// SkipWithError and false unless the GPU's first losses match the CPU trainer's.
bool check_against_cpu(benchmark::State& state, const CnnWorkload& workload,
                       const std::vector<float>& gpu_losses, const LossTolerances& tolerances) {
  const ImageSet& train = workload.data.train;
  cpu::set_blas_threads(cpu::blas_threads_for_all_cores());
  cpu::CnnCpuTrainer reference(workload.spec, train.rows);
  std::vector<float> parameters = workload.initial;
  const double step_flop = cnn_step_flop(workload.spec, train.rows);
  const int steps = std::min(static_cast<int>(gpu_losses.size()),
                             std::max(1, static_cast<int>(kReferenceFlop / step_flop)));
  for (int step = 0; step < std::min(steps, kReferenceSteps); ++step) {
    const float expected =
        reference.step(parameters.data(), train.pixels.data(), train.labels.data());
    const double tolerance = step == 0 ? tolerances.first_loss : tolerances.trajectory;
    if (!close(gpu_losses[step], expected, tolerance)) {
      const std::string message = "loss of step " + std::to_string(step + 1) + " is " +
                                  std::to_string(gpu_losses[step]) + ", the CPU's " +
                                  std::to_string(expected);
      state.SkipWithError(message.c_str());
      return false;
    }
  }
  return true;
}

void cnn_gpu(benchmark::State& state, const RowId& id, const CnnCase& cnn_case,
             CnnExecution execution, int readback, CnnInput input, TrainingPrecision precision) {
  const GpuInfo& gpu = require_gpu();
  const CnnWorkload workload = make_cnn_workload(cnn_case);
  const ImageSet& train = workload.data.train;
  const int batch = cnn_case.batch;
  const int steps = cnn_case.steps;
  const std::size_t model_bytes = cuda::cnn_gpu_device_bytes(workload.spec, batch, precision);
  DeviceMemoryMeter meter;
  cuda::CnnGpuTrainer trainer(workload.spec, batch, train.pixels.data(), train.labels.data(),
                              workload.initial.data(), precision);
  const cudaStream_t stream = trainer.stream();

  // Validation of the first steps against the CPU, which also warms up cuBLAS and the kernels.
  std::vector<float> first_losses;
  for (int step = 0; step < kReferenceSteps; ++step) {
    first_losses.push_back(trainer.step_and_read_loss());
  }
  const LossTolerances tolerances =
      loss_tolerances(precision, {kFirstLossTolerance, kTrajectoryTolerance});
  if (!check_against_cpu(state, workload, first_losses, tolerances)) return;
  trainer.enqueue_reset();
  TrainingStepParts parts;
  const int probe_steps = std::min(steps, kComputeProbeSteps);
  parts.compute_per_step_s =
      compute_seconds_per_step(trainer.capture_compute_graph(probe_steps), probe_steps, stream);
  trainer.enqueue_reset();
  // One copy of each kind the iteration makes, timed on its own.
  if (input != CnnInput::resident) {
    parts.h2d_per_step_s = input_copy_seconds(
        input == CnnInput::pinned ? HostMemory::pinned : HostMemory::pageable,
        train.pixels.size() * sizeof(float), train.labels.size() * sizeof(int), stream);
  }
  if (readback > 0) parts.d2h_per_readback_s = loss_readback_seconds(stream);

  cuda::CnnRunConfig config;
  config.execution = execution;
  config.readback_every = readback;
  config.input = input;
  config.graph_steps = kGraphSteps;
  trainer.prepare(config, steps);  // graphs are captured and uploaded here

  std::vector<float> losses;
  const double wall_s = time_training_runs(state, trainer, steps, &losses, &meter);
  const float final_loss = trainer.last_loss();
  if (!std::isfinite(final_loss)) {
    state.SkipWithError("training diverged: the final loss is not finite");
    return;
  }
  const std::vector<float> parameters = trainer.parameters();
  // Read before the profiling run below prepares the trainer for eager, resident steps.
  const double bytes_h2d = static_cast<double>(steps) * trainer.input_bytes_per_step();
  const int graph_steps = trainer.graph_steps();
  // After the last timed iteration: where the scale stood and how many of its steps it skipped.
  const std::optional<LossScaleState> loss_scale = trainer.loss_scale_state();

  // The per-operation profile: a few eager steps with events around every operation.
  trainer.enqueue_reset();
  EventOperationProfiler profiler(stream, kCnnProfileSteps * kMaxOperationsPerStep);
  trainer.set_observer(&profiler);
  cuda::CnnRunConfig eager;
  trainer.prepare(eager, kCnnProfileSteps);
  trainer.run(kCnnProfileSteps, nullptr);
  trainer.set_observer(nullptr);
  GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));

  const ImageSet& test = workload.data.test;
  const double readbacks = readback > 0 ? static_cast<double>(steps) / readback : 0;
  TrainingResult result;
  result.step_counters = TrainingResult::StepCounters::cifar10_images;
  result.steps = steps;
  result.batch = batch;
  result.seconds_per_iteration = wall_s;
  result.kernels_per_step = trainer.launches_per_step();
  result.readbacks = readbacks;
  result.bytes_h2d = bytes_h2d;
  result.final_loss = final_loss;
  if (test.rows > 0) {
    result.test_accuracy = cpu::cnn_accuracy(workload.spec, parameters.data(), test.pixels.data(),
                                             test.labels.data(), test.rows);
  }
  result.loss_scaling = loss_scale;
  const PhaseTimes phases = parts.phases(steps, readbacks, wall_s);
  ResultRow row(state, id);
  row.phases(phases)
      .set(Counter::device_bytes, static_cast<double>(trainer.device_bytes()))
      .device_memory(model_bytes, meter.peak_bytes())
      .work(steps * cnn_step_flop(workload.spec, batch), wall_s,
            gpu_peak_flops(gpu, training_precision_name(precision)))
      .training(result)
      .operation_times(profiler.per_step(kCnnProfileSteps));
  if (execution == CnnExecution::graph) row.set(Counter::graph_steps, graph_steps);
  if (input == CnnInput::resident) row.label(LabelKey::input, "resident");
  row.publish();
}

}  // namespace

void register_cnn_gpu(const Sweep& sweep) {
  constexpr IterationTime kManual = IterationTime::manual;
  for (const CnnCase& cnn_case : make_cnn_cases(sweep.full)) {
    if (cnn_case.steps < 1) continue;
    for (int readback : cnn_case.gpu_readbacks) {
      for (CnnExecution execution : {CnnExecution::eager, CnnExecution::graph}) {
        const char* variant = execution == CnnExecution::eager ? "eager" : "graph";
        register_row(cnn_row_id("gpu", variant, cnn_case, readback), kManual, cnn_gpu, cnn_case,
                     execution, readback, CnnInput::resident, TrainingPrecision::fp32);
      }
    }
    if (cnn_case.gpu_mixed_precision) {
      // fp32 rows keep their names; the precision goes last on the others.
      for (TrainingPrecision precision : {TrainingPrecision::bf16, TrainingPrecision::fp16}) {
        for (CnnExecution execution : {CnnExecution::eager, CnnExecution::graph}) {
          const char* variant = execution == CnnExecution::eager ? "eager" : "graph";
          register_row(cnn_row_id("gpu", variant, cnn_case, 0)
                           .with(text_parameter("precision", training_precision_name(precision),
                                                LabelKey::precision)),
                       kManual, cnn_gpu, cnn_case, execution, 0, CnnInput::resident, precision);
        }
      }
    }
    if (!cnn_case.input_transfer) continue;
    const auto input_id = [&](const char* variant, CnnInput input) {
      return cnn_row_id("gpu", variant, cnn_case, 0)
          .with(text_parameter("input", cuda::cnn_input_name(input), LabelKey::input));
    };
    for (CnnInput input : {CnnInput::pageable, CnnInput::pinned}) {
      register_row(input_id("eager", input), kManual, cnn_gpu, cnn_case, CnnExecution::eager, 0,
                   input, TrainingPrecision::fp32);
    }
    // A graph cannot capture a copy from pageable memory: pinned only.
    register_row(input_id("graph", CnnInput::pinned), kManual, cnn_gpu, cnn_case,
                 CnnExecution::graph, 0, CnnInput::pinned, TrainingPrecision::fp32);
  }
}

}  // namespace gpubench
