// mlp/gpu/eager/data:D/batch:B/hidden:H/readback:R[/input:pageable|pinned]/manual_time
//   one launch per operation from the host, like a framework (kernels/mlp/mlp_cuda_trainer.hpp):
//   cuBLAS layer products plus small kernels, 6 x layers launches per step.
// mlp/gpu/graph/data:D/batch:B/hidden:H/readback:R[/input:pinned]/manual_time
//   the same operations captured once in a CUDA graph of graph_steps steps and replayed.
// mlp/gpu/fused/data:D/batch:B/hidden:H/readback:0/manual_time
//   every epoch in one kernel launch on one block, when the net fits in shared memory
//   (kernels/mlp/mlp_cuda_fused.cuh); otherwise skipped with the bytes it would need.
//
// .../readback:0/precision:bf16|fp16/manual_time (eager and graph)
//   mixed precision (kernels/mlp/mlp_cuda_trainer.hpp): 2-byte products on the tensor cores with
//   fp32 accumulation and fp32 master weights; fp16 with dynamic loss scaling (counters loss_scale
//   and skipped_steps). fp32 rows keep the names above. The fused kernel stays fp32: it multiplies
//   on the CUDA cores of one block, where a 2-byte format saves nothing.
//
// readback:R copies the loss to the host and waits for it after every R-th step (R = 1: every step,
// like printing loss.item(); 0: never). input:pageable|pinned copies the batch from host memory
// before every step, like a data loader; without it the batch is uploaded once, before timing.
//
// One timed iteration trains the case's epochs from the initial weights: a device-to-device copy
// restores them before the iteration, outside the clock. The iteration time is t_wall, the host
// clock around the synchronised iteration (harness/host_clock_timer.hpp; fused:
// harness/phased_wall_timer.hpp): what the user waits for, launch and synchronisation costs
// included. Its parts (docs/timing-method.md, "The overhead model"):
//   t_compute  the kernels alone: steps x the CUDA-event time of one step when a graph of steps
//              runs back to back, with the operations ordered as the variant orders them
//              (fused: the event time of the kernel)
//   t_h2d      input copies x the event time of one such copy, measured separately
//   t_d2h      readbacks x the event time of one 4-byte device-to-host copy
//   t_overhead t_wall minus the three: launch, API and synchronisation cost, and GPU idle time
// Validation: the first step's loss equals the CPU's forward pass from the same weights; where the
// CPU can afford it, the whole loss trajectory (every readback, and the final loss) matches the
// CPU's within 1e-3 relative (mixed precision: both within kMixedPrecisionLossTolerance, 2^-5, of
// the fp32 CPU's).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/mlp_workload.hpp"
#include "benchmarks/registration.hpp"
#include "harness/device_memory.hpp"
#include "harness/gpu_info.hpp"
#include "harness/phased_wall_timer.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"
#include "kernels/mlp/mlp_cuda_fused_trainer.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"

