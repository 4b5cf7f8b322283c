#pragma once
// The kernels a mixed-precision MLP step adds to the fp32 step (kernels/mlp/mlp_cuda_trainer.hpp):
// the casts that make the 2-byte (bf16 or fp16) operands of the layer products, the update of the
// fp32 master weights with their 2-byte copy, and dynamic loss scaling kept on the device.
//
// Where the 2-byte copies come from, per step (the products accumulate in fp32 and write fp32):
//   input:      the batch (fp32, as copied from the host) cast once per step, as autocast does
//   forward:    Z (fp32 product) + bias, ReLU, cast: the next product's operand
//   loss:       dZ of the last layer (fp32) times the loss scale, cast
//   backward:   dA (fp32 product) masked by the ReLU of the stored activation, cast
//   update:     master weights (fp32) updated, then cast into the copy the next step multiplies
// The casts without a ReLU, the update and loss scaling are every trainer's
// (kernels/common/mixed_precision_kernels.cuh, included here); this file adds the MLP's ReLU casts.
//
// `low` pointers hold `precision` (bf16 or fp16) elements; passing fp32 is a caller error
// (cudaErrorInvalidValue). Each launcher enqueues on `stream` and returns cudaGetLastError().

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/mixed_precision_kernels.cuh"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// low = (low) max(z + bias, 0), z rows x cols row-major, bias broadcast over rows.
[[nodiscard]] cudaError_t launch_bias_relu_convert(void* low, const float* z, const float* bias,
                                                   int rows, int cols, MlpPrecision precision,
                                                   cudaStream_t stream);

// low[i] = activation[i] > 0 ? (low) gradient[i] : 0, the ReLU's backward on the stored (2-byte)
// activation, written as the next product's operand.
[[nodiscard]] cudaError_t launch_relu_backward_convert(void* low, const float* gradient,
                                                       const void* activation, std::size_t count,
                                                       MlpPrecision precision, cudaStream_t stream);

}  // namespace gpubench::cuda
