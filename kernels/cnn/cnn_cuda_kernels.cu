#include "kernels/cnn/cnn_cuda_kernels.cuh"

#include <algorithm>

#include "kernels/common/block_reduce.cuh"
#include "kernels/common/grid_stride.cuh"
#include "kernels/common/low_precision.cuh"

namespace gpubench::cuda::cnn {

namespace {

constexpr int kThreads = kGridStrideThreads;
// The convolutions' geometry (ConvShape in cnn_spec.hpp): 5x5 kernel, padding 2, stride 1.
constexpr int kKernel = 5;
constexpr int kPadding = 2;
constexpr int kTaps = kKernel * kKernel;
// Elements of one channel that one block of the channel sums adds: 16 per thread, enough to
// amortise the block's reduction, few enough that a batch-1 layer still gets several blocks.
constexpr int kSumChunk = 4096;
// The grid's y (and z) dimension holds at most 65535 blocks.
constexpr unsigned kMaxGridY = 65535;

// blockIdx.y walks the rows of the column matrix (grid-stride in y when K > 65535), x its
// columns, so the tap a row stands for is decoded once per row and consecutive threads write
// consecutive columns and read consecutive pixels of one input row: both coalesced. T is the
// columns' storage type: float, or the 2-byte operand of a mixed-precision product.
template <typename T>
__global__ void im2col_kernel(const float* images, int channels, int size, int rows,
                              std::size_t columns, T* out) {
  const std::size_t pixels = static_cast<std::size_t>(size) * size;
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    const int channel = row / kTaps;
    const int tap = row % kTaps;
    const int dy = tap / kKernel - kPadding;
    const int dx = tap % kKernel - kPadding;
    T* out_row = out + static_cast<std::size_t>(row) * columns;
    for (std::size_t column = grid_first_index(); column < columns; column += grid_stride()) {
      const std::size_t image = column / pixels;
      const int pixel = static_cast<int>(column - image * pixels);
      const int y = pixel / size + dy;
      const int x = pixel % size + dx;
      float value = 0.0F;
      if (y >= 0 && y < size && x >= 0 && x < size) {
        value =
            images[(image * channels + channel) * pixels + static_cast<std::size_t>(y) * size + x];
      }
      out_row[column] = from_float<T>(value);
    }
  }
}

// One thread per input pixel (NCHW order: consecutive threads, consecutive x). Input pixel (y, x)
// went to output pixel (oy, ox) = (y + 2 - ky, x + 2 - kx) in row (c, ky, kx) of the columns.
__global__ void col2im_kernel(const float* columns_gradient, int channels, int size,
                              std::size_t columns, std::size_t count, float* images_gradient) {
  const std::size_t pixels = static_cast<std::size_t>(size) * size;
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    const int x = static_cast<int>(i % size);
    const int y = static_cast<int>((i / size) % size);
    const std::size_t plane = i / pixels;  // image * channels + channel
    const int channel = static_cast<int>(plane % channels);
    const std::size_t image = plane / channels;
    const std::size_t image_column = image * pixels;
    float sum = 0.0F;
    for (int ky = 0; ky < kKernel; ++ky) {
      const int oy = y + kPadding - ky;
      if (oy < 0 || oy >= size) continue;
      for (int kx = 0; kx < kKernel; ++kx) {
        const int ox = x + kPadding - kx;
        if (ox < 0 || ox >= size) continue;
        const int tap = ky * kKernel + kx;
        const std::size_t row = static_cast<std::size_t>(channel) * kTaps + tap;
        sum += columns_gradient[row * columns + image_column + static_cast<std::size_t>(oy) * size +
                                ox];
      }
    }
    images_gradient[i] = sum;
  }
}

// One thread per NCHW output element; consecutive threads read consecutive pixels of one image's
// run in a channel-major row (runs of `pixels` >= 64 floats), so both sides stay coalesced.
__global__ void conv_bias_to_nchw_kernel(const float* channel_major, const float* bias,
                                         int channels, std::size_t pixels, std::size_t columns,
                                         std::size_t count, bool relu, float* nchw) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    const std::size_t pixel = i % pixels;
    const std::size_t plane = i / pixels;
    const std::size_t channel = plane % channels;
    const std::size_t image = plane / channels;
    const float value = channel_major[channel * columns + image * pixels + pixel] + bias[channel];
    nchw[i] = relu && value < 0.0F ? 0.0F : value;
  }
}

