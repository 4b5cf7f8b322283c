#pragma once
// The small kernels of the eager MLP step: everything between the cuBLAS layer products, one launch
// per operation, as a framework runs them. All matrices are row-major (one sample per row), the
// parameter layout is the one in kernels/mlp/mlp_spec.hpp. Each launcher enqueues on `stream`,
// returns the launch's status (cudaGetLastError(): a bad configuration shows here, an error inside
// the kernel only at the next synchronisation) for the caller to check, and is safe to call during
// stream capture.

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// z (rows x cols) += bias (broadcast over rows), then max(z, 0) if `relu`.
[[nodiscard]] cudaError_t launch_bias_activation(float* z, const float* bias, int rows, int cols,
                                                 bool relu, cudaStream_t stream);

// bias_gradient[c] = sum over rows of delta[r][c] (delta is rows x cols), summed in a fixed order.
// Blocks of 1024 rows sum in parallel; with more than one, each leaves its sums in `partials`
// (bias_gradient_partials(rows, cols) floats) and the last block of each 32-column tile adds them,
// counted in `counters` (bias_gradient_counters(cols) unsigneds, zero before the first launch and
// left at zero), as the loss kernel (kernels/common/training_kernels.cuh) does.
[[nodiscard]] cudaError_t launch_bias_gradient(const float* delta, int rows, int cols,
                                               float* bias_gradient, float* partials,
                                               unsigned* counters, cudaStream_t stream);
// The same for a dZ stored in `precision` (a mixed-precision step's bf16 or fp16 copy), still
// summed in fp32.
[[nodiscard]] cudaError_t launch_bias_gradient(const void* delta, MlpPrecision precision, int rows,
                                               int cols, float* bias_gradient, float* partials,
                                               unsigned* counters, cudaStream_t stream);
std::size_t bias_gradient_partials(int rows, int cols);
// The most rows launch_bias_gradient takes: one block per 1024 rows in the grid's y dimension,
// which holds at most 65535 blocks.
int bias_gradient_max_rows();
std::size_t bias_gradient_counters(int cols);

// gradient[i] = activation[i] > 0 ? gradient[i] : 0 (the ReLU's backward, in place).
[[nodiscard]] cudaError_t launch_relu_backward(float* gradient, const float* activation,
                                               std::size_t count, cudaStream_t stream);

}  // namespace gpubench::cuda
