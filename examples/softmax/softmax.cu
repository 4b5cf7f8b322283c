// Row-wise softmax of a rows x cols float matrix (row-major, leading dimension cols), as at the end
// of a classifier or inside attention. Few FLOP per byte, and at few rows a few microseconds of
// work: the GPU's time is its launch and synchronisation until the rows fill the device.
#include <gpubench/workload.hpp>

#include <cmath>

// One warp per row (a block of 32 threads): each lane strides over the row, warp shuffles reduce
// (the maximum, then the sum of exponentials).
__global__ void softmax_rows(int cols, const float* x, float* y) {
  x += static_cast<long long>(blockIdx.x) * cols, y += static_cast<long long>(blockIdx.x) * cols;
  float largest = -INFINITY, sum = 0;
  for (int c = threadIdx.x; c < cols; c += 32) largest = fmaxf(largest, x[c]);
  for (int o = 16; o > 0; o /= 2) largest = fmaxf(largest, __shfl_xor_sync(~0u, largest, o));
  for (int c = threadIdx.x; c < cols; c += 32) sum += y[c] = expf(x[c] - largest);
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(~0u, sum, o);
  for (int c = threadIdx.x; c < cols; c += 32) y[c] /= sum;
}

GPUBENCH_WORKLOAD(softmax) {
  using gpubench::Buffers, gpubench::Point, gpubench::Work;
  const auto size = [](const Point& p) { return std::size_t(p["rows"] * p["cols"]); };
  return gpubench::Workload("softmax")
      .axis("rows", {8, 64, 512, 4096, 32768})
      .axis("cols", {1024})
      .input<float>("x", size)
      .output<float>("y", size)
      .work([size](const Point& p) {
        return Work{4.0 * size(p), 8.0 * size(p)};
      })
      .cpu("loop",  // the same three passes per row: max, exponentials and their sum, division
           [](const Point& p, const Buffers& b) {
             return [rows = p["rows"], cols = p["cols"], x = b.get<float>("x"),
                     y = b.get<float>("y")] {
               for (long long r = 0, i = 0; r < rows; ++r, i += cols) {
                 float high = x[i], sum = 0;  // the row's maximum, then the exponentials' sum
                 for (long long c = 1; c < cols; ++c) high = std::fmax(high, x[i + c]);
                 for (long long c = 0; c < cols; ++c) sum += y[i + c] = std::exp(x[i + c] - high);
                 for (long long c = 0; c < cols; ++c) y[i + c] /= sum;
               }
             };
           })
      .gpu("cuda", [](const Point& p, const Buffers& b, gpubench::GpuStream stream) {
        return [=, rows = int(p["rows"]), cols = int(p["cols"]), x = b.get<float>("x"),
                y = b.get<float>("y")] { softmax_rows<<<rows, 32, 0, stream>>>(cols, x, y); };
      });
}
