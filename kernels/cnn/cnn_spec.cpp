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

double cnn_step_bytes(const CnnSpec& spec, int batch) {
  constexpr double kElement = 4;  // fp32 values, int32 labels
  const double images = batch;
  double elements = 0;
  for (int l = 0; l < CnnSpec::kConvLayers; ++l) {
    const ConvShape& shape = spec.conv[l];
    const double input = images * shape.in_channels * shape.pixels();
    const double output = images * shape.out_channels * shape.pixels();
    const double pooled = output / (ConvShape::kPool * ConvShape::kPool);
    const double weights = static_cast<double>(shape.weight_count());
    const double biases = shape.out_channels;
    elements += input + weights + biases + output;    // forward
    elements += output + pooled;                      // pool
    elements += output + pooled + output;             // pool backward
    elements += input + output + weights + biases;    // weight and bias gradient
    if (l > 0) elements += output + weights + input;  // input gradient
  }
  for (const LinearShape& shape : spec.linear) {
    const double in = images * shape.in_features;
    const double out = images * shape.out_features;
    const double weights = static_cast<double>(shape.weight_count());
    const double biases = shape.out_features;
    elements += in + weights + biases + out;  // forward
    elements += in + out + weights + biases;  // weight and bias gradient
    elements += out + weights + in;           // input gradient (fc1's feeds the last pool)
  }
  elements += 2 * images * CnnSpec::kClasses + images;          // loss
  elements += 3 * static_cast<double>(spec.parameter_count());  // update
  return kElement * elements;
}

std::map<std::string, CnnOperationWork> cnn_operation_work(const CnnSpec& spec, int batch,
                                                           CnnTrainerKind trainer) {
  constexpr double kElement = 4;   // fp32 values, int32 labels
  constexpr double kPosition = 1;  // a pool window's position of its maximum
  const bool cpu = trainer == CnnTrainerKind::cpu;
  const double images = batch;
  std::map<std::string, CnnOperationWork> work;
  const auto add = [&](const std::string& name, double flop, double elements, double positions) {
    CnnOperationWork& entry = work[name];
    entry.flop += flop;
    entry.bytes += kElement * elements + kPosition * positions;
  };
  for (int l = 0; l < CnnSpec::kConvLayers; ++l) {
    const ConvShape& shape = spec.conv[l];
    const std::string conv = "conv" + std::to_string(l + 1);
    const std::string pool = "pool" + std::to_string(l + 1);
    const double input = images * shape.in_channels * shape.pixels();
    const double output = images * shape.out_channels * shape.pixels();
    const double pooled = output / (ConvShape::kPool * ConvShape::kPool);
    const double columns = images * shape.pixels() * shape.patch();
    const double weights = static_cast<double>(shape.weight_count());
    const double biases = shape.out_channels;
    const double product = 2.0 * images * shape.out_channels * shape.patch() * shape.pixels();
    // Forward: columns from X; Y = columns x W; the bias; the pool (its output and positions).
    add(conv + ".im2col", 0, input + columns, 0);
    add(conv + ".gemm", product, columns + weights + output, 0);
    add(conv + ".bias", 0, cpu ? 2 * pooled + biases : 2 * output + biases, 0);
    add(pool + ".forward", 0, output + pooled, pooled);
    // Backward: dY from dX' and the positions; dW (and db) from the columns and dY; dX from dY
    // and W through the column gradient (col2im reads it back).
    add(pool + ".backward", 0, pooled + output, pooled);
    if (cpu) {
      add(conv + ".bias_gradient", 0, pooled + biases, 0);
      add(conv + ".im2col", 0, input + columns, 0);  // the columns again, chunk by chunk
      add(conv + ".weight_gradient", product, columns + output + weights, 0);
    } else {
      add(conv + ".weight_gradient", product, columns + output + weights + biases, 0);
    }
    if (l > 0) add(conv + ".input_gradient", product, output + weights + 2 * columns + input, 0);
  }
  for (int index = 0; index < CnnSpec::kLinearLayers; ++index) {
    const LinearShape& shape = spec.linear[index];
    const std::string fc = "fc" + std::to_string(index + 1);
    const double in = images * shape.in_features;
    const double out = images * shape.out_features;
    const double weights = static_cast<double>(shape.weight_count());
    const double biases = shape.out_features;
    const double product = 2.0 * images * shape.in_features * shape.out_features;
    add(fc + ".forward", product, in + weights + biases + out, 0);
    // dW and db from X and dZ, dX from dZ and W: each operand once.
    add(fc + ".backward", 2 * product, in + out + weights + weights + biases + in, 0);
  }
  add("loss", 0, 2 * images * CnnSpec::kClasses + images, 0);
  add("update", 0, 3 * static_cast<double>(spec.parameter_count()), 0);
  return work;
}

}  // namespace gpubench
