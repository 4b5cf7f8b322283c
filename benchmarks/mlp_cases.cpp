// The MLP's cases of the default and the full sweep (benchmarks/mlp_workload.hpp).

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/mlp_workload.hpp"
#include "harness/dataset.hpp"
#include "kernels/mlp/mlp_cpu.hpp"

namespace gpubench {

namespace {

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

void add_mlp_cases(std::vector<MlpCase>* cases, const std::string& data,
                   const std::vector<int>& batches, const std::vector<int>& widths, int layers,
                   int epochs) {
  for (int width : widths) {
    for (int batch : batches) {
      cases->push_back(
          mlp_case(data, batch, std::vector<int>(static_cast<std::size_t>(layers), width), epochs));
    }
  }
}

}  // namespace

std::vector<MlpCase> make_mlp_cases(bool full) {
  std::vector<MlpCase> cases;
  // The classic: 4-10-3, full batch of the 120 training rows, 20000 epochs. Every readback mode
  // and the per-step input copy, since this is the case the suite explains.
  MlpCase iris = mlp_case("iris", 120, {10}, 20000);
  iris.gpu_readbacks = {1, 200, 0};
  iris.input_transfer = true;
  cases.push_back(iris);

  const int digits_epochs = 100;
  const int synthetic_steps = 20;
  if (!full) {
    add_mlp_cases(&cases, "digits", {64, 1437}, {32, 256}, 1, digits_epochs);
    add_mlp_cases(&cases, "synthetic", {1, 16, 256, 4096, 65536}, {8, 64, 512, 4096}, 1,
                  synthetic_steps);
    add_mlp_cases(&cases, "synthetic", {256, 4096}, {64, 512, 4096}, 2, synthetic_steps);
  } else {
    add_mlp_cases(&cases, "digits", {16, 64, 256, 1437}, {16, 32, 64, 128, 256, 512}, 1,
                  digits_epochs);
    const std::vector<int> batches = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
    const std::vector<int> widths = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    add_mlp_cases(&cases, "synthetic", batches, widths, 1, synthetic_steps);
    add_mlp_cases(&cases, "synthetic", batches, widths, 2, synthetic_steps);
  }
  // Thread scaling (full sweep): the classic tiny case, which the rule keeps on one worker, and a
  // mid-sized one, whose step the rule shards across every core.
  for (MlpCase& mlp : cases) {
    const bool mid_sized =
        mlp.data == "synthetic" && mlp.batch == 4096 && mlp.hidden == std::vector<int>{512};
    mlp.cpu_scaling = full && (mlp.data == "iris" || mid_sized);
  }
  // The cost of reading the loss back every step, across the synthetic batch sizes.
  for (MlpCase& mlp : cases) {
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
  for (MlpCase& mlp : cases) {
    const bool synthetic = mlp.data == "synthetic" && among(gpu_mixed_batches, mlp.batch) &&
                           among(gpu_mixed_widths, mlp.hidden[0]);
    mlp.gpu_mixed_precision = mlp.data == "iris" || synthetic;
  }
  // bf16 mixed precision on the CPU beside fp32: Iris and digits, and one-layer synthetic nets
  // from where the products are tiny to where they dominate the step. A few cases by default: each
  // costs up to two CPU iterations of half a second per thread count.
  const std::vector<int> bf16_batches =
      full ? std::vector<int>{16, 256, 4096, 65536} : std::vector<int>{256, 4096};
  const std::vector<int> bf16_widths =
      full ? std::vector<int>{64, 256, 1024, 4096} : std::vector<int>{64, 512};
  for (MlpCase& mlp : cases) {
    const bool synthetic = mlp.data == "synthetic" && mlp.hidden.size() == 1 &&
                           among(bf16_batches, mlp.batch) && among(bf16_widths, mlp.hidden[0]);
    mlp.cpu_bf16 = mlp.cpu_epochs > 0 && (mlp.data != "synthetic" || synthetic);
  }
  return cases;
}

}  // namespace gpubench
