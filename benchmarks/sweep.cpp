#include "benchmarks/sweep.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace gpubench {

namespace {

void add_squares(std::vector<MatmulShape>* shapes, const std::vector<int>& sizes) {
  for (int size : sizes) shapes->push_back({size, size, size, "square"});
}

// An MLP layer's forward product: activations (batch x width) times weights (width x width).
void add_mlp_layers(std::vector<MatmulShape>* shapes, const std::vector<int>& batches,
                    const std::vector<int>& widths) {
  for (int width : widths) {
    for (int batch : batches) shapes->push_back({batch, width, width, "mlp_layer"});
  }
}

// DeepBench's GEMM training shapes (baidu-research/DeepBench, gemm_problems.h): M = K in
// {1760, 2048, 2560, 4096}, N in {16, 32, 64, 128, 7000}.
void add_deepbench(std::vector<MatmulShape>* shapes, const std::vector<int>& sizes,
                   const std::vector<int>& columns) {
  for (int size : sizes) {
    for (int n : columns) shapes->push_back({size, n, size, "deepbench"});
  }
}

}  // namespace

Sweep make_sweep(bool full) {
  Sweep sweep;
  sweep.full = full;
  const int all_cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  sweep.cpu_threads = {1};
  if (all_cores > 1) sweep.cpu_threads.push_back(all_cores);

  // Powers of two with intermediate points (x1.5) so the crossover can be interpolated.
  const std::vector<int> small_squares = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024};
  const std::vector<int> gpu_only_squares = {1536, 2048, 3072, 4096, 8192};
  const std::vector<int> deepbench_sizes = {1760, 2048, 2560, 4096};
  const std::vector<int> deepbench_columns = {16, 32, 64, 128, 7000};

  add_squares(&sweep.cpu_shapes, small_squares);
  add_squares(&sweep.cpu_shapes, {1536, 2048});
  add_mlp_layers(&sweep.cpu_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.cpu_shapes, {1760}, {16, 128});
  add_squares(&sweep.cpu_fp64_shapes, {64, 256, 1024});

  add_squares(&sweep.gpu_shapes, small_squares);
  add_squares(&sweep.gpu_shapes, gpu_only_squares);
  add_mlp_layers(&sweep.gpu_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.gpu_shapes, deepbench_sizes, deepbench_columns);

  add_squares(&sweep.gpu_e2e_shapes, small_squares);
  add_squares(&sweep.gpu_e2e_shapes, {1536, 2048, 4096});
  add_mlp_layers(&sweep.gpu_e2e_shapes, {1, 16, 128, 1024}, {128, 1024});

  for (std::size_t bytes = 4; bytes <= (std::size_t{1} << 30); bytes *= 4) {
    sweep.transfer_bytes.push_back(bytes);
  }
  sweep.launch_counts = {1, 10, 100, 1000};

  if (full) {
    sweep.cpu_shapes.clear();
    add_squares(&sweep.cpu_shapes, small_squares);
    add_squares(&sweep.cpu_shapes, {1536, 2048, 3072, 4096});
    add_mlp_layers(&sweep.cpu_shapes, {1, 16, 128, 1024, 8192}, {128, 1024, 4096});
    add_deepbench(&sweep.cpu_shapes, deepbench_sizes, deepbench_columns);
    add_squares(&sweep.cpu_fp64_shapes, {16, 128, 512, 2048});
    add_squares(&sweep.gpu_shapes, {12288, 16384});
    add_mlp_layers(&sweep.gpu_shapes, {8192, 65536}, {128, 1024, 4096});
    sweep.gpu_e2e_shapes = sweep.cpu_shapes;
    add_squares(&sweep.gpu_e2e_shapes, {8192});
    sweep.launch_counts.push_back(10000);
  }
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
