// SAXPY, y = a x + y, on n floats: memory-bound. Two FLOP per 12 bytes moved, so the GPU's time is
// its memory bandwidth, and end to end the copies of x and y in and y out (12 bytes per element
// over PCIe) cost more than the CPU's whole loop: the GPU loses until the data stay on it.
#include <gpubench/workload.hpp>

#include <algorithm>

constexpr float kA = 2.0f;

__global__ void saxpy_kernel(long long n, float a, const float* x, float* y) {
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    y[i] = a * x[i] + y[i];
  }
}

GPUBENCH_WORKLOAD(saxpy) {
  using gpubench::Buffers, gpubench::Point;
  return gpubench::Workload("saxpy")
      .axis("n", {1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 25})
      .input<float>("x", "n")
      .input_output<float>("y", "n")
      .work([](const Point& p) {
        return gpubench::Work{2.0 * p["n"], 12.0 * p["n"]};
      })
      .cpu("loop",
           [](const Point& p, const Buffers& b) {
             const float* x = b.get<float>("x");
             float* y = b.get<float>("y");
             return [=, n = p["n"]] {
               for (long long i = 0; i < n; ++i) y[i] = kA * x[i] + y[i];
             };
           })
      .gpu("cuda", [](const Point& p, const Buffers& b, gpubench::GpuStream stream) {
        const long long n = p["n"];
        const int blocks = static_cast<int>(std::min<long long>((n + 255) / 256, 8192));
        const float* x = b.get<float>("x");
        float* y = b.get<float>("y");
        return [=] { saxpy_kernel<<<blocks, 256, 0, stream>>>(n, kA, x, y); };
      });
}
