#include "kernels/cnn/cnn_cuda_memory.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/cnn/cnn_cuda_kernels.cuh"
#include "kernels/common/mixed_precision_kernels.cuh"
#include "kernels/common/training_kernels.cuh"

namespace gpubench::cuda {

namespace {

constexpr int kConvLayers = CnnSpec::kConvLayers;
constexpr int kLinearLayers = CnnSpec::kLinearLayers;

std::size_t floats(std::size_t count) { return count * sizeof(float); }

// Bytes of one element of a mixed-precision step's 2-byte copies (bf16 and fp16 alike).
constexpr std::size_t kLowBytes = 2;

std::size_t image_bytes(int batch) {
  return floats(static_cast<std::size_t>(batch) *
                static_cast<std::size_t>(CnnSpec::image_floats()));
}

std::size_t label_bytes(int batch) { return static_cast<std::size_t>(batch) * sizeof(int); }

}  // namespace

std::size_t CnnGpuBuffers::total() const {
  std::size_t bytes = cublas_workspace + parameters + initial_parameters + gradient + images +
                      labels + channel_major + conv_output + pooled_gradient + hidden +
                      hidden_gradient + logits + loss + loss_partials + loss_counter +
                      sum_partials + sum_counters + low_parameters + low_channel_major_gradient +
                      low_features + low_hidden + low_hidden_gradient + low_logits_gradient +
                      column_gradient + loss_scale;
  for (int l = 0; l < kConvLayers; ++l) bytes += columns[l] + pooled[l] + window_positions[l];
  return bytes;
}

CnnGpuBuffers cnn_gpu_buffers(const CnnSpec& spec, int batch, TrainingPrecision precision) {
  spec.validate();
  validate_cnn_batch(batch, /*rows_available=*/batch);  // only the lower bound applies here
  const auto images_count = static_cast<std::size_t>(batch);
  const bool mixed = precision != TrainingPrecision::fp32;
  const std::size_t column_element_bytes = mixed ? kLowBytes : sizeof(float);
  CnnGpuBuffers buffers;
  buffers.cublas_workspace = kCnnCublasWorkspaceBytes;
  const std::size_t parameter_bytes = floats(spec.parameter_count());
  buffers.parameters = parameter_bytes;
  buffers.initial_parameters = parameter_bytes;
  buffers.gradient = parameter_bytes;
  buffers.images = image_bytes(batch);
  buffers.labels = label_bytes(batch);
  std::size_t channel_major = 0;
  std::size_t pooled_gradient = 0;
  std::size_t sum_partials = 0;
  std::size_t sum_counters = 0;
  std::size_t column_gradient = 0;  // elements
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = spec.conv[l];
    const std::size_t columns = images_count * static_cast<std::size_t>(shape.pixels());
    const std::size_t pooled = images_count * static_cast<std::size_t>(shape.out_channels) *
                               static_cast<std::size_t>(shape.pooled_size() * shape.pooled_size());
    const std::size_t column_elements = static_cast<std::size_t>(shape.patch()) * columns;
    buffers.columns[l] = column_element_bytes * column_elements;
    if (l > 0) column_gradient = std::max(column_gradient, column_elements);  // not conv1's
    buffers.pooled[l] = floats(pooled);
    buffers.window_positions[l] = pooled * sizeof(std::uint8_t);
    channel_major = std::max(channel_major, static_cast<std::size_t>(shape.out_channels) * columns);
    // col2im's result: the gradient of this layer's input, i.e. of the previous pool's output.
    if (l > 0) {
      pooled_gradient =
          std::max(pooled_gradient, static_cast<std::size_t>(shape.in_channels) * columns);
    }
    sum_partials = std::max(sum_partials, cnn::channel_sum_partials(shape.out_channels, columns));
    sum_counters = std::max(sum_counters, cnn::channel_sum_counters(shape.out_channels));
  }
  buffers.channel_major = floats(channel_major);
  buffers.conv_output = floats(channel_major);
  for (int l = 0; l < kLinearLayers; ++l) {
    const LinearShape& shape = spec.linear[l];
    sum_partials =
        std::max(sum_partials, cnn::channel_sum_partials(shape.out_features, images_count));
    sum_counters = std::max(sum_counters, cnn::channel_sum_counters(shape.out_features));
  }
  // fc1's input gradient lands there too (pool3's output gradient).
  pooled_gradient = std::max(pooled_gradient,
                             images_count * static_cast<std::size_t>(spec.linear[0].in_features));
  buffers.pooled_gradient = floats(pooled_gradient);
  const std::size_t hidden = images_count * static_cast<std::size_t>(spec.linear[0].out_features);
  buffers.hidden = floats(hidden);
  buffers.hidden_gradient = floats(hidden);
  buffers.logits = floats(images_count * static_cast<std::size_t>(CnnSpec::kClasses));
  buffers.loss = sizeof(float);
  buffers.loss_partials = floats(static_cast<std::size_t>(softmax_cross_entropy_blocks(batch)));
  buffers.loss_counter = sizeof(unsigned);
  buffers.sum_partials = floats(sum_partials);  // 0 bytes (no allocation) when never needed
  buffers.sum_counters = sum_counters * sizeof(unsigned);
  if (!mixed) return buffers;
  buffers.low_parameters = kLowBytes * spec.parameter_count();
  buffers.low_channel_major_gradient = kLowBytes * channel_major;
  buffers.low_features =
      kLowBytes * images_count * static_cast<std::size_t>(spec.linear[0].in_features);
  buffers.low_hidden = kLowBytes * hidden;
  buffers.low_hidden_gradient = kLowBytes * hidden;
  buffers.low_logits_gradient = kLowBytes * images_count * CnnSpec::kClasses;
  buffers.column_gradient = floats(column_gradient);
  if (precision == TrainingPrecision::fp16) buffers.loss_scale = sizeof(DeviceLossScale);
  return buffers;
}

std::size_t cnn_gpu_device_bytes(const CnnSpec& spec, int batch, TrainingPrecision precision) {
  return cnn_gpu_buffers(spec, batch, precision).total();
}

std::size_t cnn_gpu_host_bytes(int batch) {
  return 2 * (image_bytes(batch) + label_bytes(batch)) + sizeof(float);
}

int cnn_gpu_max_batch(const CnnSpec& spec) {
  spec.validate();
  std::size_t largest = INT_MAX;
  for (const ConvShape& shape : spec.conv) {
    const std::size_t per_image =
        static_cast<std::size_t>(shape.patch()) * static_cast<std::size_t>(shape.pixels());
    largest = std::min(largest, static_cast<std::size_t>(INT_MAX) / per_image);
  }
  return static_cast<int>(largest);
}

}  // namespace gpubench::cuda
