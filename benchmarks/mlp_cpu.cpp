// mlp/cpu/openblas/data:D/batch:B/hidden:H/readback:1/threads:T
//   layer products through cblas_sgemm, the rest in loops, on T cores: the batch in shards, one per
//   worker, each with single-threaded OpenBLAS, or one shard with OpenBLAS at T threads, as the
//   rule of kernels/mlp/mlp_cpu.hpp (mlp_cpu_thread_plan) picks from the step's work.
// mlp/cpu/small/data:D/batch:B/hidden:H/readback:1/threads:1
//   the hand-written small-matrix path (kernels/mlp/mlp_cpu_small.hpp), single-threaded, no BLAS.
// mlp/cpu/openblas/data:D/batch:B/hidden:H/readback:1/threads:T/precision:bf16
//   mixed precision (kernels/mlp/mlp_cpu_bf16.hpp): bf16 layer products through OpenBLAS's
//   cblas_sbgemm with fp32 accumulation, fp32 master weights, loss and update. Skipped, with the
//   reason, where the CPU has no AVX512_BF16 or the loaded OpenBLAS exports no cblas_sbgemm.
//
// One timed iteration trains the case's epochs (SGD steps) from the same initial weights: the
// weights are restored before each iteration, outside the clock (harness/host_clock_timer.hpp), so
// every iteration does identical work and ends at identical weights. The loss is on the host after
// every step (readback:1 costs nothing on the CPU). Validation after timing: the first step's loss
// equals an independent forward pass from the initial weights (within bf16's rounding for bf16
// rows), and every loss is finite.

#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/cpu_training_timing.hpp"
#include "benchmarks/mlp_workload.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_bf16.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"

