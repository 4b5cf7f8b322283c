#include "benchmarks/sweep.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/common/openblas.hpp"

namespace gpubench {

namespace {

// Adds a shape unless one with the same m, n, k is already there (a layer 128 x 128 x 128 is also
// the square 128): names must be unique.
void add_shape(std::vector<MatmulShape>* shapes, const MatmulShape& shape) {
  for (const MatmulShape& existing : *shapes) {
    if (existing.m == shape.m && existing.n == shape.n && existing.k == shape.k) return;
  }
  shapes->push_back(shape);
}

// Removes from `shapes` those also in `measured` (a 128 x 128 x 128 layer is measured as a square).
void remove_measured(std::vector<MatmulShape>* shapes, const std::vector<MatmulShape>& measured) {
  std::vector<MatmulShape> kept;
  for (const MatmulShape& shape : *shapes) {
    bool found = false;
    for (const MatmulShape& other : measured) {
      found = found || (other.m == shape.m && other.n == shape.n && other.k == shape.k);
    }
    if (!found) kept.push_back(shape);
  }
  *shapes = kept;
}

void add_squares(std::vector<MatmulShape>* shapes, const std::vector<int>& sizes) {
  for (int size : sizes) add_shape(shapes, {size, size, size, "square"});
}

// A dense layer's forward product: activations (batch x width) times weights (width x width).
// Its shape label names the training net whose layers first set these sizes (a row name's part,
// kept as it is).
constexpr const char* kLayerShapeFamily = "mlp_layer";
void add_layer_shapes(std::vector<MatmulShape>* shapes, const std::vector<int>& batches,
                      const std::vector<int>& widths) {
  for (int width : widths) {
    for (int batch : batches) add_shape(shapes, {batch, width, width, kLayerShapeFamily});
  }
}

// DeepBench's GEMM training shapes (baidu-research/DeepBench, gemm_problems.h): M = K in
// {1760, 2048, 2560, 4096}, N in {16, 32, 64, 128, 7000}.
void add_deepbench(std::vector<MatmulShape>* shapes, const std::vector<int>& sizes,
                   const std::vector<int>& columns) {
  for (int size : sizes) {
    for (int n : columns) add_shape(shapes, {size, n, size, "deepbench"});
  }
}

}  // namespace

Sweep make_sweep(bool full) {
  Sweep sweep;
  sweep.full = full;
  const int all_cores = cpu::blas_threads_for_all_cores();
  sweep.cpu_threads = {1};
  if (all_cores > 1) sweep.cpu_threads.push_back(all_cores);
  for (int threads = 1; threads < all_cores; threads *= 2) {
    sweep.cpu_scaling_threads.push_back(threads);
  }
  sweep.cpu_scaling_threads.push_back(all_cores);

  // Powers of two with intermediate points (x1.5) so the crossover can be interpolated.
  const std::vector<int> small_squares = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  const std::vector<int> gpu_only_squares = {1536, 2048, 3072, 4096, 8192};
  const std::vector<int> deepbench_sizes = {1760, 2048, 2560, 4096};
  const std::vector<int> deepbench_columns = {16, 32, 64, 128, 7000};

  add_squares(&sweep.cpu_shapes, small_squares);
  add_squares(&sweep.cpu_shapes, {1536, 2048});
  add_layer_shapes(&sweep.cpu_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.cpu_shapes, {1760}, {16, 128});
  add_squares(&sweep.cpu_fp64_shapes, {64, 256, 1024});

  add_squares(&sweep.gpu_shapes, small_squares);
  add_squares(&sweep.gpu_shapes, gpu_only_squares);
  // Layer and DeepBench shapes in the two precisions of the e2e path; squares in all five.
  add_layer_shapes(&sweep.gpu_layer_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.gpu_layer_shapes, deepbench_sizes, deepbench_columns);

  add_squares(&sweep.gpu_e2e_shapes, small_squares);
  add_squares(&sweep.gpu_e2e_shapes, {1536, 2048, 4096});
  add_layer_shapes(&sweep.gpu_e2e_shapes, {1, 16, 128, 1024}, {128, 1024});

  for (std::size_t bytes = 4; bytes <= (std::size_t{1} << 30); bytes *= 4) {
    sweep.transfer_bytes.push_back(bytes);
  }
  sweep.launch_counts = {1, 10, 100, 1000};
  // Allocation probes: 4 KiB to 1 GiB in x64 steps by default and x4 steps in the full sweep. Each
  // of their five families runs ten repetitions per size, and a large pinned allocation takes a
  // good part of a second, so the default keeps to four sizes.
  const std::size_t alloc_step = full ? 4 : 64;
  for (std::size_t bytes = 4096; bytes <= (std::size_t{1} << 30); bytes *= alloc_step) {
    sweep.alloc_bytes.push_back(bytes);
  }

  if (full) {
    sweep.cpu_shapes.clear();
    add_squares(&sweep.cpu_shapes, small_squares);
    add_squares(&sweep.cpu_shapes, {1536, 2048, 3072, 4096});
    add_layer_shapes(&sweep.cpu_shapes, {1, 16, 128, 1024, 8192}, {128, 1024, 4096});
    add_deepbench(&sweep.cpu_shapes, deepbench_sizes, deepbench_columns);
    add_squares(&sweep.cpu_fp64_shapes, {16, 128, 512, 2048});
    add_squares(&sweep.gpu_shapes, {12288, 16384});
    add_layer_shapes(&sweep.gpu_layer_shapes, {8192, 65536}, {128, 1024, 4096});
    sweep.gpu_e2e_shapes = sweep.cpu_shapes;
    add_squares(&sweep.gpu_e2e_shapes, {8192});
    sweep.launch_counts.push_back(10000);
  }
  remove_measured(&sweep.gpu_layer_shapes, sweep.gpu_shapes);
  return sweep;
}

bool take_full_sweep_flag(int* argc, char** argv) {
  bool full = false;
  const char* environment = std::getenv("GPUBENCH_FULL");
  if (environment != nullptr && std::strcmp(environment, "1") == 0) full = true;
  int kept = 1;
  for (int index = 1; index < *argc; ++index) {
    if (std::strcmp(argv[index], "--full") == 0) {
      full = true;
    } else {
      argv[kept++] = argv[index];
    }
  }
  *argc = kept;
  return full;
}

}  // namespace gpubench
