#include "kernels/mlp/mlp_spec.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench {

const char* mlp_precision_name(MlpPrecision precision) {
  return training_precision_name(precision);
}

std::size_t MlpSpec::weight_offset(int layer) const {
  std::size_t offset = 0;
  for (int l = 0; l < layer; ++l) {
    offset += static_cast<std::size_t>(fan_in(l) + 1) * static_cast<std::size_t>(fan_out(l));
  }
  return offset;
}

std::size_t MlpSpec::parameter_count() const { return weight_offset(layer_count()); }

int MlpSpec::widest_layer() const {
  int widest = std::max(inputs, classes);
  for (int width : hidden) widest = std::max(widest, width);
  return widest;
}

std::string MlpSpec::describe() const {
  std::string text = std::to_string(inputs);
  for (int width : hidden) text += "-" + std::to_string(width);
  return text + "-" + std::to_string(classes);
}

void MlpSpec::validate() const {
  const std::string what = "invalid MLP " + describe() + ": ";
  if (inputs < 1) throw std::invalid_argument(what + "needs at least one input feature");
  for (std::size_t l = 0; l < hidden.size(); ++l) {
    if (hidden[l] < 1) {
      throw std::invalid_argument(what + "hidden layer " + std::to_string(l) + " has width " +
                                  std::to_string(hidden[l]) + "; every width must be >= 1");
    }
  }
  if (classes < 2) throw std::invalid_argument(what + "needs at least two classes");
  if (!(learning_rate > 0.0F) || !std::isfinite(learning_rate)) {
    throw std::invalid_argument(what + "learning rate must be positive and finite");
  }
  if (epochs < 1) throw std::invalid_argument(what + "needs at least one epoch");
}

void validate_batch(const MlpSpec& spec, int batch, int rows_available) {
  if (batch < 1) {
    throw std::invalid_argument("invalid batch " + std::to_string(batch) + " for MLP " +
                                spec.describe() + ": must be >= 1");
  }
  if (batch > rows_available) {
    throw std::invalid_argument("batch " + std::to_string(batch) + " is larger than the " +
                                std::to_string(rows_available) + " training rows available");
  }
}

void validate_labels(const MlpSpec& spec, const int* labels, int rows) {
  for (int row = 0; row < rows; ++row) {
    if (labels[row] < 0 || labels[row] >= spec.classes) {
      throw std::invalid_argument("label " + std::to_string(labels[row]) + " of row " +
                                  std::to_string(row) + " is outside 0.." +
                                  std::to_string(spec.classes - 1));
    }
  }
}

std::vector<float> initial_parameters(const MlpSpec& spec) {
  spec.validate();
  std::vector<float> parameters(spec.parameter_count());
  SeededRandom random(spec.seed);
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_in(layer)));
    const std::size_t begin = spec.weight_offset(layer);
    const std::size_t end = spec.weight_offset(layer + 1);  // weights, then biases
    for (std::size_t index = begin; index < end; ++index) {
      parameters[index] = static_cast<float>(random.uniform(-bound, bound));
    }
  }
  return parameters;
}

double mlp_step_flop(const MlpSpec& spec, int batch) {
  double flop = 0;
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const double product = 2.0 * batch * spec.fan_in(layer) * spec.fan_out(layer);
    flop += 2.0 * product;           // forward and weight gradient
    if (layer > 0) flop += product;  // gradient with respect to the layer's input
  }
  return flop;
}

double mlp_step_bytes(const MlpSpec& spec, int batch) {
  constexpr double kElement = 4;  // fp32 values, int32 labels
  const double rows = batch;
  double elements = 0;
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const double in = spec.fan_in(layer);
    const double out = spec.fan_out(layer);
    const double weights = in * out;
    elements += rows * in + weights + out + rows * out;  // forward
    elements += rows * in + rows * out + weights + out;  // weight and bias gradient
    if (layer > 0) elements += rows * out + weights + rows * in + rows * in;  // input gradient
  }
  elements += 2 * rows * spec.classes + rows;                   // loss
  elements += 3 * static_cast<double>(spec.parameter_count());  // update
  return kElement * elements;
}

}  // namespace gpubench
