#pragma once
// The kernels every mixed-precision trainer (a training workload's CUDA trainer, in
// kernels/<workload>/) adds to its fp32 step: the casts that make the 2-byte (bf16 or
// fp16) operands of the layer products, the update of the fp32 master weights with their 2-byte
// copy, and dynamic loss scaling kept on the device.
//
// Loss scaling (fp16) runs entirely on the device, in GradScaler's order: the loss gradient is
// multiplied by the scale as it is cast (launch_scale_convert), the update checks the unscaled
// gradient for inf/NaN (launch_find_non_finite), applies it only when it is clean
// (launch_mixed_sgd_update), and a one-thread kernel advances the scale with the rule of
// kernels/common/loss_scaler.hpp. The host never waits for the flag, so the step can be captured
// in a CUDA graph; a trainer reads the state back once, after the run, for the counters.
//
// `low` pointers hold `precision` (bf16 or fp16) elements; passing fp32 is a caller error
// (cudaErrorInvalidValue). Each launcher enqueues on `stream` and returns cudaGetLastError().

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

// The loss scale as the device keeps it (one per trainer, in device memory).
struct DeviceLossScale {
  LossScaleState state;
  float inverse_scale = 1.0F;  // 1 / scale, rounded once from double, as LossScaler::unscale
  int found_non_finite = 0;    // set by find_non_finite, cleared by the scale update
};

// low[i] = (low) values[i].
[[nodiscard]] cudaError_t launch_convert(void* low, const float* values, std::size_t count,
                                         TrainingPrecision precision, cudaStream_t stream);

// low[i] = (low) (values[i] * scale), scale = loss_scale->state.scale, or 1 when loss_scale is
// null.
[[nodiscard]] cudaError_t launch_scale_convert(void* low, const float* values, std::size_t count,
                                               const DeviceLossScale* loss_scale,
                                               TrainingPrecision precision, cudaStream_t stream);

// Sets loss_scale->found_non_finite when any gradient[i] * inverse_scale is inf or NaN.
[[nodiscard]] cudaError_t launch_find_non_finite(const float* gradient, std::size_t count,
                                                 DeviceLossScale* loss_scale, cudaStream_t stream);

// Unless loss_scale->found_non_finite: parameters[i] -= learning_rate * gradient[i] *
// inverse_scale (1 when loss_scale is null), then low[i] = (low) parameters[i]. A skipped step
// leaves both as they were.
[[nodiscard]] cudaError_t launch_mixed_sgd_update(float* parameters, void* low,
                                                  const float* gradient, std::size_t count,
                                                  float learning_rate,
                                                  const DeviceLossScale* loss_scale,
                                                  TrainingPrecision precision, cudaStream_t stream);

// One thread: advance_loss_scale(state, settings, found_non_finite), then the inverse and the flag
// for the next step.
[[nodiscard]] cudaError_t launch_loss_scale_update(DeviceLossScale* loss_scale,
                                                   const LossScalerSettings& settings,
                                                   cudaStream_t stream);

// One thread: the state of a new run (scale = initial_scale, counts zero).
[[nodiscard]] cudaError_t launch_loss_scale_reset(DeviceLossScale* loss_scale, float initial_scale,
                                                  cudaStream_t stream);

}  // namespace gpubench::cuda
