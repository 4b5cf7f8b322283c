#include "kernels/probes/empty_kernel.hpp"

namespace gpubench::cuda {
namespace {
__global__ void empty_kernel() {}
}  // namespace

cudaError_t launch_empty_kernel(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
