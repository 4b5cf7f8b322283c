#pragma once
// Measurement policy: device time of one operation from cold caches (nvbench's measure_cold).
// CUDA events on the benchmark's stream bracket the body alone; the L2 is flushed before every
// iteration, so no iteration re-reads operands the previous one left in a 50 MB L2.
//
// Decisions:
// - The flush is enqueued but not waited for: the memset (L2-sized, at least 32 MiB; see
//   harness/l2_flush.hpp) keeps the GPU busy for 10 us or more while the host enqueues the start
//   event, the body and the stop event, so the event window holds the body's execution alone.
//   Waiting for the flush first would leave the GPU idle when the start event fires and count the
//   host's launch latency as compute (the pitfall nvbench's blocking kernel avoids). Launch and
//   synchronisation costs are what the e2e rows and the overhead probes measure.
// - The body runs kWarmupIterations times before timing (module load, cuBLAS heuristics, first
//   touch of device pages). Validation is the caller's, before run().
// - The event time is the iteration time Google Benchmark reports (UseManualTime).
// - An optional DeviceMemoryMeter (harness/device_memory.hpp) is sampled when run() starts, after
//   the warm-up and after the loop, outside the events. The flush buffer is the timer's own and is
//   allocated when it is constructed, so a meter created before the timer sees it.
// - The loop is a ConditionWindow (harness/conditions.hpp): what else took the machine meanwhile.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "harness/conditions.hpp"
#include "harness/device_memory.hpp"
#include "harness/l2_flush.hpp"
#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

class ColdL2Timer {
 public:
  static constexpr int kWarmupIterations = 3;
  // Device memory the timer allocates (its flush buffer) on a GPU with `l2_bytes` of L2.
  static std::size_t device_bytes(std::size_t l2_bytes) { return L2Flusher::bytes_for(l2_bytes); }

  ColdL2Timer(cudaStream_t stream, std::size_t l2_bytes, DeviceMemoryMeter* meter = nullptr)
      : stream_(stream), flusher_(l2_bytes), meter_(meter) {}

  // Warms up, then runs the benchmark loop with body() enqueuing the work on the stream. Returns
  // the mean event seconds per iteration.
  template <typename Body>
  double run(benchmark::State& state, Body&& body) {
    sample_device_memory(meter_);
    for (int warmup = 0; warmup < kWarmupIterations; ++warmup) body();
    GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    sample_device_memory(meter_);
    double total_s = 0;
    ConditionWindow conditions;
    for (auto _ : state) {
      flusher_.flush(stream_);
      start_.record(stream_);
      body();
      stop_.record(stream_);
      stop_.synchronize();
      const double seconds = Event::seconds_between(start_, stop_);
      state.SetIterationTime(seconds);
      total_s += seconds;
    }
    conditions.finish(state.iterations());
    sample_device_memory(meter_);
    return total_s / static_cast<double>(state.iterations());
  }

 private:
  cudaStream_t stream_;
  L2Flusher flusher_;
  DeviceMemoryMeter* meter_;
  Event start_;
  Event stop_;
};

}  // namespace gpubench
