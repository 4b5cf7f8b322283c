// Row-wise softmax of a rows x cols float matrix (row-major, leading dimension cols), as at the end
// of a classifier or inside attention. Few FLOP per byte, and at few rows a few microseconds of
// work: the GPU's time is its launch and synchronisation until the rows fill the device.
#include <gpubench/workload.hpp>

#include <cmath>

// One warp per row: each lane strides over the row, warp shuffles reduce (max, then the sum).
__global__ void softmax_rows(int rows, int cols, const float* x, float* y) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;  // the whole warp: row is the same for its 32 lanes
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  float largest = -INFINITY, sum = 0;
  for (int c = lane; c < cols; c += 32) largest = fmaxf(largest, in[c]);
  for (int o = 16; o > 0; o /= 2) largest = fmaxf(largest, __shfl_xor_sync(~0u, largest, o));
  for (int c = lane; c < cols; c += 32) sum += out[c] = expf(in[c] - largest);
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(~0u, sum, o);
  for (int c = lane; c < cols; c += 32) out[c] /= sum;
}

GPUBENCH_WORKLOAD(softmax) {
  using gpubench::Buffers, gpubench::Point;
  const auto elements = [](const Point& p) { return std::size_t(p["rows"] * p["cols"]); };
  return gpubench::Workload("softmax")
      .axis("rows", {8, 64, 512, 4096, 32768})
      .axis("cols", {1024})
      .input<float>("x", elements)
      .output<float>("y", elements)
      .work([=](const Point& p) {
        return gpubench::Work{4.0 * elements(p), 8.0 * elements(p)};
      })
      .cpu("loop",
           [](const Point& p, const Buffers& b) {
             for (long long r = 0, rows = p["rows"], cols = p["cols"]; r < rows; ++r) {
               const float* x = b.get<float>("x") + r * cols;
               float *y = b.get<float>("y") + r * cols, largest = x[0], sum = 0;
               for (long long c = 1; c < cols; ++c) largest = std::fmax(largest, x[c]);
               for (long long c = 0; c < cols; ++c) sum += y[c] = std::exp(x[c] - largest);
               for (long long c = 0; c < cols; ++c) y[c] /= sum;
             }
           })
      .gpu("cuda",
           [](const Point& p, const Buffers& b, gpubench::GpuStream stream) {
             const int rows = static_cast<int>(p["rows"]), blocks = (rows + 7) / 8;
             softmax_rows<<<blocks, 256, 0, stream>>>(rows, static_cast<int>(p["cols"]),
                                                      b.get<float>("x"), b.get<float>("y"));
           })
      .tolerance(1e-5, 1e-7);
}
