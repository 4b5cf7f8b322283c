// mlp/cpu/openblas/data:D/batch:B/hidden:H/readback:1/threads:T
//   layer products through cblas_sgemm (OpenBLAS thread count set explicitly), the rest in loops.
// mlp/cpu/small/data:D/batch:B/hidden:H/readback:1/threads:1
//   the hand-written small-matrix path (kernels/mlp/mlp_cpu_small.hpp), single-threaded, no BLAS.
//
// One timed iteration trains the case's epochs (SGD steps) from the same initial weights: the
// weights are restored before each iteration, outside the clock (harness/host_clock_timer.hpp), so
// every iteration does identical work and ends at identical weights. The loss is on the host after
// every step (readback:1 costs nothing on the CPU). Validation after timing: the first step's loss
// equals an independent forward pass from the initial weights, and every loss is finite.

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/mlp_workload.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"

namespace gpubench {

namespace {

void mlp_cpu(benchmark::State& state, const RowId& id, const MlpCase& mlp_case, bool small,
             int threads) {
  if (small && !cpu::small_path_supported()) {
    state.SkipWithError("the small-matrix path needs AVX2 and FMA, which this CPU lacks");
    return;
  }
  const MlpWorkload workload = make_mlp_workload(mlp_case, mlp_case.cpu_epochs);
  const MlpSpec& spec = workload.spec;
  const Dataset& train = workload.data.batch;
  const int batch = mlp_case.batch;
  cpu::set_blas_threads(threads);

  std::vector<float> parameters = workload.initial;
  std::vector<float> losses(static_cast<std::size_t>(spec.epochs));
  cpu::MlpBlasTrainer blas(spec, batch);
  std::unique_ptr<cpu::MlpSmallTrainer> hand_written;
  if (small) {
    hand_written = std::make_unique<cpu::MlpSmallTrainer>(spec, batch);
    hand_written->set_batch(train.inputs.data(), train.labels.data());
  }
  const auto step = [&] {
    return small ? hand_written->step(parameters.data())
                 : blas.step(parameters.data(), train.inputs.data(), train.labels.data());
  };
  step();  // warm-up: starts OpenBLAS's thread pool and pages in every buffer

  HostClockTimer timer(HostClockTimer::Report::benchmark_clock);
  const double seconds_per_iteration = timer.run(
      state, [&] { parameters = workload.initial; },
      [&] {
        for (float& loss : losses) loss = step();
        benchmark::DoNotOptimize(parameters.data());
      });

  const float reference =
      blas.loss(workload.initial.data(), train.inputs.data(), train.labels.data());
  // Both sum the same terms in different orders (exp and log differ by ~1e-7 on the small
  // path): 1e-4 relative is 100x that and far below any real error.
  if (!(std::fabs(losses.front() - reference) <= 1e-4F * reference + 1e-6F)) {
    const std::string message = "first-step loss " + std::to_string(losses.front()) +
                                " differs from the forward-pass reference " +
                                std::to_string(reference);
    state.SkipWithError(message.c_str());
    return;
  }
  for (float loss : losses) {
    if (!std::isfinite(loss)) {
      state.SkipWithError("training diverged: a loss is not finite");
      return;
    }
  }

  const Dataset& test = workload.data.test;
  TrainingResult result;
  result.steps = spec.epochs;
  result.batch = batch;
  result.seconds_per_iteration = seconds_per_iteration;
  result.readbacks = spec.epochs;  // the loss is on the host after every step
  result.final_loss = losses.back();
  if (test.rows() > 0) {
    result.test_accuracy = cpu::mlp_accuracy(spec, parameters.data(), test.inputs.data(),
                                             test.labels.data(), test.rows());
  }
  ResultRow row(state, id);
  row.work(spec.epochs * mlp_step_flop(spec, batch), seconds_per_iteration,
           cpu_peak_flops(threads, false))
      .training(result)
      .set(Counter::t_wall, seconds_per_iteration)
      .set(Counter::hidden_layers, static_cast<double>(spec.hidden.size()))
      .label(LabelKey::input, "resident")
      .publish();
}

void register_one(const MlpCase& mlp_case, bool small, int threads) {
  const RowId id = mlp_row_id("cpu", small ? "small" : "openblas", mlp_case, 1)
                       .with(number_parameter("threads", threads, Counter::blas_threads));
  register_row(id, IterationTime::benchmark_clock, mlp_cpu, mlp_case, small, threads);
}

}  // namespace

void register_mlp_cpu(const Sweep& sweep) {
  for (const MlpCase& mlp_case : sweep.mlp_cases) {
    if (mlp_case.cpu_epochs < 1) continue;  // too large for the CPU side of this sweep
    for (int threads : sweep.cpu_threads) register_one(mlp_case, false, threads);
    // Single-threaded by construction: its whole step is shorter than waking a second thread.
    if (mlp_case.small_path) register_one(mlp_case, true, 1);
  }
}

}  // namespace gpubench
