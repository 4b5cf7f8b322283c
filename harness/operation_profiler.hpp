#pragma once
// Measurement policy: where one training step spends its time, operation by operation, in a
// profiling run of its own after the timed loop (the per-operation clock reads, and on the GPU the
// events between operations, would distort the timed rows). A trainer names each operation
// through kernels/common/step_observer.hpp; this observer sums the time of each name over the
// profiled steps and reports the mean per step.
//
// HostOperationProfiler: the host steady clock around each operation (CPU paths: the work is the
// host's). EventOperationProfiler (harness/event_operation_profiler.hpp): CUDA events around each
// operation on the trainer's stream (GPU eager paths), plus the gaps between them, which are the
// launch cost a step pays between kernels.

#include <map>
#include <string>

#include "harness/host_clock_timer.hpp"
#include "kernels/common/step_observer.hpp"

namespace gpubench {

// Mean seconds per step of each named operation.
using OperationTimes = std::map<std::string, double>;

class HostOperationProfiler : public StepObserver {
 public:
  void begin(const char* /*operation*/) override { stopwatch_ = Stopwatch(); }
  void end(const char* operation) noexcept override {
    totals_s_[operation] += stopwatch_.elapsed_s();
  }

  // The mean per step over `steps` profiled steps.
  OperationTimes per_step(int steps) const {
    OperationTimes times;
    for (const auto& [operation, seconds] : totals_s_) times[operation] = seconds / steps;
    return times;
  }

 private:
  Stopwatch stopwatch_;
  std::map<std::string, double> totals_s_;
};

}  // namespace gpubench
