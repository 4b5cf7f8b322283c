// memory/gpu/largest_batch/net:N/data:D[/hidden:H]/precision:P/iterations:1/manual_time
//   How large a batch a net's GPU trainer can train on this device, by the net's model of its own
//   device buffers, and one run near that size which shows the trainer really does run there and
//   what it really takes.
//
// The fixture, once per row (one timed iteration: Google Benchmark must not repeat a setup that
// fills the device):
//  1. reads the device's free memory: a DeviceMemoryMeter's baseline (harness/device_memory.hpp),
//     device_bytes_free;
//  2. finds batch_largest, the largest batch whose modelled device bytes (the net's
//     device_bytes_at, a function of the shapes alone) fit in that free memory less the margin of
//     usable_device_bytes (5% and 256 MiB: page rounding, cuBLAS's handle, the context's growth);
//  3. trains the net's `steps` eager steps at the run batch (`batch`): kRunFraction of
//  batch_largest, or less
//     where the trainer accepts no larger batch (the CNN's im2col matrices must stay within
//     cuBLAS's int dimensions: 10485 images) or where the run's host memory would pass
//     kHostBytesBound, whichever is smallest. The batch counter is what ran; a run batch below
//     kRunFraction x batch_largest is one of those two caps. It writes t_step (host time of the
//     synchronised steps / steps), final_loss (checked finite), device_bytes_model at the run
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
// Nets: LargestBatchNet is the extension point. A net gives its model (device_bytes_at), its
// host memory at a batch, the largest batch its trainer accepts, and run(): build the trainer at a
// batch and time its steps with time_steps() below. The sweep's largest_batch_cases name the rows;
// make_net() maps a case's net name to its LargestBatchNet: the CNN (fp32), and the MLP on
// synthetic data at fp32, bf16 or fp16 (hidden layers from the case).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/mlp_workload.hpp"
#include "benchmarks/registration.hpp"
#include "harness/dataset.hpp"
#include "harness/device_memory.hpp"
#include "harness/image_dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {

