// The CNN's cases of the default and the full sweep (benchmarks/cnn_workload.hpp).

#include <algorithm>
#include <string>
#include <vector>

#include "benchmarks/cnn_workload.hpp"
#include "harness/image_dataset.hpp"
#include "kernels/cnn/cnn_spec.hpp"

namespace gpubench {

namespace {

// The CNN: the tutorial's batch 64 and the sizes around it. A CPU iteration trains about a tenth of
// a second of steps at the ~100 GFLOP/s one core of the 2-core CI machine sustains (a step is
// 69 MFLOP per image), so the default sweep's CPU rows (4 batches x 2 thread counts) take a few
// seconds; a GPU iteration trains enough steps to be well above the event resolution.
constexpr double kCpuCnnFlopPerSecond = 100e9;
constexpr double kCpuCnnIterationSeconds = 0.1;
constexpr int kGpuCnnSteps = 50;

}  // namespace

std::string cnn_sweep_data() { return cifar10_directory() ? "cifar10" : "synthetic"; }

std::vector<CnnCase> make_cnn_cases(bool full) {
  const std::string data = cnn_sweep_data();
  const std::vector<int> cpu_batches =
      full ? std::vector<int>{1, 4, 16, 64, 128, 256} : std::vector<int>{1, 16, 64, 256};
  const std::vector<int> gpu_batches =
      full ? std::vector<int>{1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096}
           : std::vector<int>{1, 16, 64, 256, 1024};
  const CnnSpec spec;
  std::vector<CnnCase> cases;
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
    cases.push_back(cnn);
  }
  return cases;
}

}  // namespace gpubench
