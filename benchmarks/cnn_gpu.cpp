// cnn/gpu/<eager|graph>/data:D/batch:B/readback:R[/input:pageable|pinned|precision:P]/manual_time
//   the GPU training rows of benchmarks/gpu_training_fixture.hpp for the CIFAR-10 tutorial network
//   (kernels/cnn/cnn_cuda_trainer.hpp): im2col/col2im, cuBLAS products, bias, pool, loss and update
//   kernels; kernels_per_step counts them. One timed iteration trains the case's steps; the sweep
//   adds mixed-precision rows at a few batches (CnnCase::gpu_mixed_precision).
//
// Validation: the first step's loss equals the CPU's forward pass; where the CPU can afford it,
// the first steps' losses match the CPU's (mixed precision: every checked step within
// kMixedPrecisionLossTolerance, 2^-5 relative, of the fp32 CPU's); the final loss is finite. After
// timing, a profiling run records CUDA events around every operation of a few eager steps
// (harness/event_operation_profiler.hpp). device_bytes_model is cnn_gpu_device_bytes(spec, batch,
// precision) (kernels/cnn/cnn_cuda_memory.hpp).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/cnn_workload.hpp"
#include "benchmarks/gpu_training_fixture.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "harness/image_dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench {

namespace {

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

// The row of `cnn_case` the GPU training fixture runs in `mode`.
GpuTrainingRow cnn_gpu_row(const CnnCase& cnn_case, const GpuTrainingMode& mode) {
  const auto workload = std::make_shared<const CnnWorkload>(make_cnn_workload(cnn_case));
  const LossTolerances tolerances =
      loss_tolerances(mode.precision, {kFirstLossTolerance, kTrajectoryTolerance});
  GpuTrainingRow row;
  row.mode = mode;
  row.steps = cnn_case.steps;
  row.compute_probe_steps = kComputeProbeSteps;
  row.model_bytes = cuda::cnn_gpu_device_bytes(workload->spec, cnn_case.batch, mode.precision);
  row.flop = cnn_case.steps * cnn_step_flop(workload->spec, cnn_case.batch);
  row.bytes = cnn_case.steps * cnn_step_bytes(workload->spec, cnn_case.batch);
  row.step_counters = TrainingResult::StepCounters::cifar10_images;
  row.profile_steps = kCnnProfileSteps;
  row.operation_work = cnn_operation_counters(workload->spec, cnn_case.batch, CnnTrainerKind::gpu);
  row.make_trainer = [workload, batch = cnn_case.batch, precision = mode.precision] {
    const ImageSet& train = workload->data.train;
    return std::make_unique<cuda::CnnGpuTrainer>(workload->spec, batch, train.pixels.data(),
                                                 train.labels.data(), workload->initial.data(),
                                                 precision);
  };
  row.check_first_steps = [workload, tolerances](benchmark::State& state,
                                                 cuda::GpuTrainer& trainer) {
    std::vector<float> first_losses;
    for (int step = 0; step < kReferenceSteps; ++step) {
      first_losses.push_back(trainer.step_and_read_loss());
    }
    return check_against_cpu(state, *workload, first_losses, tolerances);
  };
  row.check_run = [](benchmark::State& state, const std::vector<float>& /*losses*/,
                     float final_loss) {
    if (std::isfinite(final_loss)) return true;
    state.SkipWithError("training diverged: the final loss is not finite");
    return false;
  };
  row.test_accuracy = [workload](const std::vector<float>& parameters) -> std::optional<double> {
    const ImageSet& test = workload->data.test;
    if (test.rows == 0) return std::nullopt;
    return cpu::cnn_accuracy(workload->spec, parameters.data(), test.pixels.data(),
                             test.labels.data(), test.rows);
  };
  return row;
}

}  // namespace

void register_cnn_gpu(const Sweep& sweep) {
  for (const CnnCase& cnn_case : make_cnn_cases(sweep.full)) {
    if (cnn_case.steps < 1) continue;
    register_gpu_training_rows(
        {cnn_case.gpu_readbacks, cnn_case.gpu_mixed_precision, cnn_case.input_transfer},
        [cnn_case](const char* variant, int readback) {
          return cnn_row_id("gpu", variant, cnn_case, readback);
        },
        [cnn_case](const GpuTrainingMode& mode) { return cnn_gpu_row(cnn_case, mode); });
  }
}

}  // namespace gpubench
