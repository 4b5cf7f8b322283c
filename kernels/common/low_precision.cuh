#pragma once
// The two 2-byte formats of mixed-precision training on the device, for kernels templated on the
// storage type: bf16 (__nv_bfloat16: fp32's 8 exponent bits, 8 significant bits) and fp16 (__half:
// 5 exponent bits, 11 significant bits). Conversions from fp32 round to nearest even, as PyTorch's
// .to() and autocast do; conversions to fp32 are exact. Device code only (include from .cu files).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

__device__ inline float to_float(float value) { return value; }
__device__ inline float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
__device__ inline float to_float(__half value) { return __half2float(value); }

template <typename T>
__device__ T from_float(float value);
// fp32 storage too, so one kernel template serves an fp32 step and a mixed one.
template <>
__device__ inline float from_float<float>(float value) {
  return value;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}
template <>
__device__ inline __half from_float<__half>(float value) {
  return __float2half_rn(value);
}

// Calls `launch(T{})` with T the storage type `bf16` selects (true: __nv_bfloat16, false: __half),
// so one host-side launcher serves both formats.
template <typename Launch>
cudaError_t with_low_precision_type(bool bf16, Launch&& launch) {
  return bf16 ? launch(__nv_bfloat16{}) : launch(__half{});
}

// Calls `launch(T{})` with the storage type of a 2-byte precision; fp32 has no 2-byte copy, so it
// is a caller error (cudaErrorInvalidValue).
template <typename Launch>
cudaError_t for_low_precision(TrainingPrecision precision, Launch&& launch) {
  if (precision == TrainingPrecision::fp32) return cudaErrorInvalidValue;
  return with_low_precision_type(precision == TrainingPrecision::bf16, launch);
}

// Calls `launch(T{})` with the storage type of `precision`: float for fp32, else the 2-byte type.
template <typename Launch>
cudaError_t for_storage_type(TrainingPrecision precision, Launch&& launch) {
  if (precision == TrainingPrecision::fp32) return launch(float{});
  return with_low_precision_type(precision == TrainingPrecision::bf16, launch);
}

}  // namespace gpubench::cuda
