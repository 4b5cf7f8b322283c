#include "benchmarks/sweep.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness/dataset.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"

namespace gpubench {

namespace {

// Adds a shape unless one with the same m, n, k is already there (an MLP layer 128 x 128 x 128
// is also the square 128): names must be unique.
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

// An MLP layer's forward product: activations (batch x width) times weights (width x width).
void add_mlp_layers(std::vector<MatmulShape>* shapes, const std::vector<int>& batches,
                    const std::vector<int>& widths) {
  for (int width : widths) {
    for (int batch : batches) add_shape(shapes, {batch, width, width, "mlp_layer"});
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

// The CPU side of the MLP sweep is sized from the layer-product flop of one step and the rate the
// 2-core CI machine sustains on these shapes with OpenBLAS (about 20 GFLOP/s measured on
// 4096 x 512 and 65536 x 512; tiny shapes run slower, but cost little): a CPU iteration runs only
// as many steps as fit in about half a second, and a shape whose single step would take more than
// a second is not run on the CPU at all (its memory would be gigabytes too).
constexpr double kCpuMlpFlopPerSecond = 20e9;
constexpr double kCpuMlpIterationSeconds = 0.5;

double mlp_case_step_flop(const MlpCase& mlp_case) {
  MlpSpec spec;
  // Features and classes of each data set (harness/dataset.hpp): iris 4 and 3, digits 64 and 10.
  spec.inputs = mlp_case.data == "iris" ? 4 : (mlp_case.data == "digits" ? 64 : kSyntheticFeatures);
  spec.classes = mlp_case.data == "iris" ? 3 : (mlp_case.data == "digits" ? 10 : kSyntheticClasses);
  spec.hidden = mlp_case.hidden;
  return mlp_step_flop(spec, mlp_case.batch);
}

MlpCase mlp_case(const std::string& data, int batch, std::vector<int> hidden, int epochs) {
  MlpCase result;
  result.data = data;
  result.batch = batch;
  result.hidden = std::move(hidden);
  result.epochs = epochs;
  const double step_seconds = mlp_case_step_flop(result) / kCpuMlpFlopPerSecond;
  if (step_seconds <= 2 * kCpuMlpIterationSeconds) {
    const int fitting = static_cast<int>(kCpuMlpIterationSeconds / step_seconds);
    result.cpu_epochs = std::clamp(fitting, 1, epochs);
  }
  const int widest = *std::max_element(result.hidden.begin(), result.hidden.end());
  // Where the hand-written path beats (or ties) OpenBLAS, measured with
  // `bench --benchmark_filter=mlp/cpu` on the 2-core CI machine: hidden layers up to 32 wide and
  // batches of 8 to 4096 rows (Iris 1.3 vs 6.7 us per epoch; synthetic 4096 x 8: 378 vs 627 us).
  // At 64-wide layers OpenBLAS's register-blocked kernels win, and a batch below 8 wastes most of
  // the small path's 8-sample lanes.
  result.small_path = widest <= 32 && batch >= 8 && batch <= 4096;
  // On chip (one block's shared memory, 227 KB on an H100) only at small batch x width; the
  // fused benchmark measures the rest as skipped with the bytes it would need.
  result.fused = batch <= 256 && widest <= 256;
  return result;
}

void add_mlp_cases(Sweep* sweep, const std::string& data, const std::vector<int>& batches,
                   const std::vector<int>& widths, int layers, int epochs) {
  for (int width : widths) {
    for (int batch : batches) {
      sweep->mlp_cases.push_back(
          mlp_case(data, batch, std::vector<int>(static_cast<std::size_t>(layers), width), epochs));
    }
  }
}

void add_mlp_sweep(Sweep* sweep, bool full) {
  // The classic: 4-10-3, full batch of the 120 training rows, 20000 epochs. Every readback mode
  // and the per-step input copy, since this is the case the suite explains.
  MlpCase iris = mlp_case("iris", 120, {10}, 20000);
  iris.gpu_readbacks = {1, 200, 0};
  iris.input_transfer = true;
  sweep->mlp_cases.push_back(iris);

  const int digits_epochs = 100;
  const int synthetic_steps = 20;
  if (!full) {
    add_mlp_cases(sweep, "digits", {64, 1437}, {32, 256}, 1, digits_epochs);
    add_mlp_cases(sweep, "synthetic", {1, 16, 256, 4096, 65536}, {8, 64, 512, 4096}, 1,
                  synthetic_steps);
    add_mlp_cases(sweep, "synthetic", {256, 4096}, {64, 512, 4096}, 2, synthetic_steps);
  } else {
    add_mlp_cases(sweep, "digits", {16, 64, 256, 1437}, {16, 32, 64, 128, 256, 512}, 1,
                  digits_epochs);
    const std::vector<int> batches = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
    const std::vector<int> widths = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    add_mlp_cases(sweep, "synthetic", batches, widths, 1, synthetic_steps);
    add_mlp_cases(sweep, "synthetic", batches, widths, 2, synthetic_steps);
  }
  // Thread scaling (full sweep): the classic tiny case, which the rule keeps on one worker, and a
  // mid-sized one, whose step the rule shards across every core.
  for (MlpCase& mlp : sweep->mlp_cases) {
    const bool mid_sized =
        mlp.data == "synthetic" && mlp.batch == 4096 && mlp.hidden == std::vector<int>{512};
    mlp.cpu_scaling = full && (mlp.data == "iris" || mid_sized);
  }
  // The cost of reading the loss back every step, across the synthetic batch sizes.
  for (MlpCase& mlp : sweep->mlp_cases) {
    if (mlp.data == "synthetic" && mlp.hidden.size() == 1 && mlp.hidden[0] == 64) {
      mlp.gpu_readbacks = {1, 0};
    }
  }
  // Mixed precision on the GPU beside fp32: Iris (where it cannot help), and synthetic nets from
  // where the products are a few microseconds to where they dominate the step; 4096 x 4096
  // hidden at batch 4096 is the case a tensor core must win.
  const std::vector<int> gpu_mixed_batches =
      full ? std::vector<int>{16, 256, 4096, 65536} : std::vector<int>{256, 4096, 65536};
  const std::vector<int> gpu_mixed_widths =
      full ? std::vector<int>{64, 512, 4096} : std::vector<int>{512, 4096};
  const auto among = [](const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
  };
  for (MlpCase& mlp : sweep->mlp_cases) {
    const bool synthetic = mlp.data == "synthetic" && among(gpu_mixed_batches, mlp.batch) &&
                           among(gpu_mixed_widths, mlp.hidden[0]);
    mlp.gpu_mixed_precision = mlp.data == "iris" || synthetic;
  }
  // The largest batch of the 4096 x 4096 net, in fp32 and in bf16 (whose step keeps 2-byte
  // activations): about a million rows on an 80 GB device, 10 steps of a few seconds in fp32.
  for (const char* precision : {"fp32", "bf16"}) {
    sweep->largest_batch_cases.push_back({"mlp", "synthetic", precision, {4096, 4096}});
  }
  // bf16 mixed precision on the CPU beside fp32: Iris and digits, and one-layer synthetic nets
  // from where the products are tiny to where they dominate the step. A few cases by default: each
  // costs up to two CPU iterations of half a second per thread count.
  const std::vector<int> bf16_batches =
      full ? std::vector<int>{16, 256, 4096, 65536} : std::vector<int>{256, 4096};
  const std::vector<int> bf16_widths =
      full ? std::vector<int>{64, 256, 1024, 4096} : std::vector<int>{64, 512};
  for (MlpCase& mlp : sweep->mlp_cases) {
    const bool synthetic = mlp.data == "synthetic" && mlp.hidden.size() == 1 &&
                           among(bf16_batches, mlp.batch) && among(bf16_widths, mlp.hidden[0]);
    mlp.cpu_bf16 = mlp.cpu_epochs > 0 && (mlp.data != "synthetic" || synthetic);
  }
}

// The CNN: the tutorial's batch 64 and the sizes around it. A CPU iteration trains about a tenth of
// a second of steps at the ~100 GFLOP/s one core of the 2-core CI machine sustains (a step is
// 69 MFLOP per image), so the default sweep's CPU rows (4 batches x 2 thread counts) take a few
// seconds; a GPU iteration trains enough steps to be well above the event resolution.
constexpr double kCpuCnnFlopPerSecond = 100e9;
constexpr double kCpuCnnIterationSeconds = 0.1;
constexpr int kGpuCnnSteps = 50;

void add_cnn_sweep(Sweep* sweep, bool full) {
  const char* cifar_folder = std::getenv("GPUBENCH_CIFAR10_DIR");
  const std::string data =
      cifar_folder != nullptr && cifar_folder[0] != '\0' ? "cifar10" : "synthetic";
  const std::vector<int> cpu_batches =
      full ? std::vector<int>{1, 4, 16, 64, 128, 256} : std::vector<int>{1, 16, 64, 256};
  const std::vector<int> gpu_batches =
      full ? std::vector<int>{1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096}
           : std::vector<int>{1, 16, 64, 256, 1024};
  const CnnSpec spec;
  for (int batch : gpu_batches) {
    CnnCase cnn;
    cnn.data = data;
    cnn.batch = batch;
    cnn.steps = kGpuCnnSteps;
    if (std::find(cpu_batches.begin(), cpu_batches.end(), batch) != cpu_batches.end()) {
      const double step_seconds = cnn_step_flop(spec, batch) / kCpuCnnFlopPerSecond;
      cnn.cpu_steps = std::clamp(static_cast<int>(kCpuCnnIterationSeconds / step_seconds), 1, 20);
    }
    // The tutorial's batch: every readback mode and the data-loader copies.
    if (batch == kCnnTutorialBatch) {
      cnn.gpu_readbacks = {1, 0};
      cnn.input_transfer = true;
    }
    // Thread scaling (full sweep) at the tutorial's batch.
    cnn.cpu_scaling = full && batch == kCnnTutorialBatch;
    // Mixed precision at the tutorial's batch and two larger ones, where tensor cores can matter.
    cnn.gpu_mixed_precision = batch == kCnnTutorialBatch || batch == 256 || batch == 1024;
    sweep->cnn_cases.push_back(cnn);
  }
  sweep->largest_batch_cases.push_back({"cnn", data, "fp32", {}});
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
  add_mlp_layers(&sweep.cpu_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.cpu_shapes, {1760}, {16, 128});
  add_squares(&sweep.cpu_fp64_shapes, {64, 256, 1024});

  add_squares(&sweep.gpu_shapes, small_squares);
  add_squares(&sweep.gpu_shapes, gpu_only_squares);
  // Layer and DeepBench shapes in the two precisions of the e2e path; squares in all five.
  add_mlp_layers(&sweep.gpu_layer_shapes, {1, 16, 128, 1024}, {128, 1024});
  add_deepbench(&sweep.gpu_layer_shapes, deepbench_sizes, deepbench_columns);

  add_squares(&sweep.gpu_e2e_shapes, small_squares);
  add_squares(&sweep.gpu_e2e_shapes, {1536, 2048, 4096});
  add_mlp_layers(&sweep.gpu_e2e_shapes, {1, 16, 128, 1024}, {128, 1024});

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
    add_mlp_layers(&sweep.cpu_shapes, {1, 16, 128, 1024, 8192}, {128, 1024, 4096});
    add_deepbench(&sweep.cpu_shapes, deepbench_sizes, deepbench_columns);
    add_squares(&sweep.cpu_fp64_shapes, {16, 128, 512, 2048});
    add_squares(&sweep.gpu_shapes, {12288, 16384});
    add_mlp_layers(&sweep.gpu_layer_shapes, {8192, 65536}, {128, 1024, 4096});
    sweep.gpu_e2e_shapes = sweep.cpu_shapes;
    add_squares(&sweep.gpu_e2e_shapes, {8192});
    sweep.launch_counts.push_back(10000);
  }
  remove_measured(&sweep.gpu_layer_shapes, sweep.gpu_shapes);
  add_mlp_sweep(&sweep, full);
  add_cnn_sweep(&sweep, full);
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
