#pragma once
// What a training workload declares for its largest-batch rows
// (memory/gpu/largest_batch/net:N/data:D[/...]/precision:P/iterations:1/manual_time):
// benchmarks/largest_batch.cpp runs any of them, and its top says how. A workload builds its rows
// in its own files (its TrainingWorkload::largest_batch_rows, benchmarks/training_workload.hpp).

#include <benchmark/benchmark.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "harness/result_row.hpp"

namespace gpubench {

class DeviceMemoryMeter;

// What a run reports: the time of one step, the last step's loss, and the device bytes the
// trainer says it allocated (checked against the model).
struct LargestBatchRun {
  double seconds_per_step = 0;
  float final_loss = 0;
  std::size_t trainer_device_bytes = 0;
};

// A workload's GPU trainer near the largest batch: its memory model, its limits, and the run.
struct LargestBatchTrainer {
  // Modelled device bytes of the trainer at a batch, before anything is allocated;
  // non-decreasing in the batch and defined for every batch >= 1 (largest_fitting_batch).
  std::function<std::size_t(int batch)> device_bytes_at;
  // Host bytes the run holds at a batch: its data and the trainer's host copies.
  std::function<std::size_t(int batch)> host_bytes_at;
  // The largest batch the trainer accepts, whatever the memory.
  int max_batch = 0;
  // Steps of the timed run.
  int steps = 0;
  // Builds the trainer at `batch` and trains `steps` eager steps, timed as the row's one iteration
  // by time_largest_batch_steps() (benchmarks/gpu_training_phases.hpp) with `meter`.
  std::function<LargestBatchRun(benchmark::State&, int batch, int steps, DeviceMemoryMeter&)> run;
};

// One largest-batch row of a workload: named memory/gpu/largest_batch/net:<the workload's
// name>/data:<data>/<shape parameters>/precision:<precision>.
struct LargestBatchRow {
  std::string data;
  // Name parameters between data and precision that tell the row's net apart (may be none).
  std::vector<NameParameter> shape_parameters;
  std::string precision;
  LargestBatchTrainer trainer;
};

}  // namespace gpubench
