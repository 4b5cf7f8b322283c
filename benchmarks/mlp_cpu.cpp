// mlp/cpu/openblas/data:D/batch:B/hidden:H/readback:1/threads:T
//   layer products through cblas_sgemm (OpenBLAS thread count set explicitly), the rest in loops.
// mlp/cpu/small/data:D/batch:B/hidden:H/readback:1/threads:1
//   the hand-written small-matrix path (kernels/mlp/mlp_cpu_small.hpp), single-threaded, no BLAS.
//
// One timed iteration trains the case's epochs (SGD steps) from the same initial weights: the
// weights are reset before each iteration with timing paused, so every iteration does identical
// work and ends at identical weights. The loss is on the host after every step (readback:1 costs
// nothing on the CPU). Validation after timing: the first step's loss equals an independent forward
// pass from the initial weights, and every loss is finite.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/bench_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
#include "harness/dataset.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"

namespace gpubench {

namespace {

constexpr std::uint64_t kInitialWeightSeed = 1;

void mlp_cpu(benchmark::State& state, MlpCase mlp_case, bool small, int threads) {
  run_guarded(state, [&] {
    if (small && !cpu::small_path_supported()) {
      state.SkipWithError("the small-matrix path needs AVX2 and FMA, which this CPU lacks");
      return;
    }
    const MlpData data = load_mlp_data(mlp_case.data, mlp_case.batch);
    MlpSpec spec;
    spec.inputs = data.batch.features;
    spec.hidden = mlp_case.hidden;
    spec.classes = data.batch.classes;
    spec.learning_rate = 0.01F;
    spec.epochs = mlp_case.cpu_epochs;
    spec.seed = kInitialWeightSeed;
    spec.validate();
    const int batch = mlp_case.batch;
    cpu::set_blas_threads(threads);

    const std::vector<float> initial = initial_parameters(spec);
    std::vector<float> parameters = initial;
    std::vector<float> losses(static_cast<std::size_t>(spec.epochs));
    cpu::MlpBlasTrainer blas(spec, batch);
    std::unique_ptr<cpu::MlpSmallTrainer> hand_written;
    if (small) {
      hand_written = std::make_unique<cpu::MlpSmallTrainer>(spec, batch);
      hand_written->set_batch(data.batch.inputs.data(), data.batch.labels.data());
    }
    const auto train = [&] {
      for (int epoch = 0; epoch < spec.epochs; ++epoch) {
        losses[epoch] = small ? hand_written->step(parameters.data())
                              : blas.step(parameters.data(), data.batch.inputs.data(),
                                          data.batch.labels.data());
      }
    };
    // Warm-up: one step starts OpenBLAS's thread pool and pages in every buffer.
    if (small) {
      hand_written->step(parameters.data());
    } else {
      blas.step(parameters.data(), data.batch.inputs.data(), data.batch.labels.data());
    }

    double total_s = 0;
    for (auto _ : state) {
      state.PauseTiming();
      parameters = initial;
      state.ResumeTiming();
      const auto start = std::chrono::steady_clock::now();
      train();
      total_s += seconds_since(start);
      benchmark::DoNotOptimize(parameters.data());
      benchmark::ClobberMemory();
    }

    const float reference =
        blas.loss(initial.data(), data.batch.inputs.data(), data.batch.labels.data());
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

    const double iterations = static_cast<double>(state.iterations());
    const double seconds_per_iteration = total_s / iterations;
    const double epochs = spec.epochs;
    write_flop_counters(state, epochs * mlp_step_flop(spec, batch), seconds_per_iteration,
                        cpu_peak_flops(threads, false));
    state.counters["t_epoch"] = seconds_per_iteration / epochs;
    state.counters["t_wall"] = seconds_per_iteration;
    state.counters["samples_per_s"] = batch * epochs / seconds_per_iteration;
    state.counters["readbacks"] = epochs;  // the loss is on the host after every step
    state.counters["bytes_h2d"] = 0;
    state.counters["final_loss"] = losses.back();
    if (data.test.rows() > 0) {
      state.counters["test_accuracy"] =
          cpu::mlp_accuracy(spec, parameters.data(), data.test.inputs.data(),
                            data.test.labels.data(), data.test.rows());
    }
    state.counters["batch"] = batch;
    state.counters["hidden"] = spec.hidden.front();
    state.counters["hidden_layers"] = static_cast<double>(spec.hidden.size());
    state.counters["readback"] = 1;
    state.counters["epochs"] = epochs;
    state.counters["blas_threads"] = threads;
    state.SetLabel("data=" + mlp_case.data + " variant=" + (small ? "small" : "openblas") +
                   " input=resident");
  });
}

void register_one(const MlpCase& mlp_case, bool small, int threads) {
  const std::string name = std::string("mlp/cpu/") + (small ? "small" : "openblas") +
                           segment("data", mlp_case.data) + segment("batch", mlp_case.batch) +
                           hidden_segment(mlp_case.hidden) + segment("readback", 1) +
                           segment("threads", threads);
  benchmark::RegisterBenchmark(name.c_str(), mlp_cpu, mlp_case, small, threads)
      ->Unit(benchmark::kMicrosecond);
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
