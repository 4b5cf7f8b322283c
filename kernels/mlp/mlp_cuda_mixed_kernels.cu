#include "kernels/mlp/mlp_cuda_mixed_kernels.cuh"

#include <algorithm>

#include "kernels/common/low_precision.cuh"

namespace gpubench::cuda {

namespace {

constexpr int kThreads = 256;

// Grid for a grid-stride loop over `count` elements (as in mlp_cuda_kernels.cu).
unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, std::size_t{1} << 20));
}

__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

template <typename T>
__global__ void bias_relu_convert_kernel(T* low, const float* z, const float* bias,
                                         std::size_t count, int cols) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
    low[i] = from_float<T>(fmaxf(z[i] + bias[i % cols], 0.0F));
  }
}

template <typename T>
__global__ void relu_backward_convert_kernel(T* low, const float* gradient, const T* activation,
                                             std::size_t count) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
    low[i] = to_float(activation[i]) > 0.0F ? from_float<T>(gradient[i]) : from_float<T>(0.0F);
  }
}

}  // namespace

cudaError_t launch_bias_relu_convert(void* low, const float* z, const float* bias, int rows,
                                     int cols, MlpPrecision precision, cudaStream_t stream) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  return for_low_precision(precision, [&](auto type) {
    using T = decltype(type);
    bias_relu_convert_kernel<T>
        <<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(low), z, bias, count, cols);
    return cudaGetLastError();
  });
}

cudaError_t launch_relu_backward_convert(void* low, const float* gradient, const void* activation,
                                         std::size_t count, MlpPrecision precision,
                                         cudaStream_t stream) {
  return for_low_precision(precision, [&](auto type) {
    using T = decltype(type);
    relu_backward_convert_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T*>(low), gradient, static_cast<const T*>(activation), count);
    return cudaGetLastError();
  });
}

}  // namespace gpubench::cuda
