#include "kernels/common/stream_triad.hpp"

#include "kernels/common/grid_stride.cuh"

namespace gpubench::cuda {
namespace {

__global__ void fill_doubles(double* x, std::size_t count, double value) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride()) x[i] = value;
}

__global__ void stream_triad(double* __restrict__ a, const double* __restrict__ b,
                             const double* __restrict__ c, double scalar, std::size_t count) {
  for (std::size_t i = grid_first_index(); i < count; i += grid_stride())
    a[i] = b[i] + scalar * c[i];
}

}  // namespace

cudaError_t launch_fill_doubles(double* x, std::size_t count, double value, cudaStream_t stream) {
  fill_doubles<<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(x, count, value);
  return cudaGetLastError();
}

cudaError_t launch_stream_triad(double* a, const double* b, const double* c, double scalar,
                                std::size_t count, cudaStream_t stream) {
  stream_triad<<<grid_stride_blocks(count), kGridStrideThreads, 0, stream>>>(a, b, c, scalar,
                                                                             count);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
