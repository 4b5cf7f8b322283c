#include "kernels/cnn/cnn_cuda_kernels.cuh"

#include <algorithm>

#include "kernels/common/low_precision.cuh"

namespace gpubench::cuda::cnn {

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
// The convolutions' geometry (ConvShape in cnn_spec.hpp): 5x5 kernel, padding 2, stride 1.
constexpr int kKernel = 5;
constexpr int kPadding = 2;
constexpr int kTaps = kKernel * kKernel;
// Elements of one channel that one block of the channel sums adds: 16 per thread, enough to
// amortise the block's reduction, few enough that a batch-1 layer still gets several blocks.
constexpr int kSumChunk = 4096;
constexpr int kLossRowsPerBlock = kThreads;
// Grid limits: y (and z) at most 65535; x is capped far below its 2^31 - 1 because the loops are
// grid-stride and a few hundred thousand blocks already fill any GPU.
constexpr std::size_t kMaxGridX = std::size_t{1} << 20;
constexpr unsigned kMaxGridY = 65535;

unsigned grid_stride_blocks(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, kMaxGridX));
}

__device__ float warp_sum(float value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xFFFFFFFFU, value, offset);
  }
  return value;
}

// Sum of `value` over the block (blockDim.x a multiple of 32, at most 1024), valid in thread 0;
// `scratch` holds 32 floats. A fixed tree, so the same inputs give the same bits.
__device__ float block_sum(float value, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  value = warp_sum(value);
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = 0.0F;
  if (threadIdx.x == 0) {
    const int warps = static_cast<int>(blockDim.x) / kWarp;
    for (int w = 0; w < warps; ++w) total += scratch[w];
  }
  return total;
}

__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

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
    for (std::size_t column = first_index(); column < columns; column += grid_stride()) {
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
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
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
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
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
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
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
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
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
  for (std::size_t i = first_index(); i < count; i += grid_stride()) z[i] += bias[i % cols];
}

// Grid (blocks per channel, channels); see launch_channel_sums. T: the values' storage type.
template <typename T>
__global__ void channel_sums_kernel(const T* values, std::size_t channel_stride, int count,
                                    std::size_t element_stride, float* sums, float* partials,
                                    unsigned* counters) {
  __shared__ float scratch[kWarp];
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

__global__ void softmax_cross_entropy_kernel(float* logits, const int* labels, int rows,
                                             int classes, float* loss, float* partials,
                                             unsigned* counter) {
  __shared__ float scratch[kWarp];
  __shared__ bool last_block;
  const float inverse_rows = 1.0F / static_cast<float>(rows);
  const int row = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float row_loss = 0.0F;
  if (row < rows) {
    float* z = logits + static_cast<std::size_t>(row) * classes;
    const int label = labels[row];
    float largest = z[0];
    for (int k = 1; k < classes; ++k) largest = fmaxf(largest, z[k]);
    const float label_logit = z[label];
    float sum = 0.0F;
    for (int k = 0; k < classes; ++k) {
      const float e = expf(z[k] - largest);
      z[k] = e;
      sum += e;
    }
    // sum >= 1; the difference first keeps the digits a large logit would round away.
    row_loss = (largest - label_logit) + logf(sum);
    const float scale = inverse_rows / sum;
    for (int k = 0; k < classes; ++k) z[k] = z[k] * scale - (k == label ? inverse_rows : 0.0F);
  }
  const float block_total = block_sum(row_loss, scratch);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *loss = block_total * inverse_rows;
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    __threadfence();
    last_block = atomicAdd(counter, 1U) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  float sum = 0.0F;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    sum += static_cast<volatile float*>(partials)[b];
  }
  __syncthreads();  // scratch is reused
  const float total = block_sum(sum, scratch);
  if (threadIdx.x == 0) {
    *loss = total * inverse_rows;
    *counter = 0U;
  }
}

__global__ void sgd_update_kernel(float* parameters, const float* gradient, std::size_t count,
                                  float learning_rate) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) {
    parameters[i] -= learning_rate * gradient[i];
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

int softmax_cross_entropy_blocks(int rows) {
  // Not (rows + kLossRowsPerBlock - 1) / kLossRowsPerBlock: that overflows for rows near INT_MAX,
  // which the memory model (cnn_cuda_memory.hpp) evaluates when it searches for the largest batch.
  return rows / kLossRowsPerBlock + (rows % kLossRowsPerBlock != 0 ? 1 : 0);
}

cudaError_t launch_softmax_cross_entropy(float* logits, const int* labels, int rows, int classes,
                                         float* loss, float* partials, unsigned* counter,
                                         cudaStream_t stream) {
  softmax_cross_entropy_kernel<<<softmax_cross_entropy_blocks(rows), kLossRowsPerBlock, 0,
                                 stream>>>(logits, labels, rows, classes, loss, partials, counter);
  return cudaGetLastError();
}

cudaError_t launch_sgd_update(float* parameters, const float* gradient, std::size_t count,
                              float learning_rate, cudaStream_t stream) {
  sgd_update_kernel<<<grid_stride_blocks(count), kThreads, 0, stream>>>(parameters, gradient, count,
                                                                        learning_rate);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda::cnn
