// A polynomial of degree 512 evaluated at n points (Horner's rule): 1,024 FLOP per 8 bytes moved,
// compute-bound on both sides. The GPU's kernel runs near its FP32 peak, and the copies are a small
// part of the end-to-end time once n is large: the case where the GPU wins by its arithmetic.
#include <gpubench/workload.hpp>

constexpr int kDegree = 512;

// The same arithmetic on both sides: Horner's rule, every coefficient 0.5 (for x in [-1, 1) the
// value stays within 0.5 x 513).
__host__ __device__ inline float polynomial(float x) {
  float value = 0.5f;
  for (int j = 0; j < kDegree; ++j) value = value * x + 0.5f;
  return value;
}

__global__ void polynomial_kernel(long long n, const float* x, float* y) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = polynomial(x[i]);
}

GPUBENCH_WORKLOAD(polynomial) {
  using gpubench::Buffers, gpubench::Point;
  return gpubench::Workload("polynomial")
      .axis("n", {1 << 10, 1 << 14, 1 << 18, 1 << 22})
      .input<float>("x", "n")
      .output<float>("y", "n")
      .work([](const Point& p) {
        return gpubench::Work{2.0 * kDegree * p["n"], 8.0 * p["n"]};
      })
      .cpu("loop",
           [](const Point& p, const Buffers& b) {
             const float* x = b.get<float>("x");
             float* y = b.get<float>("y");
             return [=, n = p["n"]] {
               for (long long i = 0; i < n; ++i) y[i] = polynomial(x[i]);
             };
           })
      .gpu("cuda",
           [](const Point& p, const Buffers& b, gpubench::GpuStream stream) {
             const long long n = p["n"], blocks = (n + 255) / 256;
             const float* x = b.get<float>("x");
             float* y = b.get<float>("y");
             return [=] { polynomial_kernel<<<blocks, 256, 0, stream>>>(n, x, y); };
           })
      .tolerance(1e-4, 1e-5);
}
