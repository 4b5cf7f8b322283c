#pragma once
// Small pieces every benchmark file uses: the guard that turns exceptions into SkipWithError, name
// building, and the per-iteration phase accumulator behind the DESIGN counters.

#include <benchmark/benchmark.h>

#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace gpubench {

// Runs a benchmark body; any exception (a CUDA error with file:line, a failed allocation) becomes
// SkipWithError with its message, so this benchmark reports the error and the run goes on.
template <typename Body>
void run_guarded(benchmark::State& state, Body&& body) {
  try {
    std::forward<Body>(body)();
  } catch (const std::exception& error) {
    state.SkipWithError(error.what());
  }
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "name:value" path segment.
inline std::string segment(const char* name, long long value) {
  return std::string("/") + name + ":" + std::to_string(value);
}
inline std::string segment(const char* name, const std::string& value) {
  return std::string("/") + name + ":" + value;
}

// "hidden:H" for one hidden layer, "hidden:HxL" for L layers of width H.
inline std::string hidden_segment(const std::vector<int>& hidden) {
  std::string value = std::to_string(hidden.front());
  if (hidden.size() > 1) value += "x" + std::to_string(hidden.size());
  return segment("hidden", value);
}

// Registers a benchmark whose iteration time the body reports with SetIterationTime (CUDA events
// or the host clock), in microseconds.
template <typename... Args>
void register_manual_time(const std::string& name, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

// Sums of per-iteration phase times; counters report their mean per iteration.
struct PhaseTotals {
  double h2d_s = 0;
  double compute_s = 0;
  double d2h_s = 0;
  double wall_s = 0;
  long long iterations = 0;

  void add(double h2d, double compute, double d2h, double wall) {
    h2d_s += h2d;
    compute_s += compute;
    d2h_s += d2h;
    wall_s += wall;
    ++iterations;
  }
  // Writes t_h2d, t_compute, t_d2h, t_wall, t_overhead (seconds per iteration).
  void write_counters(benchmark::State& state) const {
    if (iterations == 0) return;
    const double count = static_cast<double>(iterations);
    state.counters["t_h2d"] = h2d_s / count;
    state.counters["t_compute"] = compute_s / count;
    state.counters["t_d2h"] = d2h_s / count;
    state.counters["t_wall"] = wall_s / count;
    state.counters["t_overhead"] = (wall_s - h2d_s - compute_s - d2h_s) / count;
  }
};

// FLOP, FLOP/s and pct_peak from the floating-point work of one iteration and the measured seconds
// per iteration. FLOP/s is computed here rather than with Counter::kIsRate, which divides by the
// main thread's CPU time: wrong for GPU work and for multi-threaded OpenBLAS.
inline void write_flop_counters(benchmark::State& state, double flop_per_iteration,
                                double seconds_per_iteration, double peak_flops) {
  state.counters["flop"] = flop_per_iteration;
  if (seconds_per_iteration <= 0) return;
  const double rate = flop_per_iteration / seconds_per_iteration;
  state.counters["FLOP/s"] = rate;
  if (peak_flops > 0) state.counters["pct_peak"] = 100.0 * rate / peak_flops;
}

}  // namespace gpubench