namespace {

// The run batch is this fraction of batch_largest (rounded down, at least 1).
constexpr double kRunFraction = 0.9;
// Steps of the CNN's timed run: enough for a step time well above the host clock's resolution,
// few enough that a batch filling an 80 GB device trains in about a second.
constexpr int kCnnSteps = 10;
// The MLP's: a step of the 4096 x 4096 net at a million rows is 1e14 flop, seconds in fp32.
constexpr int kMlpSteps = 3;
// The host memory a run may hold (its data and the trainer's host copies). A run whose run batch
// would need more trains at the largest batch within it instead (see the top of the file).
constexpr std::size_t kHostBytesBound = std::size_t{16} << 30;
// Distinct images a CNN run reads from its data set; a larger batch repeats them. Step time and
// memory do not depend on the pixel values (the products and the kernels run the same for any
// values), and repeating keeps a batch of thousands of images cheap to make, synthetic or not.
constexpr int kDistinctCnnImages = 1024;

// What a run reports: the time of one step, the last step's loss, and the device bytes the
// trainer says it allocated (checked against the model).
struct LargestBatchRun {
  double seconds_per_step = 0;
  float final_loss = 0;
  std::size_t trainer_device_bytes = 0;
};

struct LargestBatchNet {
  // Modelled device bytes of the trainer at a batch, before anything is allocated;
  // non-decreasing in the batch and defined for every batch >= 1 (largest_fitting_batch).
  std::function<std::size_t(int batch)> device_bytes_at;
  // Host bytes the run holds at a batch: its data and the trainer's host copies.
  std::function<std::size_t(int batch)> host_bytes_at;
  // The largest batch the trainer accepts, whatever the memory.
  int max_batch = 0;
  // Steps of the timed run.
  int steps = 0;
  // Builds the trainer at `batch` and trains `steps` steps, timed by time_steps() with `meter`.
  std::function<LargestBatchRun(benchmark::State&, int batch, int steps, DeviceMemoryMeter&)> run;
};

// Times `steps` eager steps of a built trainer as the row's one iteration (the timed loop of every
// GPU training row, benchmarks/gpu_training_phases.hpp), with `meter` sampled by its timer.
template <typename Trainer>
LargestBatchRun time_steps(benchmark::State& state, Trainer& trainer, int steps,
                           DeviceMemoryMeter& meter) {
  std::vector<float> losses;
  const double wall_s = time_training_runs(state, trainer, steps, &losses, &meter);
  return {wall_s / steps, trainer.last_loss(), trainer.device_bytes()};
}

// `batch` training images of the CNN data set `data`: its first min(batch, kDistinctCnnImages)
// images, repeated.
ImageSet repeated_cnn_images(const std::string& data, int batch) {
  const int distinct = std::min(batch, kDistinctCnnImages);
  const ImageSet source = load_cnn_data(data, distinct).train;
  constexpr auto kImageFloats = static_cast<std::size_t>(CnnSpec::image_floats());
  ImageSet images;
  images.rows = batch;
  images.pixels.resize(static_cast<std::size_t>(batch) * kImageFloats);
  images.labels.resize(static_cast<std::size_t>(batch));
  for (int image = 0; image < batch; ++image) {
    const int from = image % distinct;
    std::copy_n(source.image(from), kImageFloats,
                images.pixels.data() + static_cast<std::size_t>(image) * kImageFloats);
    images.labels[static_cast<std::size_t>(image)] = source.labels[static_cast<std::size_t>(from)];
  }
  return images;
}

LargestBatchNet cnn_net(const std::string& data) {
  const CnnSpec spec;
  LargestBatchNet net;
  net.device_bytes_at = [spec](int batch) { return cuda::cnn_gpu_device_bytes(spec, batch); };
  // The repeated images and labels, and the trainer's pageable and pinned copies of them (the
  // distinct images and the data set's test split, at most a few thousand images, are left out).
  net.host_bytes_at = [](int batch) {
    const std::size_t batch_bytes =
        static_cast<std::size_t>(batch) *
        (static_cast<std::size_t>(CnnSpec::image_floats()) * sizeof(float) + sizeof(int));
    return batch_bytes + cuda::cnn_gpu_host_bytes(batch);
  };
  net.max_batch = cuda::cnn_gpu_max_batch(spec);
  net.steps = kCnnSteps;
  net.run = [spec, data](benchmark::State& state, int batch, int steps, DeviceMemoryMeter& meter) {
    const ImageSet images = repeated_cnn_images(data, batch);
    const std::vector<float> initial = initial_cnn_parameters(spec);
    cuda::CnnGpuTrainer trainer(spec, batch, images.pixels.data(), images.labels.data(),
                                initial.data());
    trainer.prepare(cuda::CnnRunConfig{}, steps);  // eager, resident batch, no readbacks
    return time_steps(state, trainer, steps, meter);
  };
  return net;
}

// The MLP on synthetic data (the one data set with as many rows as a batch asks for) at a
// precision: bf16 and fp16 steps keep 2-byte activations, so they fit a larger batch.
LargestBatchNet mlp_net(const MlpSpec& spec, MlpPrecision precision) {
  LargestBatchNet net;
  net.device_bytes_at = [spec, precision](int batch) {
    return cuda::MlpGpuTrainer::planned_device_bytes(spec, batch, precision);
  };
  // The generated rows and the trainer's pageable and pinned copies of them.
  net.host_bytes_at = [spec](int batch) {
    return 3 * static_cast<std::size_t>(batch) *
           (static_cast<std::size_t>(spec.inputs) * sizeof(float) + sizeof(int));
  };
  net.max_batch = cuda::MlpGpuTrainer::max_batch();
  net.steps = kMlpSteps;
  net.run = [spec, precision](benchmark::State& state, int batch, int steps,
                              DeviceMemoryMeter& meter) {
    const MlpData data = load_mlp_data("synthetic", batch);
    const std::vector<float> initial = initial_parameters(spec);
    cuda::MlpGpuTrainer trainer(spec, batch, data.batch.inputs.data(), data.batch.labels.data(),
                                initial.data(), precision);
    trainer.prepare(cuda::MlpRunConfig{}, steps);  // eager, resident batch, no readbacks
    return time_steps(state, trainer, steps, meter);
  };
  return net;
}

std::optional<MlpPrecision> mlp_precision_from_name(const std::string& name) {
  for (MlpPrecision precision : {MlpPrecision::fp32, MlpPrecision::bf16, MlpPrecision::fp16}) {
    if (name == mlp_precision_name(precision)) return precision;
  }
  return std::nullopt;
}

// The net a sweep case names. Throws std::invalid_argument for a net or precision nobody runs.
LargestBatchNet make_net(const LargestBatchCase& largest_batch_case) {
  if (largest_batch_case.net == "cnn" && largest_batch_case.precision == "fp32") {
    return cnn_net(largest_batch_case.data);
  }
  const std::optional<MlpPrecision> precision =
      mlp_precision_from_name(largest_batch_case.precision);
  if (largest_batch_case.net == "mlp" && largest_batch_case.data == "synthetic" && precision) {
    MlpSpec spec;
    spec.inputs = kSyntheticFeatures;
    spec.hidden = largest_batch_case.hidden;
    spec.classes = kSyntheticClasses;
    spec.validate();
    return mlp_net(spec, *precision);
  }
  throw std::invalid_argument("no largest-batch run for net " + largest_batch_case.net +
                              " at precision " + largest_batch_case.precision);
}

void skip(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
}

void largest_batch(benchmark::State& state, const RowId& id, const LargestBatchNet& net) {
  require_gpu();
  DeviceMemoryMeter meter;
  const std::size_t free_bytes = meter.baseline_free_bytes();
  const std::size_t usable_bytes = usable_device_bytes(free_bytes);
  const std::string free_text = std::to_string(free_bytes) + " bytes free (" +
                                std::to_string(usable_bytes) + " usable after the margin)";
  const int batch_largest = largest_fitting_batch(net.device_bytes_at, usable_bytes);
  if (batch_largest == 0) {
    skip(state, "does not fit in device memory: needs " + std::to_string(net.device_bytes_at(1)) +
                    " bytes at batch 1, " + free_text);
    return;
  }
  const int near_largest =
      std::max(1, static_cast<int>(kRunFraction * static_cast<double>(batch_largest)));
  const int host_largest = largest_fitting_batch(net.host_bytes_at, kHostBytesBound, net.max_batch);
  if (host_largest == 0) {
    skip(state, "host memory: batch 1 needs " + std::to_string(net.host_bytes_at(1)) +
                    " bytes, more than the bound of " + std::to_string(kHostBytesBound));
    return;
  }
  const int batch = std::min({near_largest, net.max_batch, host_largest});
  const std::size_t model_bytes = net.device_bytes_at(batch);

  LargestBatchRun run;
  try {
    run = net.run(state, batch, net.steps, meter);
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
      .set(Counter::steps, net.steps)
      .set(Counter::t_step, run.seconds_per_step)
      .set(Counter::final_loss, run.final_loss)
      .publish();
}

}  // namespace

void register_largest_batch(const Sweep& sweep) {
  for (const LargestBatchCase& largest_batch_case : sweep.largest_batch_cases) {
    RowId id{"memory",
             "gpu",
             "largest_batch",
             {text_parameter("net", largest_batch_case.net, LabelKey::net),
              text_parameter("data", largest_batch_case.data, LabelKey::data)}};
    if (!largest_batch_case.hidden.empty()) {
      id = id.with(hidden_parameter(largest_batch_case.hidden));
    }
    id = id.with(text_parameter("precision", largest_batch_case.precision, LabelKey::precision));
    register_row(id, RowTiming{IterationTime::manual, 0, 1}, largest_batch,
                 make_net(largest_batch_case));
  }
}

}  // namespace gpubench
