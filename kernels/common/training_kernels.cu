#include "kernels/common/training_kernels.cuh"

#include "kernels/common/block_reduce.cuh"
#include "kernels/common/grid_stride.cuh"

namespace gpubench::cuda {

namespace {

constexpr int kLossRowsPerBlock = 256;

__global__ void softmax_cross_entropy_kernel(float* logits, const int* labels, int rows,
                                             int classes, float* loss, float* partials,
                                             unsigned* counter) {
  __shared__ float scratch[kWarpSize];
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
  if (gridDim.x == 1) {  // one block (up to 256 rows, Iris): no cross-block step needed
    if (threadIdx.x == 0) *loss = block_total * inverse_rows;
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    __threadfence();  // the partial is visible device-wide before the counter says it is there
    last_block = atomicAdd(counter, 1U) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_block) return;
  // The last block sums every block's partial in a fixed order.
  __threadfence();
  float sum = 0.0F;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    sum += static_cast<volatile float*>(partials)[b];
  }
  __syncthreads();  // scratch is reused
  const float total = block_sum(sum, scratch);
  if (threadIdx.x == 0) {
    *loss = total * inverse_rows;
    *counter = 0U;  // ready for the next launch (stream order)
  }
}

__global__ void sgd_update_kernel(float* parameters, const float* gradient, std::size_t count,
                                  float learning_rate) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) {
    parameters[i] -= learning_rate * gradient[i];
  }
}

}  // namespace

int softmax_cross_entropy_blocks(int rows) {
  // Not (rows + kLossRowsPerBlock - 1) / kLossRowsPerBlock: that overflows for rows near INT_MAX.
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
  sgd_update_kernel<<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(
      parameters, gradient, count, learning_rate);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
