#pragma once
// The timed loop every training workload's CPU rows share, so each CPU fixture says only which
// trainer, which cases and which checks.

#include <benchmark/benchmark.h>

#include <vector>

#include "harness/host_clock_timer.hpp"

namespace gpubench {

// One untimed warm-up step (it starts OpenBLAS's thread pool and pages in every buffer), then each
// iteration restores `initial` into `parameters` outside the clock and trains losses.size() steps,
// each step's loss into `losses`. `step` trains one step on `parameters` and returns its loss.
// Returns the iteration time on the benchmark clock (harness/host_clock_timer.hpp).
template <typename Step>
double time_cpu_training_steps(benchmark::State& state, std::vector<float>& parameters,
                               const std::vector<float>& initial, std::vector<float>& losses,
                               const Step& step) {
  step();
  HostClockTimer timer(HostClockTimer::Report::benchmark_clock);
  return timer.run(
      state, [&] { parameters = initial; },
      [&] {
        for (float& loss : losses) loss = step();
        benchmark::DoNotOptimize(parameters.data());
      });
}

}  // namespace gpubench
