#pragma once
// What the MLP tests share: a network for a data set, and the CPU (OpenBLAS path) trajectory every
// other path is compared with.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "harness/dataset.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::testing {

inline MlpSpec spec_for(const Dataset& data, std::vector<int> hidden, int epochs) {
  MlpSpec spec;
  spec.inputs = data.features;
  spec.hidden = std::move(hidden);
  spec.classes = data.classes;
  spec.learning_rate = kMlpLearningRate;
  spec.epochs = epochs;
  spec.seed = kMlpInitialWeightSeed;
  return spec;
}

// CPU (OpenBLAS path, one thread) loss after every step, and the final parameters.
inline std::vector<float> cpu_losses(const MlpSpec& spec, const Dataset& batch,
                                     std::vector<float>* final_parameters) {
  cpu::set_blas_threads(1);
  std::vector<float> parameters = initial_parameters(spec);
  cpu::MlpBlasTrainer trainer(spec, batch.rows());
  std::vector<float> losses;
  losses.reserve(static_cast<std::size_t>(spec.epochs));
  for (int epoch = 0; epoch < spec.epochs; ++epoch) {
    losses.push_back(trainer.step(parameters.data(), batch.inputs.data(), batch.labels.data()));
  }
  if (final_parameters != nullptr) *final_parameters = parameters;
  return losses;
}

inline double accuracy(const MlpSpec& spec, const std::vector<float>& parameters,
                       const Dataset& test) {
  return cpu::mlp_accuracy(spec, parameters.data(), test.inputs.data(), test.labels.data(),
                           test.rows());
}

}  // namespace gpubench::testing
