// memory/gpu/largest_batch/net:N/data:D[/...]/precision:P/iterations:1/manual_time
//   How large a batch a training workload's GPU trainer can train on this device, by the
//   trainer's model of its own device buffers, and one run near that size which shows the trainer
//   really does run there and what it really takes.
//
// The fixture, once per row (one timed iteration: Google Benchmark must not repeat a setup that
// fills the device):
//  1. reads the device's free memory: a DeviceMemoryMeter's baseline (harness/device_memory.hpp),
//     device_bytes_free;
//  2. finds batch_largest, the largest batch whose modelled device bytes (the trainer's
//     device_bytes_at, a function of the shapes alone) fit in that free memory less the margin of
//     usable_device_bytes (5% and 256 MiB: page rounding, cuBLAS's handle, the context's growth);
//  3. trains the trainer's `steps` eager steps at the run batch (`batch`): kRunFraction of
//     batch_largest, or less where the trainer accepts no larger batch (its max_batch: a product's
//     dimensions must stay within cuBLAS's int range, say) or where the run's host memory would
//     pass kHostBytesBound, whichever is smallest. The batch counter is what ran; a run batch
//     below kRunFraction x batch_largest is one of those two caps. It writes t_step (host time of
//     the synchronised steps / steps), final_loss (checked finite), device_bytes_model at the run
//     batch (checked equal to what the trainer allocated) and device_bytes_peak (the meter,
//     sampled from before the trainer exists to the end of its steps).
// Why kRunFraction rather than batch_largest itself: free memory is read once, before the run,
// and other processes or the driver may take some in between; one tenth below keeps the check of
// the model from failing on the edge, and says as much about the model (peak against model).
//
// A trainer whose allocation fails (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED) is a
// skip, "does not fit in device memory: ...", as is a device on which not even batch 1 fits; the
// next rows run. The CUDA error state is cleared first (an allocation failure is not sticky).
//
// The rows: each training workload's largest_batch_rows (benchmarks/training_workload.hpp) gives
// them, each with its LargestBatchTrainer (benchmarks/largest_batch.hpp), in the order of
// training_workloads().

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/largest_batch.hpp"
#include "benchmarks/registration.hpp"
#include "benchmarks/training_workload.hpp"
#include "harness/device_memory.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"

namespace gpubench {

namespace {

// The run batch is this fraction of batch_largest (rounded down, at least 1).
constexpr double kRunFraction = 0.9;
// The host memory a run may hold (its data and the trainer's host copies). A run whose run batch
// would need more trains at the largest batch within it instead (see the top of the file).
constexpr std::size_t kHostBytesBound = std::size_t{16} << 30;

void skip(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
}

void largest_batch(benchmark::State& state, const RowId& id, const LargestBatchTrainer& trainer) {
  require_gpu();
  DeviceMemoryMeter meter;
  const std::size_t free_bytes = meter.baseline_free_bytes();
  const std::size_t usable_bytes = usable_device_bytes(free_bytes);
  const std::string free_text = std::to_string(free_bytes) + " bytes free (" +
                                std::to_string(usable_bytes) + " usable after the margin)";
  const int batch_largest = largest_fitting_batch(trainer.device_bytes_at, usable_bytes);
  if (batch_largest == 0) {
    skip(state, "does not fit in device memory: needs " +
                    std::to_string(trainer.device_bytes_at(1)) + " bytes at batch 1, " + free_text);
    return;
  }
  const int near_largest =
      std::max(1, static_cast<int>(kRunFraction * static_cast<double>(batch_largest)));
  const int host_largest =
      largest_fitting_batch(trainer.host_bytes_at, kHostBytesBound, trainer.max_batch);
  if (host_largest == 0) {
    skip(state, "host memory: batch 1 needs " + std::to_string(trainer.host_bytes_at(1)) +
                    " bytes, more than the bound of " + std::to_string(kHostBytesBound));
    return;
  }
  const int batch = std::min({near_largest, trainer.max_batch, host_largest});
  const std::size_t model_bytes = trainer.device_bytes_at(batch);

  LargestBatchRun run;
  try {
    run = trainer.run(state, batch, trainer.steps, meter);
  } catch (const CudaError& error) {
    if (!error.out_of_memory()) throw;
    // Already cleared by the check that threw; cleared here too so that nothing this row left
    // behind reaches the next row's first launch check.
    static_cast<void>(cudaGetLastError());
    skip(state, "does not fit in device memory: needs " + std::to_string(model_bytes) +
                    " bytes at batch " + std::to_string(batch) + " by the model, " + free_text +
                    " when the row started; " + error.what());
    return;
  }
  if (run.trainer_device_bytes != model_bytes) {
    skip(state, "the memory model is wrong: " + std::to_string(model_bytes) + " bytes at batch " +
                    std::to_string(batch) + ", the trainer allocated " +
                    std::to_string(run.trainer_device_bytes));
    return;
  }
  if (!std::isfinite(run.final_loss)) {
    skip(state,
         "training diverged at batch " + std::to_string(batch) + ": the final loss is not finite");
    return;
  }
  ResultRow(state, id)
      .set(Counter::batch, batch)
      .set(Counter::batch_largest, batch_largest)
      .set(Counter::device_bytes_free, static_cast<double>(free_bytes))
      .device_memory(model_bytes, meter.peak_bytes())
      .set(Counter::steps, trainer.steps)
      .set(Counter::t_step, run.seconds_per_step)
      .set(Counter::final_loss, run.final_loss)
      .publish();
}

}  // namespace

void register_largest_batch(const Sweep& sweep) {
  for (const TrainingWorkload* workload : training_workloads()) {
    if (workload->largest_batch_rows == nullptr) continue;
    for (const LargestBatchRow& row : workload->largest_batch_rows(sweep)) {
      RowId id{"memory",
               "gpu",
               "largest_batch",
               {text_parameter("net", workload->name, LabelKey::net),
                text_parameter("data", row.data, LabelKey::data)}};
      for (const NameParameter& parameter : row.shape_parameters) id = id.with(parameter);
      id = id.with(text_parameter("precision", row.precision, LabelKey::precision));
      register_row(id, RowTiming{IterationTime::manual, 0, 1}, largest_batch, row.trainer);
    }
  }
}

}  // namespace gpubench
