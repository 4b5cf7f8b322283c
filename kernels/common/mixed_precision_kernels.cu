#include "kernels/common/mixed_precision_kernels.cuh"

#include "kernels/common/grid_stride.cuh"
#include "kernels/common/low_precision.cuh"

namespace gpubench::cuda {

namespace {

template <typename T>
__global__ void convert_kernel(T* low, const float* values, std::size_t count) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    low[i] = from_float<T>(values[i]);
  }
}

template <typename T>
__global__ void scale_convert_kernel(T* low, const float* values, std::size_t count,
                                     const DeviceLossScale* loss_scale) {
  const float scale = loss_scale != nullptr ? loss_scale->state.scale : 1.0F;
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    low[i] = from_float<T>(values[i] * scale);
  }
}

__global__ void find_non_finite_kernel(const float* gradient, std::size_t count,
                                       DeviceLossScale* loss_scale) {
  const float inverse = loss_scale->inverse_scale;
  int found = 0;
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    found |= finite_bits(gradient[i] * inverse) ? 0 : 1;
  }
  // One write per block that found one; every writer stores the same 1, so order does not matter.
  if (__syncthreads_or(found) != 0 && threadIdx.x == 0) loss_scale->found_non_finite = 1;
}

template <typename T>
__global__ void mixed_sgd_update_kernel(float* parameters, T* low, const float* gradient,
                                        std::size_t count, float learning_rate,
                                        const DeviceLossScale* loss_scale) {
  float inverse = 1.0F;
  if (loss_scale != nullptr) {
    if (loss_scale->found_non_finite != 0) return;  // skipped step: nothing changes
    inverse = loss_scale->inverse_scale;
  }
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    const float updated = parameters[i] - learning_rate * (gradient[i] * inverse);
    parameters[i] = updated;
    low[i] = from_float<T>(updated);
  }
}

__device__ float inverse_of(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

__global__ void loss_scale_update_kernel(DeviceLossScale* loss_scale, LossScalerSettings settings) {
  advance_loss_scale(loss_scale->state, settings, loss_scale->found_non_finite != 0);
  loss_scale->inverse_scale = inverse_of(loss_scale->state.scale);
  loss_scale->found_non_finite = 0;
}

__global__ void loss_scale_reset_kernel(DeviceLossScale* loss_scale, float initial_scale) {
  loss_scale->state = LossScaleState{};
  loss_scale->state.scale = initial_scale;
  loss_scale->inverse_scale = inverse_of(initial_scale);
  loss_scale->found_non_finite = 0;
}

}  // namespace

cudaError_t launch_convert(void* low, const float* values, std::size_t count,
                           TrainingPrecision precision, cudaStream_t stream) {
  return for_low_precision(precision, [&](auto type) {
    using T = decltype(type);
    convert_kernel<T><<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(
        static_cast<T*>(low), values, count);
    return cudaGetLastError();
  });
}

cudaError_t launch_scale_convert(void* low, const float* values, std::size_t count,
                                 const DeviceLossScale* loss_scale, TrainingPrecision precision,
                                 cudaStream_t stream) {
  return for_low_precision(precision, [&](auto type) {
    using T = decltype(type);
    scale_convert_kernel<T><<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(
        static_cast<T*>(low), values, count, loss_scale);
    return cudaGetLastError();
  });
}

cudaError_t launch_find_non_finite(const float* gradient, std::size_t count,
                                   DeviceLossScale* loss_scale, cudaStream_t stream) {
  find_non_finite_kernel<<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(
      gradient, count, loss_scale);
  return cudaGetLastError();
}

cudaError_t launch_mixed_sgd_update(float* parameters, void* low, const float* gradient,
                                    std::size_t count, float learning_rate,
                                    const DeviceLossScale* loss_scale, TrainingPrecision precision,
                                    cudaStream_t stream) {
  return for_low_precision(precision, [&](auto type) {
    using T = decltype(type);
    mixed_sgd_update_kernel<T><<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(
        parameters, static_cast<T*>(low), gradient, count, learning_rate, loss_scale);
    return cudaGetLastError();
  });
}

cudaError_t launch_loss_scale_update(DeviceLossScale* loss_scale,
                                     const LossScalerSettings& settings, cudaStream_t stream) {
  loss_scale_update_kernel<<<1, 1, 0, stream>>>(loss_scale, settings);
  return cudaGetLastError();
}

cudaError_t launch_loss_scale_reset(DeviceLossScale* loss_scale, float initial_scale,
                                    cudaStream_t stream) {
  loss_scale_reset_kernel<<<1, 1, 0, stream>>>(loss_scale, initial_scale);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