// One thread per pooled value (NCHW order).
__global__ void max_pool_forward_kernel(const float* input, int size, std::size_t count,
                                        float* pooled, std::uint8_t* window_positions) {
  const int half = size / 2;
  const std::size_t pooled_pixels = static_cast<std::size_t>(half) * half;
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    const int px = static_cast<int>(i % half);
    const int py = static_cast<int>((i / half) % half);
    const std::size_t plane = i / pooled_pixels;
    const float* window = input + plane * size * size + static_cast<std::size_t>(2 * py) * size +
                          static_cast<std::size_t>(2 * px);
    const float candidates[4] = {window[0], window[1], window[size], window[size + 1]};
    float best = candidates[0];
    std::uint8_t position = 0;
    for (std::uint8_t k = 1; k < 4; ++k) {
      // Strictly greater: the first maximum keeps a tie. A NaN is taken (and kept: nothing
      // compares greater than it), so it propagates as in PyTorch.
      if (candidates[k] > best || isnan(candidates[k])) {
        best = candidates[k];
        position = k;
      }
    }
    pooled[i] = best;
    window_positions[i] = position;
  }
}

// One thread per convolution output element, in channel-major order (the order written), stored
// as T (float, or the 2-byte operand of a mixed-precision product).
template <typename T>
__global__ void max_pool_backward_kernel(const float* pooled_gradient,
                                         const std::uint8_t* window_positions, const float* pooled,
                                         bool relu, int channels, int size, std::size_t columns,
                                         std::size_t count, T* channel_major_gradient) {
  const std::size_t pixels = static_cast<std::size_t>(size) * size;
  const int half = size / 2;
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    const std::size_t channel = i / columns;
    const std::size_t column = i % columns;
    const std::size_t image = column / pixels;
    const int pixel = static_cast<int>(column % pixels);
    const int y = pixel / size;
    const int x = pixel % size;
    const std::size_t pooled_index =
        ((image * channels + channel) * half + static_cast<std::size_t>(y / 2)) * half + x / 2;
    const int position = (y % 2) * 2 + x % 2;
    float gradient = 0.0F;
    if (window_positions[pooled_index] == position && (!relu || pooled[pooled_index] > 0.0F)) {
      gradient = pooled_gradient[pooled_index];
    }
    channel_major_gradient[i] = from_float<T>(gradient);
  }
}

__global__ void linear_bias_kernel(float* z, const float* bias, std::size_t count, int cols) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) z[i] += bias[i % cols];
}

// Grid (blocks per channel, channels); see launch_channel_sums. T: the values' storage type.
template <typename T>
__global__ void channel_sums_kernel(const T* values, std::size_t channel_stride, int count,
                                    std::size_t element_stride, float* sums, float* partials,
                                    unsigned* counters) {
  __shared__ float scratch[kWarpSize];
  __shared__ bool last_block;
  const unsigned channel = blockIdx.y;
  const T* channel_values = values + channel * channel_stride;
  const std::size_t begin = static_cast<std::size_t>(blockIdx.x) * kSumChunk;
  const std::size_t chunk_end = begin + kSumChunk;
  const std::size_t end = chunk_end < static_cast<std::size_t>(count) ? chunk_end : count;
  float sum = 0.0F;
  for (std::size_t e = begin + threadIdx.x; e < end; e += blockDim.x) {
    sum += to_float(channel_values[e * element_stride]);
  }
  const float block_total = block_sum(sum, scratch);
  if (gridDim.x == 1) {  // one block per channel: its sum is final
    if (threadIdx.x == 0) sums[channel] = block_total;
    return;
  }
  float* channel_partials = partials + static_cast<std::size_t>(channel) * gridDim.x;
  if (threadIdx.x == 0) {
    channel_partials[blockIdx.x] = block_total;
    __threadfence();  // the partial is visible device-wide before the counter says it is there
    last_block = atomicAdd(&counters[channel], 1U) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;  // uniform over the block: every thread read the same flag
  // The last block of this channel adds every block's partial, in block order.
  __threadfence();
  float total = 0.0F;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    total += static_cast<volatile float*>(channel_partials)[b];
  }
  __syncthreads();  // scratch is reused
  total = block_sum(total, scratch);
  if (threadIdx.x == 0) {
    sums[channel] = total;
    counters[channel] = 0U;  // ready for the next launch (stream order)
  }
}

