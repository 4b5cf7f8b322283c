#pragma once
// The GPU side of harness/operation_profiler.hpp: a CUDA event before and after each operation on
// the trainer's stream. Events are taken from a pool sized for the profiled steps up front, so no
// event is created while operations are being enqueued; the times are read after the caller
// synchronises. The time between one operation's end and the next one's begin is summed as
// "launch_gaps": the GPU waiting for the host to issue the next kernel.

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/operation_profiler.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/step_observer.hpp"

namespace gpubench {

class EventOperationProfiler : public StepObserver {
 public:
  // Room for `operations` begin/end pairs; more throw (a trainer naming more operations than the
  // profile was sized for).
  EventOperationProfiler(cudaStream_t stream, std::size_t operations)
      : stream_(stream), events_(2 * operations) {}

  void begin(const char* operation) override {
    names_.emplace_back(operation);
    next_event().record(stream_);
  }
  // end() runs in ObservedOperation's destructor, which must not throw (an exception there, e.g.
  // from a sticky CUDA error while unwinding, would end the whole run): the first failure is kept
  // and per_step() reports it, so only this row fails.
  void end(const char* /*operation*/) noexcept override {
    if (used_ == events_.size()) {
      if (error_.empty()) error_ = "more operations than the profile was sized for";
      return;
    }
    const cudaError_t status = cudaEventRecord(events_[used_++].get(), stream_);
    if (status != cudaSuccess && error_.empty()) {
      error_ = std::string("cudaEventRecord: ") + cudaGetErrorString(status);
      cudaGetLastError();  // clear it, as check_cuda does, so the next call does not see it
    }
  }

  // Call after synchronising the stream: the mean per step over `steps` profiled steps.
  OperationTimes per_step(int steps) const {
    if (!error_.empty()) throw std::runtime_error("operation profile failed: " + error_);
    OperationTimes times;
    for (std::size_t index = 0; index < names_.size(); ++index) {
      times[names_[index]] +=
          Event::seconds_between(events_[2 * index], events_[2 * index + 1]) / steps;
      if (index > 0) {
        times["launch_gaps"] +=
            Event::seconds_between(events_[2 * index - 1], events_[2 * index]) / steps;
      }
    }
    return times;
  }

 private:
  Event& next_event() {
    if (used_ == events_.size()) {
      throw std::length_error("EventOperationProfiler: more operations than it was sized for");
    }
    return events_[used_++];
  }

  cudaStream_t stream_;
  std::vector<Event> events_;
  std::size_t used_ = 0;
  std::vector<std::string> names_;
  std::string error_;
};

}  // namespace gpubench
