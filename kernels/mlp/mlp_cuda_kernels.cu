#include "kernels/mlp/mlp_cuda_kernels.cuh"

#include <algorithm>

#include "kernels/common/low_precision.cuh"

namespace gpubench::cuda {

namespace {

constexpr int kElementwiseThreads = 256;
// Bias gradient: a block owns 32 adjacent columns (one warp reads 32 consecutive floats of a row:
// coalesced) and 32 row lanes that each sum every 32nd row.
constexpr int kBiasColumns = 32;
constexpr int kBiasRowLanes = 32;
// Rows per block (32 per row lane): tall batches get many blocks instead of a few long loops.
constexpr int kBiasRowsPerBlock = 1024;

// Blocks of `per_block` covering `count` >= 0, in 64 bits: (count + per_block - 1) / per_block in
// int wraps negative for counts near INT_MAX, which the trainer's memory model
// (MlpGpuTrainer::planned_device_bytes) is evaluated at when largest_fitting_batch searches the
// whole int range; the model then shrank as the batch grew.
constexpr std::size_t blocks_covering(int count, int per_block) {
  return (static_cast<std::size_t>(count) + static_cast<std::size_t>(per_block) - 1) /
         static_cast<std::size_t>(per_block);
}

// Grid for a grid-stride loop over `count` elements: enough blocks to cover it, capped well below
// the grid limit (the loop covers the rest).
unsigned elementwise_blocks(std::size_t count) {
  const std::size_t blocks = (count + kElementwiseThreads - 1) / kElementwiseThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, std::size_t{1} << 20));
}

__global__ void bias_activation_kernel(float* z, const float* bias, std::size_t count, int cols,
                                       bool relu) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const float value = z[i] + bias[i % cols];
    z[i] = relu ? fmaxf(value, 0.0F) : value;
  }
}

// T: float, or the 2-byte dZ of a mixed-precision step (summed in fp32 all the same).
template <typename T>
__global__ void bias_gradient_kernel(const T* delta, int rows, int cols, float* gradient,
                                     float* partials, unsigned* counters) {
  __shared__ float partial[kBiasRowLanes][kBiasColumns + 1];  // +1: no bank conflicts below
  __shared__ bool last_block;
  const int lane = static_cast<int>(threadIdx.x);
  const int row_lane = static_cast<int>(threadIdx.y);
  const int column = static_cast<int>(blockIdx.x) * kBiasColumns + lane;
  const int row_begin = static_cast<int>(blockIdx.y) * kBiasRowsPerBlock;
  const int row_end = min(rows, row_begin + kBiasRowsPerBlock);
  float sum = 0.0F;
  if (column < cols) {
    for (int row = row_begin + row_lane; row < row_end; row += kBiasRowLanes) {
      sum += to_float(delta[static_cast<std::size_t>(row) * cols + column]);
    }
  }
  partial[row_lane][lane] = sum;
  __syncthreads();
  float total = 0.0F;
  if (row_lane == 0) {
    for (int r = 0; r < kBiasRowLanes; ++r) total += partial[r][lane];
  }
  if (gridDim.y == 1) {  // one block of rows (up to 1024, Iris): the column sums are final
    if (row_lane == 0 && column < cols) gradient[column] = total;
    return;
  }
  // Several blocks of rows: each leaves its sums in `partials`; the last block of this column
  // tile to finish adds them in a fixed order (deterministic, no memset needed).
  if (row_lane == 0 && column < cols) {
    partials[static_cast<std::size_t>(blockIdx.y) * cols + column] = total;
  }
  __threadfence();
  __syncthreads();
  if (lane == 0 && row_lane == 0) {
    last_block = atomicAdd(&counters[blockIdx.x], 1U) == gridDim.y - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  sum = 0.0F;
  if (column < cols) {
    for (unsigned chunk = threadIdx.y; chunk < gridDim.y; chunk += kBiasRowLanes) {
      sum +=
          static_cast<volatile float*>(partials)[static_cast<std::size_t>(chunk) * cols + column];
    }
  }
  partial[row_lane][lane] = sum;
  __syncthreads();
  if (row_lane == 0 && column < cols) {
    total = 0.0F;
    for (int r = 0; r < kBiasRowLanes; ++r) total += partial[r][lane];
    gradient[column] = total;
  }
  if (lane == 0 && row_lane == 0) counters[blockIdx.x] = 0U;  // ready for the next launch
}

__global__ void relu_backward_kernel(float* gradient, const float* activation, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    if (!(activation[i] > 0.0F)) gradient[i] = 0.0F;
  }
}

}  // namespace

cudaError_t launch_bias_activation(float* z, const float* bias, int rows, int cols, bool relu,
                                   cudaStream_t stream) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  bias_activation_kernel<<<elementwise_blocks(count), kElementwiseThreads, 0, stream>>>(
      z, bias, count, cols, relu);
  return cudaGetLastError();
}

std::size_t bias_gradient_partials(int rows, int cols) {
  const std::size_t row_blocks = blocks_covering(rows, kBiasRowsPerBlock);
  return row_blocks > 1 ? row_blocks * static_cast<std::size_t>(cols) : 0;
}

int bias_gradient_max_rows() { return 65535 * kBiasRowsPerBlock; }

std::size_t bias_gradient_counters(int cols) { return blocks_covering(cols, kBiasColumns); }

namespace {

template <typename T>
cudaError_t launch_bias_gradient_of(const T* delta, int rows, int cols, float* bias_gradient,
                                    float* partials, unsigned* counters, cudaStream_t stream) {
  const dim3 block(kBiasColumns, kBiasRowLanes);
  const dim3 grid(static_cast<unsigned>(bias_gradient_counters(cols)),
                  static_cast<unsigned>(blocks_covering(rows, kBiasRowsPerBlock)));
  bias_gradient_kernel<T>
      <<<grid, block, 0, stream>>>(delta, rows, cols, bias_gradient, partials, counters);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_bias_gradient(const float* delta, int rows, int cols, float* bias_gradient,
                                 float* partials, unsigned* counters, cudaStream_t stream) {
  return launch_bias_gradient_of(delta, rows, cols, bias_gradient, partials, counters, stream);
}

cudaError_t launch_bias_gradient(const void* delta, MlpPrecision precision, int rows, int cols,
                                 float* bias_gradient, float* partials, unsigned* counters,
                                 cudaStream_t stream) {
  if (precision == MlpPrecision::fp32) {
    return launch_bias_gradient_of(static_cast<const float*>(delta), rows, cols, bias_gradient,
                                   partials, counters, stream);
  }
  return with_low_precision_type(precision == MlpPrecision::bf16, [&](auto type) {
    using T = decltype(type);
    return launch_bias_gradient_of(static_cast<const T*>(delta), rows, cols, bias_gradient,
                                   partials, counters, stream);
  });
}

cudaError_t launch_relu_backward(float* gradient, const float* activation, std::size_t count,
                                 cudaStream_t stream) {
  relu_backward_kernel<<<elementwise_blocks(count), kElementwiseThreads, 0, stream>>>(
      gradient, activation, count);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
