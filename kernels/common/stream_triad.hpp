#pragma once
// The device's memory roof: a STREAM-like triad a[i] = b[i] + s * c[i] over doubles, and the fill
// that prepares its arrays. The timing is harness/gpu_bandwidth_cuda.cpp's.

#include <cuda_runtime.h>

#include <cstddef>

namespace gpubench::cuda {

// x[i] = value for i in [0, count), enqueued on `stream`; returns the launch error, if any.
cudaError_t launch_fill_doubles(double* x, std::size_t count, double value, cudaStream_t stream);

// a[i] = b[i] + scalar * c[i] for i in [0, count), enqueued on `stream` (grid-stride, 256-thread
// blocks); returns the launch error, if any. 24 bytes per element by STREAM's count.
cudaError_t launch_stream_triad(double* a, const double* b, const double* c, double scalar,
                                std::size_t count, cudaStream_t stream);

}  // namespace gpubench::cuda
