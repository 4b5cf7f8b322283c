// cnn/cpu/openblas/data:D/batch:B/readback:1/threads:T
//   the CIFAR-10 tutorial network (kernels/cnn/cnn_spec.hpp) trained on the CPU: convolutions as
//   im2col + cblas_sgemm, on T cores: the batch in shards, one per worker, each with
//   single-threaded OpenBLAS, as the rule of kernels/cnn/cnn_cpu.hpp (cnn_cpu_thread_plan) picks
//   from the step's work.
//
// One timed iteration trains the case's steps from the initial weights, every step on the same
// batch; the weights are restored before each iteration outside the clock
// (harness/host_clock_timer.hpp). The loss is on the host after every step (readback:1 costs
// nothing on the CPU). After timing: validation (the first step's loss equals a separate forward
// pass from the initial weights, every loss is finite) and a profiling run of a few steps that
// times each operation (harness/operation_profiler.hpp), written as t_op:<operation> counters.

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "benchmarks/cnn_workload.hpp"
#include "benchmarks/cpu_training_timing.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
#include "harness/operation_profiler.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/common/openblas.hpp"

namespace gpubench {

namespace {

// The first step's loss against a separate forward pass: the same sums, so 1e-5 relative is
// generous for fp32 and far below any real error.
constexpr double kFirstLossTolerance = 1e-5;

void cnn_cpu(benchmark::State& state, const RowId& id, const CnnCase& cnn_case, int threads) {
  const CnnWorkload workload = make_cnn_workload(cnn_case);
  const ImageSet& train = workload.data.train;
  const int batch = cnn_case.batch;
  const int steps = cnn_case.cpu_steps;
  const cpu::CpuThreadPlan plan = cpu::cnn_cpu_thread_plan(workload.spec, batch, threads);
  cpu::set_blas_threads(plan.blas_threads);

  cpu::CnnCpuTrainer trainer(workload.spec, batch, plan.workers);
  std::vector<float> parameters = workload.initial;
  std::vector<float> losses(static_cast<std::size_t>(steps));
  const auto step = [&] {
    return trainer.step(parameters.data(), train.pixels.data(), train.labels.data());
  };
  const double seconds_per_iteration =
      time_cpu_training_steps(state, parameters, workload.initial, losses, step);

  const float reference =
      trainer.loss(workload.initial.data(), train.pixels.data(), train.labels.data());
  if (!(std::fabs(losses.front() - reference) <= kFirstLossTolerance * reference)) {
    const std::string message = "first-step loss " + std::to_string(losses.front()) +
                                " differs from the forward pass " + std::to_string(reference);
    state.SkipWithError(message.c_str());
    return;
  }
  for (float loss : losses) {
    if (!std::isfinite(loss)) {
      state.SkipWithError("training diverged: a loss is not finite");
      return;
    }
  }
  const float final_loss = losses.back();
  const ImageSet& test = workload.data.test;
  TrainingResult result;
  result.step_counters = TrainingResult::StepCounters::cifar10_images;
  result.steps = steps;
  result.batch = batch;
  result.seconds_per_iteration = seconds_per_iteration;
  result.readbacks = steps;
  result.final_loss = final_loss;
  if (test.rows > 0) {
    result.test_accuracy = cpu::cnn_accuracy(workload.spec, parameters.data(), test.pixels.data(),
                                             test.labels.data(), test.rows);
  }

  HostOperationProfiler profiler;
  parameters = workload.initial;
  trainer.set_observer(&profiler);
  for (int profiled = 0; profiled < kCnnProfileSteps; ++profiled) step();
  trainer.set_observer(nullptr);

  const OperationTimes operation_times = profiler.per_step(kCnnProfileSteps);
  ResultRow row(state, id);
  row.work(steps * cnn_step_flop(workload.spec, batch),
           steps * cnn_step_bytes(workload.spec, batch), seconds_per_iteration,
           cpu_peak_flops(threads, false))
      .training(result)
      .set(Counter::t_wall, seconds_per_iteration)
      .operation_times(operation_times)
      .operation_work(cnn_operation_counters(workload.spec, batch, CnnTrainerKind::cpu),
                      operation_times)
      .label(LabelKey::input, "resident")
      .publish();
}

}  // namespace

void register_cnn_cpu(const Sweep& sweep) {
  for (const CnnCase& cnn_case : make_cnn_cases(sweep.full)) {
    if (cnn_case.cpu_steps < 1) continue;
    for (int threads : cnn_case.cpu_scaling ? sweep.cpu_scaling_threads : sweep.cpu_threads) {
      const RowId id = cnn_row_id("cpu", "openblas", cnn_case, 1)
                           .with(number_parameter("threads", threads, Counter::blas_threads));
      register_row(id, IterationTime::benchmark_clock, cnn_cpu, cnn_case, threads);
    }
  }
}

}  // namespace gpubench
