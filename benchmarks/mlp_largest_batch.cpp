// The MLP's largest-batch rows (benchmarks/largest_batch.hpp): the 4096 x 4096 net on synthetic
// data (the one data set with as many rows as a batch asks for), in fp32 and in bf16, whose step
// keeps 2-byte activations and so fits a larger batch: about a million rows on an 80 GB device.

#include <cstddef>
#include <string>
#include <vector>

#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/largest_batch.hpp"
#include "benchmarks/mlp_workload.hpp"
#include "harness/dataset.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {

namespace {

// Steps of the timed run: a step of the 4096 x 4096 net at a million rows is 1e14 flop, seconds in
// fp32.
constexpr int kMlpLargestBatchSteps = 3;

LargestBatchTrainer mlp_largest_batch_trainer(const MlpSpec& spec, MlpPrecision precision) {
  LargestBatchTrainer trainer;
  trainer.device_bytes_at = [spec, precision](int batch) {
    return cuda::MlpGpuTrainer::planned_device_bytes(spec, batch, precision);
  };
  // The generated rows and the trainer's pageable and pinned copies of them.
  trainer.host_bytes_at = [spec](int batch) {
    return 3 * static_cast<std::size_t>(batch) *
           (static_cast<std::size_t>(spec.inputs) * sizeof(float) + sizeof(int));
  };
  trainer.max_batch = cuda::MlpGpuTrainer::max_batch();
  trainer.steps = kMlpLargestBatchSteps;
  trainer.run = [spec, precision](benchmark::State& state, int batch, int steps,
                                  DeviceMemoryMeter& meter) {
    const TabularData data = load_tabular_data("synthetic", batch);
    const std::vector<float> initial = initial_parameters(spec);
    cuda::MlpGpuTrainer gpu_trainer(spec, batch, data.batch.inputs.data(), data.batch.labels.data(),
                                    initial.data(), precision);
    gpu_trainer.prepare(cuda::TrainingRunConfig{}, steps);  // eager, resident batch, no readbacks
    return time_largest_batch_steps(state, gpu_trainer, steps, meter);
  };
  return trainer;
}

}  // namespace

std::vector<LargestBatchRow> mlp_largest_batch_rows(const Sweep& /*sweep*/) {
  MlpSpec spec;
  spec.inputs = kSyntheticFeatures;
  spec.hidden = {4096, 4096};
  spec.classes = kSyntheticClasses;
  spec.validate();
  std::vector<LargestBatchRow> rows;
  for (MlpPrecision precision : {MlpPrecision::fp32, MlpPrecision::bf16}) {
    rows.push_back({"synthetic",
                    {hidden_parameter(spec.hidden)},
                    mlp_precision_name(precision),
                    mlp_largest_batch_trainer(spec, precision)});
  }
  return rows;
}

}  // namespace gpubench
