#include "kernels/cnn/cnn_spec.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/seeded_random.hpp"

namespace gpubench {

namespace {

constexpr int kLayers = CnnSpec::kConvLayers + CnnSpec::kLinearLayers;

std::size_t weight_count(const CnnSpec& spec, int layer) {
  return layer < CnnSpec::kConvLayers ? spec.conv[layer].weight_count()
                                      : spec.linear[layer - CnnSpec::kConvLayers].weight_count();
}

int bias_count(const CnnSpec& spec, int layer) {
  return layer < CnnSpec::kConvLayers ? spec.conv[layer].out_channels
                                      : spec.linear[layer - CnnSpec::kConvLayers].out_features;
}

int fan_in(const CnnSpec& spec, int layer) {
  return layer < CnnSpec::kConvLayers ? spec.conv[layer].patch()
                                      : spec.linear[layer - CnnSpec::kConvLayers].in_features;
}

}  // namespace

std::size_t CnnSpec::weight_offset(int layer) const {
  std::size_t offset = 0;
  for (int l = 0; l < layer; ++l) offset += weight_count(*this, l) + bias_count(*this, l);
  return offset;
}

std::size_t CnnSpec::bias_offset(int layer) const {
  return weight_offset(layer) + weight_count(*this, layer);
}

std::size_t CnnSpec::parameter_count() const { return weight_offset(kLayers); }

void CnnSpec::validate() const {
  int channels = kChannels;
  int size = kImageSize;
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = conv[l];
    if (shape.in_channels != channels || shape.size != size || shape.out_channels < 1 ||
        size % ConvShape::kPool != 0) {
      throw std::invalid_argument("invalid CNN: conv" + std::to_string(l + 1) + " takes " +
                                  std::to_string(shape.in_channels) + " x " +
                                  std::to_string(shape.size) + "^2 but receives " +
                                  std::to_string(channels) + " x " + std::to_string(size) + "^2");
    }
    channels = shape.out_channels;
    size = shape.pooled_size();
  }
  int features = channels * size * size;
  for (int l = 0; l < kLinearLayers; ++l) {
    if (linear[l].in_features != features || linear[l].out_features < 1) {
      throw std::invalid_argument("invalid CNN: fc" + std::to_string(l + 1) + " takes " +
                                  std::to_string(linear[l].in_features) +
                                  " features but receives " + std::to_string(features));
    }
    features = linear[l].out_features;
  }
  if (features != kClasses) {
    throw std::invalid_argument("invalid CNN: the last layer gives " + std::to_string(features) +
                                " outputs for " + std::to_string(kClasses) + " classes");
  }
  if (!(learning_rate > 0.0F) || !std::isfinite(learning_rate)) {
    throw std::invalid_argument("invalid CNN: the learning rate must be positive and finite");
  }
}

void validate_cnn_batch(int batch, int rows_available) {
  if (batch < 1) {
    throw std::invalid_argument("invalid CNN batch " + std::to_string(batch) + ": must be >= 1");
  }
  if (batch > rows_available) {
    throw std::invalid_argument("CNN batch " + std::to_string(batch) + " is larger than the " +
                                std::to_string(rows_available) + " training images available");
  }
}

std::vector<float> initial_cnn_parameters(const CnnSpec& spec) {
  spec.validate();
  std::vector<float> parameters(spec.parameter_count());
  SeededRandom random(spec.seed);
  for (int layer = 0; layer < kLayers; ++layer) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in(spec, layer)));
    const std::size_t end = spec.weight_offset(layer + 1);  // weights, then biases
    for (std::size_t index = spec.weight_offset(layer); index < end; ++index) {
      parameters[index] = static_cast<float>(random.uniform(-bound, bound));
    }
  }
  return parameters;
}

double cnn_step_flop(const CnnSpec& spec, int batch) {
  double flop = 0;
  for (int l = 0; l < CnnSpec::kConvLayers; ++l) {
    const ConvShape& shape = spec.conv[l];
    const double product = 2.0 * batch * shape.out_channels * shape.patch() * shape.pixels();
    flop += 2.0 * product;       // forward and weight gradient
    if (l > 0) flop += product;  // input gradient (columns = W^T dY, then col2im)
  }
  for (const LinearShape& shape : spec.linear) {
    flop += 3.0 * 2.0 * batch * shape.in_features * shape.out_features;  // never the first layer
  }
  return flop;
}

}  // namespace gpubench