namespace gpubench {

namespace {

using cuda::MlpExecution;
using cuda::MlpInput;

const char* execution_name(MlpExecution execution) {
  return execution == MlpExecution::eager ? "eager" : "graph";
}

// Steps in the graph that measures t_compute.
constexpr int kComputeProbeSteps = 100;
// The CPU reference trajectory is computed only up to this many layer-product flop (about a
// second of one core); beyond it only the first step is checked.
constexpr double kReferenceFlop = 2e10;
// First-step loss against the CPU forward pass: the same sums in another order (cuBLAS, expf):
// 1e-4 relative is 100x fp32 rounding and far below any real error.
constexpr double kFirstLossTolerance = 1e-4;
// Trajectories: each step adds rounding that SGD carries on; 1e-3 relative after 20000 Iris epochs.
constexpr double kTrajectoryTolerance = 1e-3;

bool close(double value, double reference, double relative) {
  return std::fabs(value - reference) <= relative * std::fabs(reference) + 1e-6;
}

// The CPU's loss after every step, or empty when that would cost more than kReferenceFlop.
std::vector<float> cpu_trajectory(const MlpWorkload& workload) {
  const MlpSpec& spec = workload.spec;
  const Dataset& train = workload.data.batch;
  const int batch = train.rows();
  if (spec.epochs * mlp_step_flop(spec, batch) > kReferenceFlop) return {};
  std::vector<float> parameters = workload.initial;
  std::vector<float> losses(static_cast<std::size_t>(spec.epochs));
  const int widest = *std::max_element(spec.hidden.begin(), spec.hidden.end());
  if (cpu::small_path_supported() && widest <= 64 && batch <= 4096) {
    cpu::MlpSmallTrainer trainer(spec, batch);
    trainer.set_batch(train.inputs.data(), train.labels.data());
    for (float& loss : losses) loss = trainer.step(parameters.data());
  } else {
    cpu::set_blas_threads(cpu::blas_threads_for_all_cores());
    cpu::MlpBlasTrainer trainer(spec, batch);
    for (float& loss : losses) {
      loss = trainer.step(parameters.data(), train.inputs.data(), train.labels.data());
    }
  }
  return losses;
}

// SkipWithError and false unless the first-step loss matches the CPU's forward pass.
bool check_first_loss(benchmark::State& state, const MlpWorkload& workload, float gpu_loss,
                      double tolerance = kFirstLossTolerance) {
  const Dataset& train = workload.data.batch;
  cpu::set_blas_threads(cpu::blas_threads_for_all_cores());
  cpu::MlpBlasTrainer reference(workload.spec, train.rows());
  const float expected =
      reference.loss(workload.initial.data(), train.inputs.data(), train.labels.data());
  if (close(gpu_loss, expected, tolerance)) return true;
  const std::string message = "first-step loss " + std::to_string(gpu_loss) +
                              " differs from the CPU forward pass " + std::to_string(expected);
  state.SkipWithError(message.c_str());
  return false;
}

// SkipWithError and false unless `losses[i]`, the loss after step (i + 1) * every, matches the CPU
// trajectory (when there is one).
bool check_trajectory(benchmark::State& state, const std::vector<float>& reference,
                      const std::vector<float>& losses, int every,
                      double tolerance = kTrajectoryTolerance) {
  if (reference.empty()) return true;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::size_t step = (i + 1) * static_cast<std::size_t>(every);  // 1-based
    if (step > reference.size()) break;
    if (!close(losses[i], reference[step - 1], tolerance)) {
      const std::string message = "loss after step " + std::to_string(step) + " is " +
                                  std::to_string(losses[i]) + ", the CPU's " +
                                  std::to_string(reference[step - 1]);
      state.SkipWithError(message.c_str());
      return false;
    }
  }
  return true;
}

// `loss_scaling`: the fp16 trainer's scale after the last timed iteration (nothing otherwise).
TrainingResult training_result(const MlpWorkload& workload, double wall_s, double kernels_per_step,
                               double readbacks, double bytes_h2d, float final_loss,
                               const std::vector<float>& parameters,
                               std::optional<LossScaleState> loss_scaling) {
  const Dataset& test = workload.data.test;
  TrainingResult result;
  result.step_counters = TrainingResult::StepCounters::epochs;
  result.steps = workload.spec.epochs;
  result.batch = workload.data.batch.rows();
  result.seconds_per_iteration = wall_s;
  result.kernels_per_step = kernels_per_step;
  result.readbacks = readbacks;
  result.bytes_h2d = bytes_h2d;
  result.final_loss = final_loss;
  result.loss_scaling = loss_scaling;
  if (test.rows() > 0) {
    result.test_accuracy = cpu::mlp_accuracy(workload.spec, parameters.data(), test.inputs.data(),
                                             test.labels.data(), test.rows());
  }
  return result;
}

double mlp_flop(const MlpWorkload& workload) {
  return workload.spec.epochs * mlp_step_flop(workload.spec, workload.data.batch.rows());
}

void mlp_gpu_stepwise(benchmark::State& state, const RowId& id, const MlpCase& mlp_case,
                      MlpExecution execution, int readback, MlpInput input,
                      MlpPrecision precision) {
  const GpuInfo& gpu = require_gpu();
  const MlpWorkload workload = make_mlp_workload(mlp_case, mlp_case.epochs);
  const MlpSpec& spec = workload.spec;
  const Dataset& train = workload.data.batch;
  const int batch = mlp_case.batch;
  const int epochs = spec.epochs;
  const LossTolerances tolerances =
      loss_tolerances(precision, {kFirstLossTolerance, kTrajectoryTolerance});
  const std::size_t model_bytes = cuda::MlpGpuTrainer::planned_device_bytes(spec, batch, precision);
  if (!fits_on_device(state, model_bytes)) return;
  DeviceMemoryMeter meter;  // before the trainer allocates anything
  cuda::MlpGpuTrainer trainer(spec, batch, train.inputs.data(), train.labels.data(),
                              workload.initial.data(), precision);
  const cudaStream_t stream = trainer.stream();

  // Validation of one step, which also warms up cuBLAS and loads the kernels.
  if (!check_first_loss(state, workload, trainer.step_and_read_loss(), tolerances.first_loss)) {
    return;
  }
  trainer.enqueue_reset();
  TrainingStepParts parts;
  const int probe_steps = std::min(epochs, kComputeProbeSteps);
  parts.compute_per_step_s = compute_seconds_per_step(
      trainer.capture_compute_graph(probe_steps, execution == MlpExecution::graph), probe_steps,
      stream);
  trainer.enqueue_reset();
  // One copy of each kind the iteration makes, timed on its own.
  if (input != MlpInput::resident) {
    parts.h2d_per_step_s = input_copy_seconds(
        input == MlpInput::pinned ? HostMemory::pinned : HostMemory::pageable,
        train.inputs.size() * sizeof(float), train.labels.size() * sizeof(int), stream);
  }
  if (readback > 0) parts.d2h_per_readback_s = loss_readback_seconds(stream);

  cuda::MlpRunConfig config;
  config.execution = execution;
  config.readback_every = readback;
  config.input = input;
  config.graph_steps = kGraphSteps;
  trainer.prepare(config, epochs);  // graphs are captured and uploaded here

  std::vector<float> losses;
  const double wall_s = time_training_runs(state, trainer, epochs, &losses, &meter);

  const float final_loss = trainer.last_loss();
  const std::vector<float> reference = cpu_trajectory(workload);
  if (!check_trajectory(state, reference, losses, std::max(readback, 1), tolerances.trajectory)) {
    return;
  }
  if (!check_trajectory(state, reference, {final_loss}, epochs, tolerances.trajectory)) return;

  const double readbacks = readback > 0 ? epochs / readback : 0;
  const PhaseTimes phases = parts.phases(epochs, readbacks, wall_s);
  ResultRow row(state, id);
  row.phases(phases)
      .set(Counter::device_bytes, static_cast<double>(trainer.device_bytes()))
      .device_memory(model_bytes, meter.peak_bytes())
      .work(mlp_flop(workload), wall_s, gpu_peak_flops(gpu, mlp_precision_name(precision)))
      .training(training_result(workload, wall_s, trainer.launches_per_step(), readbacks,
                                static_cast<double>(epochs) * trainer.input_bytes_per_step(),
                                final_loss, trainer.parameters(), trainer.loss_scale_state()))
      .set(Counter::hidden_layers, static_cast<double>(spec.hidden.size()));
  if (execution == MlpExecution::graph) row.set(Counter::graph_steps, trainer.graph_steps());
  if (input == MlpInput::resident) row.label(LabelKey::input, "resident");
  row.publish();
}

void mlp_gpu_fused(benchmark::State& state, const RowId& id, const MlpCase& mlp_case) {
  const GpuInfo& gpu = require_gpu();
  const MlpWorkload workload = make_mlp_workload(mlp_case, mlp_case.epochs);
  const MlpSpec& spec = workload.spec;
  const Dataset& train = workload.data.batch;
  const int epochs = spec.epochs;
  const cuda::MlpFusedPlan plan = cuda::plan_mlp_fused_on_current_device(spec, mlp_case.batch);
  if (!plan.fits()) {
    state.SkipWithError(plan.why_not().c_str());
    return;
  }
  DeviceMemoryMeter meter;  // before the trainer allocates anything
  cuda::MlpFusedTrainer trainer(spec, mlp_case.batch, train.inputs.data(), train.labels.data(),
                                workload.initial.data());
  trainer.launch(1);
  if (!check_first_loss(state, workload, trainer.loss_history(1).front())) return;

  PhasedWallTimer timer(trainer.stream(), PhasedWallTimer::Report::wall, &meter);
  const PhaseTimes phases = timer.run(
      state,
      [&] {
        trainer.enqueue_reset();
        GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(trainer.stream()));
      },
      [&](PhasedWallTimer::Marks& marks) {
        trainer.launch(epochs);
        marks.end(Phase::compute);
      });

