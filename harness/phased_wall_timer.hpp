#pragma once
// Measurement policy: the end-to-end iteration as an application sees it. CUDA events on the
// benchmark's stream mark the end of each phase (host-to-device copies, compute, device-to-host
// copies), and the host steady clock runs around the whole synchronised iteration, so one
// iteration yields both what the user waits for (t_wall) and where the GPU spent it (t_h2d,
// t_compute, t_d2h; the remainder is t_overhead).
//
// Decisions:
// - The iteration ends by synchronising on its last event, inside the host clock: the wait is part
//   of what the user pays. Everything is enqueued on one stream, so the events order the phases.
// - Report::wall gives Google Benchmark the host time (e2e GEMM, a fused training kernel: the row
//   is "what does the user wait for"); Report::events gives it the event time from the start to
//   the last mark (the transfer probes: the row is "how long does the copy take on the GPU's
//   timeline"; the host time is still reported as t_wall).
// - prepare() runs before each iteration, outside both clocks (restoring initial weights and
//   waiting for that), so an iteration starts with an idle stream.
// - run_once() runs the body with the same events but records nothing: for validation (checked
//   once, outside timing: a fast wrong answer is a bug, not a result) and warm-up (module load,
//   cuBLAS heuristics, first touch of device pages), which run() does kWarmupIterations times.
// - An optional DeviceMemoryMeter (harness/device_memory.hpp) is sampled when run() starts, after
//   the warm-up and after the loop, outside both clocks.
// - The loop is a ConditionWindow (harness/conditions.hpp): what else took the machine meanwhile.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <array>
#include <stdexcept>
#include <utility>

#include "harness/conditions.hpp"
#include "harness/device_memory.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/phase_times.hpp"
#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

class PhasedWallTimer {
 public:
  enum class Report { wall, events };
  static constexpr int kWarmupIterations = 3;

  // What a body calls after enqueuing each phase: records the event that ends it.
  class Marks {
   public:
    void end(Phase phase) {
      if (count_ == kMaxMarks) throw std::logic_error("PhasedWallTimer: more than 3 phase marks");
      timer_->ends_[count_] = phase;
      timer_->events_[count_ + 1].record(timer_->stream_);
      ++count_;
    }

   private:
    friend class PhasedWallTimer;
    explicit Marks(PhasedWallTimer* timer) : timer_(timer) {}
    PhasedWallTimer* timer_;
    int count_ = 0;
  };

  PhasedWallTimer(cudaStream_t stream, Report report, DeviceMemoryMeter* meter = nullptr)
      : stream_(stream), report_(report), meter_(meter) {}

  // Runs body(Marks&) once, untimed, and waits for it.
  template <typename Body>
  void run_once(Body&& body) {
    iterate(body);
  }

  // Warms up, then runs the benchmark loop. Returns the mean phase and wall times per iteration.
  template <typename Prepare, typename Body>
  PhaseTimes run(benchmark::State& state, Prepare&& prepare, Body&& body) {
    sample_device_memory(meter_);
    for (int warmup = 0; warmup < kWarmupIterations; ++warmup) {
      prepare();
      iterate(body);
    }
    sample_device_memory(meter_);
    PhaseTimes totals;
    ConditionWindow conditions;
    for (auto _ : state) {
      prepare();
      const PhaseTimes times = iterate(body);
      totals.h2d_s += times.h2d_s;
      totals.compute_s += times.compute_s;
      totals.d2h_s += times.d2h_s;
      totals.wall_s += times.wall_s;
      state.SetIterationTime(report_ == Report::wall ? times.wall_s
                                                     : times.h2d_s + times.compute_s + times.d2h_s);
    }
    conditions.finish(state.iterations());
    sample_device_memory(meter_);
    const double iterations = static_cast<double>(state.iterations());
    return {totals.h2d_s / iterations, totals.compute_s / iterations, totals.d2h_s / iterations,
            totals.wall_s / iterations};
  }
  template <typename Body>
  PhaseTimes run(benchmark::State& state, Body&& body) {
    return run(
        state, [] {}, std::forward<Body>(body));
  }

 private:
  template <typename Body>
  PhaseTimes iterate(Body& body) {
    const Stopwatch wall;
    events_[0].record(stream_);
    Marks marks(this);
    body(marks);
    events_[marks.count_].synchronize();
    PhaseTimes times;
    times.wall_s = wall.elapsed_s();
    for (int index = 0; index < marks.count_; ++index) {
      times[ends_[index]] += Event::seconds_between(events_[index], events_[index + 1]);
    }
    return times;
  }

  static constexpr int kMaxMarks = 3;
  cudaStream_t stream_;
  Report report_;
  DeviceMemoryMeter* meter_;
  std::array<Event, kMaxMarks + 1> events_;
  std::array<Phase, kMaxMarks> ends_{};
};

}  // namespace gpubench
