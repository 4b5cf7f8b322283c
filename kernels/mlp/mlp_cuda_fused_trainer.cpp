#include "kernels/mlp/mlp_cuda_fused_trainer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.hpp"

namespace gpubench::cuda {

MlpFusedPlan plan_mlp_fused_on_current_device(const MlpSpec& spec, int batch) {
  int device = 0;
  int available = 0;
  GPUBENCH_CUDA_CHECK(cudaGetDevice(&device));
  GPUBENCH_CUDA_CHECK(
      cudaDeviceGetAttribute(&available, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return plan_mlp_fused(spec, batch, static_cast<std::size_t>(available));
}

MlpFusedTrainer::MlpFusedTrainer(const MlpSpec& spec, int batch, const float* inputs,
                                 const int* labels, const float* initial_parameters)
    : spec_(spec), batch_(batch), plan_(plan_mlp_fused_on_current_device(spec, batch)) {
  if (!plan_.fits()) throw std::runtime_error(plan_.why_not());
  validate_labels(spec_, labels, batch);
  const std::size_t parameter_bytes = spec_.parameter_count() * sizeof(float);
  parameters_ = DeviceBuffer(parameter_bytes);
  initial_parameters_ = DeviceBuffer(parameter_bytes);
  inputs_ = DeviceBuffer(static_cast<std::size_t>(batch) * spec_.inputs * sizeof(float));
  labels_ = DeviceBuffer(static_cast<std::size_t>(batch) * sizeof(int));
  loss_history_ = DeviceBuffer(static_cast<std::size_t>(spec_.epochs) * sizeof(float));
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(
      cudaMemcpyAsync(inputs_.data(), inputs, inputs_.bytes(), cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(
      cudaMemcpyAsync(labels_.data(), labels, labels_.bytes(), cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(initial_parameters_.data(), initial_parameters,
                                      parameter_bytes, cudaMemcpyHostToDevice, stream));
  enqueue_reset();
  GPUBENCH_CUDA_CHECK(allow_mlp_fused_shared_memory(spec_, plan_));
  stream_.synchronize();
}

void MlpFusedTrainer::enqueue_reset() {
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(parameters_.data(), initial_parameters_.data(),
                                      parameters_.bytes(), cudaMemcpyDeviceToDevice,
                                      stream_.get()));
}

void MlpFusedTrainer::launch(int epochs) {
  if (epochs < 1 || epochs > spec_.epochs) {
    throw std::invalid_argument("fused launch: epochs must be in 1.." +
                                std::to_string(spec_.epochs));
  }
  GPUBENCH_CUDA_CHECK(launch_mlp_fused(spec_, plan_, parameters_.as<float>(), inputs_.as<float>(),
                                       labels_.as<int>(), loss_history_.as<float>(), epochs,
                                       stream_.get()));
}

std::vector<float> MlpFusedTrainer::loss_history(int epochs) {
  const auto count = static_cast<std::size_t>(std::clamp(epochs, 0, spec_.epochs));
  return read_device_floats(loss_history_, count, stream_.get());
}

std::vector<float> MlpFusedTrainer::parameters() {
  return read_device_floats(parameters_, spec_.parameter_count(), stream_.get());
}

std::size_t MlpFusedTrainer::device_bytes() const {
  return parameters_.bytes() + initial_parameters_.bytes() + inputs_.bytes() + labels_.bytes() +
         loss_history_.bytes();
}

}  // namespace gpubench::cuda
