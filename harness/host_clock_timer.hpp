#pragma once
// Measurement policy: the host's steady clock. For CPU work (OpenBLAS products, CPU training) and
// for costs only the host sees (launch issue, synchronisation, event records), which events on the
// GPU's timeline cannot measure; and for synchronised GPU work where what counts is what the user
// waits for (the body must end with its synchronisation).
//
// Decisions:
// - Without an untimed preparation, the clock is read twice for the whole loop, not per
//   iteration: on a microsecond GEMM two clock reads per iteration would be a measurable part of
//   the row (the harness stays within 2% of a bare OpenBLAS loop, docs/measured-results.md).
// - With a preparation (restoring initial weights, a reset plus its synchronisation), the clock
//   runs around the body of each iteration only, and Google Benchmark's own clock is paused for
//   the preparation, so both clocks agree on what was timed.
// - Report::manual hands each iteration's host time to Google Benchmark (UseManualTime), for
//   rows registered with manual time; Report::benchmark_clock leaves Google Benchmark's real-time
//   clock in charge (CPU rows).
// - Warm-up and validation are the caller's, before run(): the first call of a BLAS routine starts
//   OpenBLAS's thread pool and a first kernel launch loads the module, neither of which belongs in
//   a row.
// - An optional DeviceMemoryMeter (harness/device_memory.hpp) is sampled when run() starts, after
//   the first iteration's preparation and after its body, and after the loop, outside both clocks
//   (Google Benchmark's is paused for the sample after the first body). Without a preparation and
//   with Report::benchmark_clock the clocks span the whole loop, so only the first and last.
// - The loop is a ConditionWindow (harness/conditions.hpp), opened before the clock starts and
//   finished after it stops: what else took the machine meanwhile, at no cost to the row's time.
// - The loop is also an InstructionRegion (harness/instruction_region.hpp), inside the clock and
//   paused around the preparation as the clock is: under callgrind, the instructions of exactly
//   what the row times; elsewhere nothing.

#include <benchmark/benchmark.h>

#include <chrono>
#include <type_traits>
#include <utility>

#include "harness/conditions.hpp"
#include "harness/device_memory.hpp"
#include "harness/instruction_region.hpp"

namespace gpubench {

// Seconds since the start of the current iteration's body, for bodies that record a split (the
// launch burst's issue time).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

class HostClockTimer {
 public:
  enum class Report { benchmark_clock, manual };
  explicit HostClockTimer(Report report, DeviceMemoryMeter* meter = nullptr)
      : report_(report), meter_(meter) {}

  // Runs the benchmark loop with `body` (callable as body() or body(const Stopwatch&)) as the
  // timed work of each iteration. Returns the mean seconds per iteration. A Stopwatch body gets
  // the iteration's stopwatch with Report::manual, but the whole loop's with
  // Report::benchmark_clock (the clock is read once per loop there).
  template <typename Body>
  double run(benchmark::State& state, Body&& body) {
    if (report_ == Report::benchmark_clock) {
      sample_device_memory(meter_);
      ConditionWindow conditions;
      const Stopwatch loop;
      InstructionRegion instructions;
      for (auto _ : state) {
        invoke(body, loop);
        benchmark::ClobberMemory();
      }
      instructions.finish(state.iterations());
      const double seconds_per_iteration =
          loop.elapsed_s() / static_cast<double>(state.iterations());
      conditions.finish(state.iterations());
      sample_device_memory(meter_);
      return seconds_per_iteration;
    }
    return run(
        state, [] {}, std::forward<Body>(body));
  }

  // The same with `prepare()` run before each iteration, outside every clock.
  template <typename Prepare, typename Body>
  double run(benchmark::State& state, Prepare&& prepare, Body&& body) {
    sample_device_memory(meter_);
    double total_s = 0;
    bool first = true;
    ConditionWindow conditions;
    InstructionRegion instructions;
    for (auto _ : state) {
      instructions.pause();
      if (report_ == Report::benchmark_clock) state.PauseTiming();
      prepare();
      if (first) sample_device_memory(meter_);
      if (report_ == Report::benchmark_clock) state.ResumeTiming();
      instructions.resume();
      const Stopwatch iteration;
      invoke(body, iteration);
      const double seconds = iteration.elapsed_s();
      benchmark::ClobberMemory();
      total_s += seconds;
      if (report_ == Report::manual) state.SetIterationTime(seconds);
      if (first && meter_ != nullptr) {
        instructions.pause();
        if (report_ == Report::benchmark_clock) state.PauseTiming();
        meter_->sample();
        if (report_ == Report::benchmark_clock) state.ResumeTiming();
        instructions.resume();
      }
      first = false;
    }
    instructions.finish(state.iterations());
    conditions.finish(state.iterations());
    sample_device_memory(meter_);
    return total_s / static_cast<double>(state.iterations());
  }

 private:
  template <typename Body>
  static void invoke(Body& body, const Stopwatch& stopwatch) {
    if constexpr (std::is_invocable_v<Body&, const Stopwatch&>) {
      body(stopwatch);
    } else {
      body();
    }
  }

  Report report_;
  DeviceMemoryMeter* meter_;
};

}  // namespace gpubench
