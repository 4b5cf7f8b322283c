// mlp/gpu/<eager|graph>/data:D/batch:B/hidden:H/readback:R[/input:pageable|pinned|precision:P]
//   the GPU training rows of benchmarks/gpu_training_fixture.hpp for the MLP's eager/graph trainer
//   (kernels/mlp/mlp_cuda_trainer.hpp): cuBLAS layer products plus small kernels, 6 x layers
//   launches per step (mixed precision: 2 more for bf16, 4 for fp16). One timed iteration trains
//   the case's epochs.
// mlp/gpu/fused/data:D/batch:B/hidden:H/readback:0/manual_time
//   every epoch in one kernel launch on one block, when the net fits in shared memory
//   (kernels/mlp/mlp_cuda_fused.cuh); otherwise skipped with the bytes it would need. It stays
//   fp32: it multiplies on the CUDA cores of one block, where a 2-byte format saves nothing. Its
//   iteration time is t_wall (harness/phased_wall_timer.hpp) and t_compute the event time of the
//   kernel.
//
// Validation: the first step's loss equals the CPU's forward pass from the same weights; where the
// CPU can afford it, the whole loss trajectory (every readback, and the final loss) matches the
// CPU's within 1e-3 relative (mixed precision: both within kMixedPrecisionLossTolerance, 2^-5, of
// the fp32 CPU's).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/gpu_training_fixture.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/mlp_workload.hpp"
#include "benchmarks/registration.hpp"
#include "harness/device_memory.hpp"
#include "harness/gpu_info.hpp"
#include "harness/phased_wall_timer.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"
#include "kernels/mlp/mlp_cuda_fused_trainer.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"

namespace gpubench {

namespace {

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

// The test accuracy of `parameters`, where the case's data have a test split.
std::optional<double> test_accuracy(const MlpWorkload& workload,
                                    const std::vector<float>& parameters) {
  const Dataset& test = workload.data.test;
  if (test.rows() == 0) return std::nullopt;
  return cpu::mlp_accuracy(workload.spec, parameters.data(), test.inputs.data(), test.labels.data(),
                           test.rows());
}

// `loss_scaling`: the fp16 trainer's scale after the last timed iteration (nothing otherwise).
TrainingResult training_result(const MlpWorkload& workload, double wall_s, double kernels_per_step,
                               double readbacks, double bytes_h2d, float final_loss,
                               const std::vector<float>& parameters,
                               std::optional<LossScaleState> loss_scaling) {
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
  result.test_accuracy = test_accuracy(workload, parameters);
  return result;
}

double mlp_flop(const MlpWorkload& workload) {
  return workload.spec.epochs * mlp_step_flop(workload.spec, workload.data.batch.rows());
}

double mlp_bytes(const MlpWorkload& workload) {
  return workload.spec.epochs * mlp_step_bytes(workload.spec, workload.data.batch.rows());
}

// The row of `mlp_case` the GPU training fixture runs in `mode`.
GpuTrainingRow mlp_gpu_row(const MlpCase& mlp_case, const GpuTrainingMode& mode) {
  const auto workload =
      std::make_shared<const MlpWorkload>(make_mlp_workload(mlp_case, mlp_case.epochs));
  const MlpSpec& spec = workload->spec;
  const LossTolerances tolerances =
      loss_tolerances(mode.precision, {kFirstLossTolerance, kTrajectoryTolerance});
  GpuTrainingRow row;
  row.mode = mode;
  row.steps = spec.epochs;
  row.compute_probe_steps = kComputeProbeSteps;
  row.model_bytes = cuda::MlpGpuTrainer::planned_device_bytes(spec, mlp_case.batch, mode.precision);
  row.flop = mlp_flop(*workload);
  row.bytes = mlp_bytes(*workload);
  row.step_counters = TrainingResult::StepCounters::epochs;
  row.make_trainer = [workload, batch = mlp_case.batch, precision = mode.precision] {
    const Dataset& train = workload->data.batch;
    return std::make_unique<cuda::MlpGpuTrainer>(workload->spec, batch, train.inputs.data(),
                                                 train.labels.data(), workload->initial.data(),
                                                 precision);
  };
  row.check_first_steps = [workload, tolerances](benchmark::State& state,
                                                 cuda::GpuTrainer& trainer) {
    return check_first_loss(state, *workload, trainer.step_and_read_loss(), tolerances.first_loss);
  };
  row.check_run = [workload, tolerances, readback = mode.readback](
                      benchmark::State& state, const std::vector<float>& losses, float final_loss) {
    const std::vector<float> reference = cpu_trajectory(*workload);
    return check_trajectory(state, reference, losses, std::max(readback, 1),
                            tolerances.trajectory) &&
           check_trajectory(state, reference, {final_loss}, workload->spec.epochs,
                            tolerances.trajectory);
  };
  row.test_accuracy = [workload](const std::vector<float>& parameters) {
    return test_accuracy(*workload, parameters);
  };
  row.add_counters = [layers = spec.hidden.size()](ResultRow& result_row) {
    result_row.set(Counter::hidden_layers, static_cast<double>(layers));
  };
  return row;
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
      .work(mlp_flop(workload), mlp_bytes(workload), phases.wall_s, gpu_peak_flops(gpu, "fp32"))
      .training(training_result(workload, phases.wall_s, 1.0 / epochs, 0, 0, losses.back(),
                                trainer.parameters(), std::nullopt))
      .set(Counter::hidden_layers, static_cast<double>(spec.hidden.size()))
      .label(LabelKey::input, "resident")
      .publish();
}

}  // namespace

void register_mlp_gpu(const Sweep& sweep) {
  for (const MlpCase& mlp_case : make_mlp_cases(sweep.full)) {
    register_gpu_training_rows(
        {mlp_case.gpu_readbacks, mlp_case.gpu_mixed_precision, mlp_case.input_transfer},
        [mlp_case](const char* variant, int readback) {
          return mlp_row_id("gpu", variant, mlp_case, readback);
        },
        [mlp_case](const GpuTrainingMode& mode) { return mlp_gpu_row(mlp_case, mode); });
    if (mlp_case.fused) {
      register_row(mlp_row_id("gpu", "fused", mlp_case, 0), IterationTime::manual, mlp_gpu_fused,
                   mlp_case);
    }
  }
}

}  // namespace gpubench