std::size_t sum_blocks_per_channel(std::size_t count) {
  return std::max<std::size_t>(1, (count + kSumChunk - 1) / kSumChunk);
}

}  // namespace

cudaError_t launch_im2col(const float* images, int batch, int channels, int size, void* columns,
                          TrainingPrecision precision, cudaStream_t stream) {
  const int rows = channels * kTaps;
  const std::size_t column_count = static_cast<std::size_t>(batch) * size * size;
  const dim3 grid(std::min<unsigned>(grid_stride_blocks(column_count), 1U << 16),
                  std::min<unsigned>(static_cast<unsigned>(rows), kMaxGridY));
  return for_storage_type(precision, [&](auto type) {
    using T = decltype(type);
    im2col_kernel<T><<<grid, kThreads, 0, stream>>>(images, channels, size, rows, column_count,
                                                    static_cast<T*>(columns));
    return cudaGetLastError();
  });
}

cudaError_t launch_col2im(const float* columns_gradient, int batch, int channels, int size,
                          float* images_gradient, cudaStream_t stream) {
  const std::size_t column_count = static_cast<std::size_t>(batch) * size * size;
  const std::size_t count = column_count * channels;
  col2im_kernel<<<grid_stride_blocks(count), kThreads, 0, stream>>>(
      columns_gradient, channels, size, column_count, count, images_gradient);
  return cudaGetLastError();
}

cudaError_t launch_conv_bias_to_nchw(const float* channel_major, const float* bias, int batch,
                                     int channels, int pixels, bool relu, float* nchw,
                                     cudaStream_t stream) {
  const std::size_t column_count = static_cast<std::size_t>(batch) * pixels;
  const std::size_t count = column_count * channels;
  conv_bias_to_nchw_kernel<<<grid_stride_blocks(count), kThreads, 0, stream>>>(
      channel_major, bias, channels, static_cast<std::size_t>(pixels), column_count, count, relu,
      nchw);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_forward(const float* input, int batch, int channels, int size,
                                    float* pooled, std::uint8_t* window_positions,
                                    cudaStream_t stream) {
  const int half = size / 2;
  const std::size_t count = static_cast<std::size_t>(batch) * channels * half * half;
  max_pool_forward_kernel<<<grid_stride_blocks(count), kThreads, 0, stream>>>(
      input, size, count, pooled, window_positions);
  return cudaGetLastError();
}

cudaError_t launch_max_pool_backward(const float* pooled_gradient,
                                     const std::uint8_t* window_positions, const float* pooled,
                                     bool relu, int batch, int channels, int size,
                                     void* channel_major_gradient, TrainingPrecision precision,
                                     cudaStream_t stream) {
  const std::size_t column_count = static_cast<std::size_t>(batch) * size * size;
  const std::size_t count = column_count * channels;
  return for_storage_type(precision, [&](auto type) {
    using T = decltype(type);
    max_pool_backward_kernel<T><<<grid_stride_blocks(count), kThreads, 0, stream>>>(
        pooled_gradient, window_positions, pooled, relu, channels, size, column_count, count,
        static_cast<T*>(channel_major_gradient));
    return cudaGetLastError();
  });
}

cudaError_t launch_linear_bias(float* z, const float* bias, int rows, int cols,
                               cudaStream_t stream) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  linear_bias_kernel<<<grid_stride_blocks(count), kThreads, 0, stream>>>(z, bias, count, cols);
  return cudaGetLastError();
}

std::size_t channel_sum_partials(int channels, std::size_t count) {
  const std::size_t blocks = sum_blocks_per_channel(count);
  return blocks > 1 ? blocks * static_cast<std::size_t>(channels) : 0;
}

std::size_t channel_sum_counters(int channels) { return static_cast<std::size_t>(channels); }

cudaError_t launch_channel_sums(const void* values, TrainingPrecision precision, int channels,
                                std::size_t channel_stride, int count, std::size_t element_stride,
                                float* sums, float* partials, unsigned* counters,
                                cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(sum_blocks_per_channel(static_cast<std::size_t>(count))),
                  static_cast<unsigned>(channels));
  return for_storage_type(precision, [&](auto type) {
    using T = decltype(type);
    channel_sums_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(values),
                                                          channel_stride, count, element_stride,
                                                          sums, partials, counters);
    return cudaGetLastError();
  });
}

}  // namespace gpubench::cuda::cnn
