#pragma once
// What the GPU CNN tests share: a seeded random batch and the runs of a trainer from its initial
// weights.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/seeded_random.hpp"

namespace gpubench::test {

struct CnnBatch {
  int size = 0;
  std::vector<float> images;  // size x 3 x 32 x 32, NCHW, in [0, 1) like ToTensor()
  std::vector<int> labels;
};

inline CnnBatch random_cnn_batch(int size, std::uint64_t seed) {
  SeededRandom random(seed);
  CnnBatch batch;
  batch.size = size;
  batch.images.resize(static_cast<std::size_t>(size) * CnnSpec::image_floats());
  for (float& value : batch.images) value = static_cast<float>(random.uniform());
  batch.labels.resize(static_cast<std::size_t>(size));
  for (int& label : batch.labels) label = static_cast<int>(random.below(CnnSpec::kClasses));
  return batch;
}

inline cuda::TrainingRunConfig cnn_run_config(cuda::TrainingExecution execution, int readback_every,
                                              cuda::TrainingInput input, int graph_steps = 1) {
  cuda::TrainingRunConfig config;
  config.execution = execution;
  config.readback_every = readback_every;
  config.input = input;
  config.graph_steps = graph_steps;
  return config;
}

// Runs `steps` steps in `config` from the initial weights and returns every loss read back.
inline std::vector<float> cnn_trajectory(cuda::CnnGpuTrainer& trainer,
                                         const cuda::TrainingRunConfig& config, int steps) {
  trainer.prepare(config, steps);
  trainer.enqueue_reset();
  std::vector<float> losses;
  trainer.run(steps, &losses);
  return losses;
}

}  // namespace gpubench::test