namespace gpubench {

namespace {

// Which CPU trainer a row runs.
enum class CpuPath { openblas, small, openblas_bf16 };

// How far the first step's loss may be from the fp32 forward-pass reference.
float first_loss_tolerance(CpuPath path, float reference) {
  if (path == CpuPath::openblas_bf16) {
    // Measured: at most 5e-5 relative on Iris, digits and synthetic data.
    return static_cast<float>(kMixedPrecisionLossTolerance) * reference;
  }
  // Both sum the same terms in different orders (exp and log differ by ~1e-7 on the small
  // path): 1e-4 relative is 100x that and far below any real error.
  return 1e-4F * reference + 1e-6F;
}

void mlp_cpu(benchmark::State& state, const RowId& id, const MlpCase& mlp_case, CpuPath path,
             int threads) {
  // A row this machine cannot run is skipped with the reason, after the prefix the tools count as
  // a skip rather than a failure (tools/gpubench_tools/benchjson.py, SKIP_PREFIXES), and keeps its
  // label so tools can still tell what it is.
  const auto skip_unsupported = [&](const std::string& reason) {
    ResultRow(state, id).publish();
    state.SkipWithError(("not supported on this machine: " + reason).c_str());
  };
  if (path == CpuPath::small && !cpu::small_path_supported()) {
    skip_unsupported("the small-matrix path needs AVX2 and FMA, which this CPU lacks");
    return;
  }
  if (path == CpuPath::openblas_bf16) {
    const std::string reason = cpu::bf16_unavailable_reason();
    if (!reason.empty()) {
      skip_unsupported("no native bf16 products: " + reason);
      return;
    }
  }
  const MlpWorkload workload = make_mlp_workload(mlp_case, mlp_case.cpu_epochs);
  const MlpSpec& spec = workload.spec;
  const Dataset& train = workload.data.batch;
  const int batch = mlp_case.batch;
  // The thread plan from the step's work (never per row); the small path is single-threaded.
  const cpu::CpuThreadPlan plan = path == CpuPath::small
                                      ? cpu::CpuThreadPlan{}
                                      : cpu::mlp_cpu_thread_plan(spec, batch, threads);
  cpu::set_blas_threads(plan.blas_threads);

  std::vector<float> parameters = workload.initial;
  std::vector<float> losses(static_cast<std::size_t>(spec.epochs));
  cpu::MlpBlasTrainer blas(spec, batch, path == CpuPath::openblas ? plan.workers : 1);
  std::unique_ptr<cpu::MlpSmallTrainer> hand_written;
  std::unique_ptr<cpu::MlpBf16Trainer> mixed;
  if (path == CpuPath::small) {
    hand_written = std::make_unique<cpu::MlpSmallTrainer>(spec, batch);
    hand_written->set_batch(train.inputs.data(), train.labels.data());
  } else if (path == CpuPath::openblas_bf16) {
    mixed = std::make_unique<cpu::MlpBf16Trainer>(spec, batch, cpu::Bf16Product::openblas_sbgemm,
                                                  plan.workers);
  }
  const auto step = [&] {
    switch (path) {
      case CpuPath::small:
        return hand_written->step(parameters.data());
      case CpuPath::openblas_bf16:
        return mixed->step(parameters.data(), train.inputs.data(), train.labels.data());
      case CpuPath::openblas:
        break;
    }
    return blas.step(parameters.data(), train.inputs.data(), train.labels.data());
  };
  const double seconds_per_iteration =
      time_cpu_training_steps(state, parameters, workload.initial, losses, step);

  const float reference =
      blas.loss(workload.initial.data(), train.inputs.data(), train.labels.data());
  if (!(std::fabs(losses.front() - reference) <= first_loss_tolerance(path, reference))) {
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
  result.step_counters = TrainingResult::StepCounters::epochs;
  result.steps = spec.epochs;
  result.batch = batch;
  result.seconds_per_iteration = seconds_per_iteration;
  result.readbacks = spec.epochs;  // the loss is on the host after every step
  result.final_loss = losses.back();
  if (test.rows() > 0) {
    result.test_accuracy = cpu::mlp_accuracy(spec, parameters.data(), test.inputs.data(),
                                             test.labels.data(), test.rows());
  }
  const double peak = path == CpuPath::openblas_bf16 ? cpu_peak_bf16_flops(threads)
                                                     : cpu_peak_flops(threads, false);
  ResultRow row(state, id);
  row.work(spec.epochs * mlp_step_flop(spec, batch), spec.epochs * mlp_step_bytes(spec, batch),
           seconds_per_iteration, peak)
      .training(result)
      .set(Counter::t_wall, seconds_per_iteration)
      .set(Counter::hidden_layers, static_cast<double>(spec.hidden.size()))
      .label(LabelKey::input, "resident")
      .publish();
}

void register_one(const MlpCase& mlp_case, CpuPath path, int threads) {
  RowId id = mlp_row_id("cpu", path == CpuPath::small ? "small" : "openblas", mlp_case, 1)
                 .with(number_parameter("threads", threads, Counter::blas_threads));
  // fp32 rows keep their names; the precision goes last on the others.
  if (path == CpuPath::openblas_bf16)
    id = id.with(text_parameter("precision", "bf16", LabelKey::precision));
  register_row(id, IterationTime::benchmark_clock, mlp_cpu, mlp_case, path, threads);
}

}  // namespace

void register_mlp_cpu(const Sweep& sweep) {
  for (const MlpCase& mlp_case : make_mlp_cases(sweep.full)) {
    if (mlp_case.cpu_epochs < 1) continue;  // too large for the CPU side of this sweep
    const std::vector<int>& thread_counts =
        mlp_case.cpu_scaling ? sweep.cpu_scaling_threads : sweep.cpu_threads;
    for (int threads : thread_counts) register_one(mlp_case, CpuPath::openblas, threads);
    if (mlp_case.cpu_bf16) {
      for (int threads : sweep.cpu_threads) register_one(mlp_case, CpuPath::openblas_bf16, threads);
    }
    // Single-threaded by construction: its whole step is shorter than waking a second thread.
    if (mlp_case.small_path) register_one(mlp_case, CpuPath::small, 1);
  }
}

}  // namespace gpubench