  const std::vector<float> losses = trainer.loss_history(epochs);
  if (!check_trajectory(state, cpu_trajectory(workload), losses, 1)) return;
  ResultRow row(state, id);
  row.phases(phases)
      .set(Counter::device_bytes, static_cast<double>(trainer.device_bytes()))
      // The fused trainer's buffers are the batch, the parameters and the loss history it
      // allocates by their shapes; it uses no library workspace.
      .device_memory(trainer.device_bytes(), meter.peak_bytes())
      .set(Counter::shared_bytes, static_cast<double>(plan.shared_bytes))
      .set(Counter::threads_per_block, plan.threads)
      .work(mlp_flop(workload), phases.wall_s, gpu_peak_flops(gpu, "fp32"))
      .training(training_result(workload, phases.wall_s, 1.0 / epochs, 0, 0, losses.back(),
                                trainer.parameters(), std::nullopt))
      .set(Counter::hidden_layers, static_cast<double>(spec.hidden.size()))
      .label(LabelKey::input, "resident")
      .publish();
}

}  // namespace

void register_mlp_gpu(const Sweep& sweep) {
  constexpr IterationTime kManual = IterationTime::manual;
  for (const MlpCase& mlp_case : make_mlp_cases(sweep.full)) {
    for (int readback : mlp_case.gpu_readbacks) {
      for (MlpExecution execution : {MlpExecution::eager, MlpExecution::graph}) {
        register_row(mlp_row_id("gpu", execution_name(execution), mlp_case, readback), kManual,
                     mlp_gpu_stepwise, mlp_case, execution, readback, MlpInput::resident,
                     MlpPrecision::fp32);
      }
    }
    if (mlp_case.gpu_mixed_precision) {
      // fp32 rows keep their names; the precision goes last on the others.
      for (MlpPrecision precision : {MlpPrecision::bf16, MlpPrecision::fp16}) {
        for (MlpExecution execution : {MlpExecution::eager, MlpExecution::graph}) {
          const RowId id = mlp_row_id("gpu", execution_name(execution), mlp_case, 0)
                               .with(text_parameter("precision", mlp_precision_name(precision),
                                                    LabelKey::precision));
          register_row(id, kManual, mlp_gpu_stepwise, mlp_case, execution, 0, MlpInput::resident,
                       precision);
        }
      }
    }
    if (mlp_case.input_transfer) {
      const auto input_id = [&](const char* variant, MlpInput input) {
        return mlp_row_id("gpu", variant, mlp_case, 0)
            .with(text_parameter("input", cuda::mlp_input_name(input), LabelKey::input));
      };
      for (MlpInput input : {MlpInput::pageable, MlpInput::pinned}) {
        register_row(input_id("eager", input), kManual, mlp_gpu_stepwise, mlp_case,
                     MlpExecution::eager, 0, input, MlpPrecision::fp32);
      }
      // A graph cannot capture a copy from pageable memory: pinned only.
      register_row(input_id("graph", MlpInput::pinned), kManual, mlp_gpu_stepwise, mlp_case,
                   MlpExecution::graph, 0, MlpInput::pinned, MlpPrecision::fp32);
    }
    if (mlp_case.fused) {
      register_row(mlp_row_id("gpu", "fused", mlp_case, 0), kManual, mlp_gpu_fused, mlp_case);
    }
  }
}

}  // namespace gpubench
