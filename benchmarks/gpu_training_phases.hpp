#pragma once
// The parts of a GPU training iteration that every training workload's GPU rows share
// (docs/timing-method.md, "The overhead model"): t_compute = steps x the GPU time of one step with
// nothing in the way; t_h2d = input copies x the event time of one; t_d2h = readbacks x the event
// time of one 4-byte loss copy. Each piece is measured on its own, before the timed loop, with
// harness/warm_device_timer.hpp.

#include <cuda_runtime.h>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "benchmarks/largest_batch.hpp"
#include "harness/device_memory.hpp"
#include "harness/phase_times.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/gpu_training_core.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench {

// The most training steps one CUDA graph of a graph row holds (fewer when the iteration trains
// fewer; with readbacks, the readback interval). One constant for every training workload, so
// their graph rows replay alike: each replay's launch cost is shared by up to this many steps, and
// the rows' graph_steps counter says how many it was.
constexpr int kGraphSteps = 200;

// How far a GPU training row's losses may be from the fp32 CPU trainer's, relative: the first
// step's, and every later step's (each carries the previous steps' rounding).
struct LossTolerances {
  double first_loss = 0;
  double trajectory = 0;
};

// A row's tolerances: its workload's fp32 bounds, or kMixedPrecisionLossTolerance for every
// checked step of a mixed-precision row.
inline LossTolerances loss_tolerances(TrainingPrecision precision, const LossTolerances& fp32) {
  if (precision == TrainingPrecision::fp32) return fp32;
  return {kMixedPrecisionLossTolerance, kMixedPrecisionLossTolerance};
}

struct TrainingStepParts {
  double compute_per_step_s = 0;
  double h2d_per_step_s = 0;      // 0 when the batch stays on the device
  double d2h_per_readback_s = 0;  // 0 without readbacks

  // The phases of an iteration of `steps` steps with `readbacks` loss copies and wall time wall_s.
  PhaseTimes phases(int steps, double readbacks, double wall_s) const {
    return {steps * h2d_per_step_s, steps * compute_per_step_s, readbacks * d2h_per_readback_s,
            wall_s};
  }
};

// GPU time of one step: a graph of `steps` steps (the trainer's compute graph) replayed once,
// after an untimed replay that uploads it and warms up.
double compute_seconds_per_step(const CudaGraph& compute_graph, int steps, cudaStream_t stream);

// Event time of copying one batch (`input_bytes` of inputs and `label_bytes` of labels) from host
// memory of kind `host_memory` to the device.
double input_copy_seconds(HostMemory host_memory, std::size_t input_bytes, std::size_t label_bytes,
                          cudaStream_t stream);

// Event time of copying the 4-byte loss to pinned host memory.
double loss_readback_seconds(cudaStream_t stream);

// The timed loop of a GPU training row (a trainer already prepared for `steps`): each
// iteration restores the initial weights and waits for that outside the clock, then trains
// `steps` steps and waits for the last; the host time of that is the iteration's (what the user
// waits for). Losses read back during the last iteration land in `losses`. `meter`, when given, is
// sampled by the timer (harness/host_clock_timer.hpp says when). Returns t_wall.
double time_training_runs(benchmark::State& state, cuda::GpuTrainer& trainer, int steps,
                          std::vector<float>* losses, DeviceMemoryMeter* meter = nullptr);

// The run of a largest-batch row (benchmarks/largest_batch.hpp): `steps` eager steps of a built
// trainer, prepared for them, timed as the row's one iteration by time_training_runs() with
// `meter` sampled by its timer.
LargestBatchRun time_largest_batch_steps(benchmark::State& state, cuda::GpuTrainer& trainer,
                                         int steps, DeviceMemoryMeter& meter);

}  // namespace gpubench
