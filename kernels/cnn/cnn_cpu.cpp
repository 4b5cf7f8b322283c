#include "kernels/cnn/cnn_cpu.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpubench::cpu {

namespace {

constexpr int kKernel = ConvShape::kKernel;
constexpr int kPadding = ConvShape::kPadding;
constexpr int kTaps = kKernel * kKernel;
constexpr int kConvLayers = CnnSpec::kConvLayers;
// A chunk's im2col columns fit in this many bytes, a half of a typical L2 cache (1-2 MiB per
// core), so that the GEMM reading them and its packed panels share the cache with them.
constexpr std::size_t kChunkColumnBytes = std::size_t{1} << 20;
constexpr int kEvaluationBatch = 256;

std::size_t to_size(int value) { return static_cast<std::size_t>(value); }

// Layer names for the observer: string literals, as StepObserver asks.
constexpr const char* kIm2colName[kConvLayers] = {"conv1.im2col", "conv2.im2col", "conv3.im2col"};
constexpr const char* kGemmName[kConvLayers] = {"conv1.gemm", "conv2.gemm", "conv3.gemm"};
constexpr const char* kBiasName[kConvLayers] = {"conv1.bias", "conv2.bias", "conv3.bias"};
constexpr const char* kPoolName[kConvLayers] = {"pool1.forward", "pool2.forward", "pool3.forward"};
constexpr const char* kBiasGradientName[kConvLayers] = {
    "conv1.bias_gradient", "conv2.bias_gradient", "conv3.bias_gradient"};
constexpr const char* kPoolBackwardName[kConvLayers] = {"pool1.backward", "pool2.backward",
                                                        "pool3.backward"};
constexpr const char* kWeightGradientName[kConvLayers] = {
    "conv1.weight_gradient", "conv2.weight_gradient", "conv3.weight_gradient"};
constexpr const char* kInputGradientName[kConvLayers] = {
    "conv1.input_gradient", "conv2.input_gradient", "conv3.input_gradient"};

// y[i] = x[i] and y[i] += x[i] over distinct arrays: __restrict lets the compiler vectorise
// without run-time overlap checks, which would cost as much as these short copies themselves.
void copy_floats(const float* __restrict source, float* __restrict target, int count) {
  for (int i = 0; i < count; ++i) target[i] = source[i];
}
void add_floats(const float* __restrict source, float* __restrict target, int count) {
  for (int i = 0; i < count; ++i) target[i] += source[i];
}

inline void max_of_window(const float* __restrict a, const float* __restrict b,
                          const float* __restrict c, const float* __restrict d, int channels,
                          float* __restrict output, std::uint8_t* __restrict argmax) {
  for (int ch = 0; ch < channels; ++ch) {
    // Selects and arithmetic, not branches (which of four values is largest is a coin toss a
    // branch predictor loses half the time), in a form GCC vectorises; strict > keeps the first
    // of equal values.
    const float top_left = a[ch];
    const float top_right = b[ch];
    const float bottom_left = c[ch];
    const float bottom_right = d[ch];
    const int right_on_top = top_right > top_left ? 1 : 0;
    const float top = top_right > top_left ? top_right : top_left;
    const int right_below = bottom_right > bottom_left ? 1 : 0;
    const float bottom = bottom_right > bottom_left ? bottom_right : bottom_left;
    const int lower = bottom > top ? 1 : 0;
    output[ch] = bottom > top ? bottom : top;
    argmax[ch] = static_cast<std::uint8_t>(right_on_top + lower * (2 + right_below - right_on_top));
  }
}

// `value` where `keep`, else +0: a bitwise AND. Written as `keep ? value : 0.0F`, GCC vectorises
// the select as masked stores, one branch per vector (on AVX2; not at all on SSE2), which measured
// three times slower than the scalar loop; the AND vectorises at any SSE level.
inline float keep_if(float value, bool keep) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits &= 0U - static_cast<std::uint32_t>(keep);
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline void route_to_window(const float* __restrict gradient, const std::uint8_t* __restrict argmax,
                            int channels, float* __restrict a, float* __restrict b,
                            float* __restrict c, float* __restrict d) {
  // Every input written once, so no zero-fill pass first.
  for (int ch = 0; ch < channels; ++ch) {
    const float g = gradient[ch];
    const int k = argmax[ch];
    a[ch] = keep_if(g, k == 0);
    b[ch] = keep_if(g, k == 1);
    c[ch] = keep_if(g, k == 2);
    d[ch] = keep_if(g, k == 3);
  }
}

// Sum of a row-major rows x columns matrix's rows, into `sums` (columns values).
void column_sums(const float* matrix, int rows, int columns, float* sums) {
  std::fill(sums, sums + columns, 0.0F);
  for (int row = 0; row < rows; ++row) {
    add_floats(matrix + to_size(row) * to_size(columns), sums, columns);
  }
}

// Every row of a rows x columns matrix set to `bias`, so a GEMM with beta = 1 adds onto it.
void broadcast_rows(const float* bias, int rows, int columns, float* matrix) {
  for (int row = 0; row < rows; ++row) {
    copy_floats(bias, matrix + to_size(row) * to_size(columns), columns);
  }
}

// PyTorch's conv weight index (out, in, ky, kx) and the trainer's (out, ky, kx, in).
std::size_t torch_weight_index(int out, int in, int tap, int in_channels) {
  return (to_size(out) * to_size(in_channels) + to_size(in)) * kTaps + to_size(tap);
}
std::size_t nhwc_weight_index(int out, int in, int tap, int in_channels) {
  return (to_size(out) * kTaps + to_size(tap)) * to_size(in_channels) + to_size(in);
}

void require_convolution_border(NhwcLayout layout, const char* function) {
  if (layout.border != kPadding) {
    throw std::invalid_argument(std::string(function) + ": the layout needs a border of " +
                                std::to_string(kPadding) + " pixels, got " +
                                std::to_string(layout.border));
  }
}

// im2col and col2im are written once with the channel count as a template parameter: the
// network's (3, 32) make each run of 5 x channels floats a copy of known length, which GCC emits
// as straight vector moves instead of a memcpy call per run (conv1's runs are 15 floats, 327680
// of them per pass at batch 64). kFixedChannels = 0 takes the count at run time.
template <int kFixedChannels>
void im2col_runs(const float* input, NhwcLayout layout, int images, float* columns) {
  const int channels = kFixedChannels > 0 ? kFixedChannels : layout.channels;
  const int size = layout.size;
  const int run = kKernel * channels;  // one kernel row: 5 pixels x channels, contiguous
  const std::size_t row_floats = to_size(kTaps) * to_size(channels);
  float* out = columns;
  for (int n = 0; n < images; ++n) {
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x, out += row_floats) {
        for (int ky = 0; ky < kKernel; ++ky) {
          copy_floats(input + layout.offset(n, y + ky - kPadding, x - kPadding),
                      out + to_size(ky) * to_size(run), run);
        }
      }
    }
  }
}

// col2im as a gather: each input pixel sums the (up to) 25 column entries copied from it and is
// written once, which measured twice as fast as scattering every column row onto the pixels
// (25 read-modify-writes per pixel). Only the interior is written.
template <int kFixedChannels>
void col2im_gather(const float* columns, int images, float* output, NhwcLayout layout) {
  const int channels = kFixedChannels > 0 ? kFixedChannels : layout.channels;
  const int size = layout.size;
  const std::size_t row_floats = to_size(kTaps) * to_size(channels);
  // A pixel's sum, in blocks of up to 64 channels: registers when the count is known.
  constexpr int kBlock = 64;
  float sum[kBlock];
  for (int n = 0; n < images; ++n) {
    const float* image_columns = columns + to_size(n) * to_size(size) * to_size(size) * row_floats;
    for (int y = 0; y < size; ++y) {
      // Output pixel (y + 2 - ky, x + 2 - kx) read this pixel through tap (ky, kx).
      const int ky_begin = std::max(0, y + kPadding - (size - 1));
      const int ky_end = std::min(kKernel, y + kPadding + 1);
      for (int x = 0; x < size; ++x) {
        const int kx_begin = std::max(0, x + kPadding - (size - 1));
        const int kx_end = std::min(kKernel, x + kPadding + 1);
        for (int block = 0; block < channels; block += kBlock) {
          const int width = std::min(kBlock, channels - block);
          for (int c = 0; c < width; ++c) sum[c] = 0.0F;
          for (int ky = ky_begin; ky < ky_end; ++ky) {
            for (int kx = kx_begin; kx < kx_end; ++kx) {
              const std::size_t row =
                  to_size(y + kPadding - ky) * to_size(size) + to_size(x + kPadding - kx);
              add_floats(image_columns + row * row_floats +
                             to_size(ky * kKernel + kx) * to_size(channels) + to_size(block),
                         sum, width);
            }
          }
          copy_floats(sum, output + layout.offset(n, y, x) + block, width);
        }
      }
    }
  }
}

void im2col_bordered(const float* input, NhwcLayout layout, int images, float* columns) {
  switch (layout.channels) {
    case 3:
      im2col_runs<3>(input, layout, images, columns);
      break;
    case 32:
      im2col_runs<32>(input, layout, images, columns);
      break;
    default:
      im2col_runs<0>(input, layout, images, columns);
  }
}

void col2im_bordered(const float* columns, int images, float* output, NhwcLayout layout) {
  if (layout.channels == 32) {
    col2im_gather<32>(columns, images, output, layout);
  } else {
    col2im_gather<0>(columns, images, output, layout);
  }
}

void max_pool(const float* input, int images, float* output, NhwcLayout output_layout,
              std::uint8_t* argmax) {
  const int channels = output_layout.channels;
  const int half = output_layout.size;
  const int size = 2 * half;
  const std::size_t input_row = to_size(size) * to_size(channels);
  for (int n = 0; n < images; ++n) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < half; ++j) {
        const float* a = input + ((to_size(n) * to_size(size) + to_size(2 * i)) * to_size(size) +
                                  to_size(2 * j)) *
                                     to_size(channels);
        max_of_window(
            a, a + channels, a + input_row, a + input_row + channels, channels,
            output + output_layout.offset(n, i, j),
            argmax + ((to_size(n) * to_size(half) + to_size(i)) * to_size(half) + to_size(j)) *
                         to_size(channels));
      }
    }
  }
}

void max_pool_backward(const float* output_gradient, NhwcLayout output_layout,
                       const std::uint8_t* argmax, int images, float* input_gradient) {
  const int channels = output_layout.channels;
  const int half = output_layout.size;
  const int size = 2 * half;
  const std::size_t input_row = to_size(size) * to_size(channels);
  for (int n = 0; n < images; ++n) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < half; ++j) {
        float* a = input_gradient + ((to_size(n) * to_size(size) + to_size(2 * i)) * to_size(size) +
                                     to_size(2 * j)) *
                                        to_size(channels);
        route_to_window(
            output_gradient + output_layout.offset(n, i, j),
            argmax + ((to_size(n) * to_size(half) + to_size(i)) * to_size(half) + to_size(j)) *
                         to_size(channels),
            channels, a, a + channels, a + input_row, a + input_row + channels);
      }
    }
  }
}

// NCHW images into the interior of a bordered NHWC tensor.
void to_bordered_nhwc(const float* images, int count, NhwcLayout layout, float* output) {
  const int size = layout.size;
  const std::size_t plane = to_size(size) * to_size(size);
  for (int n = 0; n < count; ++n) {
    const float* image = images + to_size(n) * to_size(layout.channels) * plane;
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x) {
        float* __restrict pixel = output + layout.offset(n, y, x);
        const float* __restrict source = image + to_size(y) * to_size(size) + to_size(x);
        for (int c = 0; c < layout.channels; ++c) pixel[c] = source[to_size(c) * plane];
      }
    }
  }
}

// Bias, then ReLU when asked, on the interior of an NHWC tensor.
void add_bias(float* values, NhwcLayout layout, int images, const float* __restrict bias,
              bool relu) {
  for (int n = 0; n < images; ++n) {
    for (int y = 0; y < layout.size; ++y) {
      for (int x = 0; x < layout.size; ++x) {
        float* __restrict pixel = values + layout.offset(n, y, x);
        if (relu) {
          for (int c = 0; c < layout.channels; ++c) pixel[c] = std::max(pixel[c] + bias[c], 0.0F);
        } else {
          for (int c = 0; c < layout.channels; ++c) pixel[c] += bias[c];
        }
      }
    }
  }
}

// The gradient through the ReLU when there is one (zero where its output was not positive), and
// its sums per channel: per image in float (`partial`, channels floats), over the images in
// double (`sums`, overwritten).
void bias_gradient(float* gradient, const float* activation, NhwcLayout layout, int images,
                   bool relu, float* partial, double* sums) {
  const int channels = layout.channels;
  std::fill(sums, sums + channels, 0.0);
  for (int n = 0; n < images; ++n) {
    std::fill(partial, partial + channels, 0.0F);
    for (int y = 0; y < layout.size; ++y) {
      for (int x = 0; x < layout.size; ++x) {
        float* __restrict g = gradient + layout.offset(n, y, x);
        if (relu) {
          const float* __restrict a = activation + layout.offset(n, y, x);
          for (int c = 0; c < channels; ++c) g[c] = keep_if(g[c], a[c] > 0.0F);
        }
        add_floats(g, partial, channels);
      }
    }
    for (int c = 0; c < channels; ++c) sums[c] += partial[c];
  }
}

// A borderless NHWC tensor to and from torch.flatten's per-image (channel, row, column) order.
void flatten_nhwc(const float* values, NhwcLayout layout, int images, float* flat) {
  const int pixels = layout.size * layout.size;
  for (int n = 0; n < images; ++n) {
    const float* __restrict image = values + to_size(n) * layout.image_floats();
    float* __restrict row = flat + to_size(n) * layout.image_floats();
    for (int p = 0; p < pixels; ++p) {
      for (int c = 0; c < layout.channels; ++c) {
        row[to_size(c) * to_size(pixels) + to_size(p)] =
            image[to_size(p) * to_size(layout.channels) + to_size(c)];
      }
    }
  }
}
void unflatten_nhwc(const float* flat, NhwcLayout layout, int images, float* values) {
  const int pixels = layout.size * layout.size;
  for (int n = 0; n < images; ++n) {
    const float* __restrict row = flat + to_size(n) * layout.image_floats();
    float* __restrict image = values + to_size(n) * layout.image_floats();
    for (int p = 0; p < pixels; ++p) {
      for (int c = 0; c < layout.channels; ++c) {
        image[to_size(p) * to_size(layout.channels) + to_size(c)] =
            row[to_size(c) * to_size(pixels) + to_size(p)];
      }
    }
  }
}

}  // namespace

void im2col_5x5_nhwc(const float* input, NhwcLayout layout, int images, float* columns) {
  require_convolution_border(layout, "im2col_5x5_nhwc");
  im2col_bordered(input, layout, images, columns);
}

void col2im_5x5_nhwc(const float* columns, int images, float* output, NhwcLayout layout) {
  require_convolution_border(layout, "col2im_5x5_nhwc");
  col2im_bordered(columns, images, output, layout);
}

void max_pool_2x2_nhwc(const float* input, int images, float* output, NhwcLayout output_layout,
                       std::uint8_t* argmax) {
  max_pool(input, images, output, output_layout, argmax);
}

void max_pool_2x2_nhwc_backward(const float* output_gradient, NhwcLayout output_layout,
                                const std::uint8_t* argmax, int images, float* input_gradient) {
  max_pool_backward(output_gradient, output_layout, argmax, images, input_gradient);
}

float cnn_softmax_cross_entropy(const float* logits, int classes, int label, float* probabilities) {
  float largest = logits[0];
  for (int j = 1; j < classes; ++j) largest = std::max(largest, logits[j]);
  // Read before `probabilities` (which may alias `logits`) is written.
  const float label_logit = logits[label];
  float sum = 0.0F;
  for (int j = 0; j < classes; ++j) {
    const float e = std::exp(logits[j] - largest);
    if (probabilities != nullptr) probabilities[j] = e;
    sum += e;
  }
  if (probabilities != nullptr) {
    const float inverse = 1.0F / sum;
    for (int j = 0; j < classes; ++j) probabilities[j] *= inverse;
  }
  // sum >= 1 (the largest logit contributes exp(0)), so the logarithm is finite; the difference
  // first, since adding log(sum) to a large logit would round it away.
  return (largest - label_logit) + std::log(sum);
}

namespace {

// Conv layer l's input: the images (l = 0) or pool l's output, with the 2-pixel zero border.
NhwcLayout conv_input_layout(const ConvShape& shape) {
  return {shape.in_channels, shape.size, kPadding};
}
// Pool l's output: conv layer l + 1's input, or fc1's (borderless) input after the last.
NhwcLayout pooled_layout(const CnnSpec& spec, int layer) {
  const ConvShape& shape = spec.conv[layer];
  return {shape.out_channels, shape.pooled_size(), layer + 1 < kConvLayers ? kPadding : 0};
}

}  // namespace

CnnCpuTrainer::CnnCpuTrainer(const CnnSpec& spec, int batch, int workers)
    : spec_(spec), batch_(batch) {
  spec_.validate();
  validate_cnn_batch(batch, batch);  // the data set's size is the caller's to check
  if (workers < 1) {
    throw std::invalid_argument("CNN trainer: " + std::to_string(workers) +
                                " workers; must be at least 1");
  }
  // At most one shard per image: a batch smaller than the worker count leaves workers idle.
  const int shard_count = std::min(workers, batch);
  const int largest_shard = shard_rows(batch, shard_count, 0).count();
  std::size_t columns_floats = 0;
  std::size_t output_floats = 0;
  std::size_t weight_floats = 0;
  int widest = 0;
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = spec_.conv[l];
    const std::size_t image_columns = to_size(shape.patch()) * to_size(shape.pixels());
    const std::size_t fitting = kChunkColumnBytes / (image_columns * sizeof(float));
    chunk_images_[l] = static_cast<int>(
        std::clamp<std::size_t>(fitting, 1, static_cast<std::size_t>(largest_shard)));
    columns_floats = std::max(columns_floats, image_columns * to_size(chunk_images_[l]));
    output_floats = std::max(output_floats, to_size(shape.out_channels) * to_size(shape.pixels()) *
                                                to_size(chunk_images_[l]));
    weight_floats = std::max(weight_floats, shape.weight_count());
    widest = std::max(widest, shape.out_channels);
    // Zero-initialised: the borders stay zero, since every pass writes interiors only.
    conv_input_[l].resize(to_size(batch) * conv_input_layout(shape).image_floats());
    if (l > 0) conv_input_gradient_[l].resize(conv_input_[l].size());
    permuted_weights_[l].resize(shape.weight_count());
    argmax_[l].resize(to_size(batch) * to_size(shape.out_channels) * to_size(shape.pooled_size()) *
                      to_size(shape.pooled_size()));
  }
  pooled3_.resize(to_size(batch) * pooled_layout(spec_, kConvLayers - 1).image_floats());
  pooled3_gradient_.resize(pooled3_.size());
  features_.resize(to_size(batch) * to_size(spec_.linear[0].in_features));
  features_gradient_.resize(features_.size());
  hidden_.resize(to_size(batch) * to_size(spec_.linear[0].out_features));
  hidden_gradient_.resize(hidden_.size());
  logits_.resize(to_size(batch) * to_size(spec_.linear[1].out_features));
  gradient_.resize(spec_.parameter_count());
  shards_.resize(to_size(shard_count));
  for (int index = 0; index < shard_count; ++index) {
    Shard& shard = shards_[to_size(index)];
    const ShardRows range = shard_rows(batch, shard_count, index);
    shard.first_image = range.begin;
    shard.images = range.count();
    shard.columns.resize(columns_floats);
    shard.conv_output.resize(output_floats);
    shard.weight_gradient_transposed.resize(weight_floats);
    shard.channel_sums.resize(to_size(widest));
    shard.channel_partial_sums.resize(to_size(widest));
    if (index > 0) shard.gradient.resize(spec_.parameter_count());
  }
  other_gradients_.reserve(shards_.size());
}

void CnnCpuTrainer::permute_weights(const float* parameters) {
  for (int l = 0; l < kConvLayers; ++l) {
    const ObservedOperation operation(observer_, kGemmName[l]);
    const ConvShape& shape = spec_.conv[l];
    const float* weights = parameters + spec_.weight_offset(l);
    for (int o = 0; o < shape.out_channels; ++o) {
      for (int c = 0; c < shape.in_channels; ++c) {
        for (int tap = 0; tap < kTaps; ++tap) {
          permuted_weights_[l][nhwc_weight_index(o, c, tap, shape.in_channels)] =
              weights[torch_weight_index(o, c, tap, shape.in_channels)];
        }
      }
    }
  }
}

// The forward pass of images [first_image, first_image + images_count) of the shard's range;
// permute_weights has run.
void CnnCpuTrainer::forward(Shard& shard, const float* parameters, const float* images_nchw,
                            int images_count, StepObserver* observer) {
  const int begin = shard.first_image;
  const int end = begin + images_count;
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = spec_.conv[l];
    const NhwcLayout input_layout = conv_input_layout(shape);
    const NhwcLayout output_layout = pooled_layout(spec_, l);
    float* pooled = l + 1 < kConvLayers ? conv_input_[l + 1].data() : pooled3_.data();
    const int out_channels = shape.out_channels;
    const int patch = shape.patch();
    const std::size_t argmax_per_image =
        to_size(out_channels) * to_size(shape.pooled_size()) * to_size(shape.pooled_size());
    for (int first = begin; first < end; first += chunk_images_[l]) {
      const int images = std::min(chunk_images_[l], end - first);
      const int rows = images * shape.pixels();
      float* input = conv_input_[l].data() + to_size(first) * input_layout.image_floats();
      {
        const ObservedOperation operation(observer, kIm2colName[l]);
        if (l == 0) {
          to_bordered_nhwc(images_nchw + to_size(first) * to_size(CnnSpec::image_floats()), images,
                           input_layout, input);
        }
        im2col_bordered(input, input_layout, images, shard.columns.data());
      }
      {
        // Y (pixels x out_channels) = columns (pixels x patch) * W^T.
        const ObservedOperation operation(observer, kGemmName[l]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out_channels, patch, 1.0F,
                    shard.columns.data(), patch, permuted_weights_[l].data(), patch, 0.0F,
                    shard.conv_output.data(), out_channels);
      }
      {
        const ObservedOperation operation(observer, kPoolName[l]);
        max_pool(shard.conv_output.data(), images,
                 pooled + to_size(first) * output_layout.image_floats(), output_layout,
                 argmax_[l].data() + to_size(first) * argmax_per_image);
      }
    }
    {
      const ObservedOperation operation(observer, kBiasName[l]);
      add_bias(pooled + to_size(begin) * output_layout.image_floats(), output_layout, images_count,
               parameters + spec_.bias_offset(l), spec_.relu);
    }
  }

  const std::size_t features = to_size(spec_.linear[0].in_features);
  const std::size_t hidden = to_size(spec_.linear[0].out_features);
  const std::size_t classes = to_size(spec_.linear[1].out_features);
  {
    const ObservedOperation operation(observer, "fc1.forward");
    const NhwcLayout layout = pooled_layout(spec_, kConvLayers - 1);
    flatten_nhwc(pooled3_.data() + to_size(begin) * layout.image_floats(), layout, images_count,
                 features_.data() + to_size(begin) * features);
    linear_forward(parameters, 0, features_.data() + to_size(begin) * features, images_count,
                   hidden_.data() + to_size(begin) * hidden);
  }
  {
    const ObservedOperation operation(observer, "fc2.forward");
    linear_forward(parameters, 1, hidden_.data() + to_size(begin) * hidden, images_count,
                   logits_.data() + to_size(begin) * classes);
  }
}

// Z = X W^T + b, with b broadcast into Z first so one GEMM (beta = 1) adds X W^T onto it.
void CnnCpuTrainer::linear_forward(const float* parameters, int index, const float* input, int rows,
                                   float* output) const {
  const LinearShape& shape = spec_.linear[index];
  const int layer = kConvLayers + index;
  broadcast_rows(parameters + spec_.bias_offset(layer), rows, shape.out_features, output);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, shape.out_features, shape.in_features,
              1.0F, input, shape.in_features, parameters + spec_.weight_offset(layer),
              shape.in_features, 1.0F, output, shape.out_features);
}

// dW = dZ^T X, db = column sums of dZ, dX = dZ W, over `rows` rows.
void CnnCpuTrainer::linear_backward(const float* parameters, int index, const float* input,
                                    const float* output_gradient, int rows, float* input_gradient,
                                    float* gradient) const {
  const LinearShape& shape = spec_.linear[index];
  const int layer = kConvLayers + index;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, shape.out_features, shape.in_features, rows,
              1.0F, output_gradient, shape.out_features, input, shape.in_features, 0.0F,
              gradient + spec_.weight_offset(layer), shape.in_features);
  column_sums(output_gradient, rows, shape.out_features, gradient + spec_.bias_offset(layer));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, shape.in_features,
              shape.out_features, 1.0F, output_gradient, shape.out_features,
              parameters + spec_.weight_offset(layer), shape.in_features, 0.0F, input_gradient,
              shape.in_features);
}

double CnnCpuTrainer::softmax_loss(const Shard& shard, const int* labels, bool with_gradient,
                                   StepObserver* observer) {
  const ObservedOperation operation(observer, "loss");
  const int classes = CnnSpec::kClasses;
  // The whole batch's size, so that the shards' gradients add up to the batch's.
  const float inverse_batch = 1.0F / static_cast<float>(batch_);
  double loss_sum = 0;  // double: the sum of a large batch keeps its digits
  for (int row = shard.first_image; row < shard.first_image + shard.images; ++row) {
    float* z = logits_.data() + to_size(row) * to_size(classes);
    if (labels[row] < 0 || labels[row] >= classes) {
      throw std::invalid_argument("CNN label " + std::to_string(labels[row]) + " of image " +
                                  std::to_string(row) + " is outside 0.." +
                                  std::to_string(classes - 1));
    }
    if (!with_gradient) {
      loss_sum += cnn_softmax_cross_entropy(z, classes, labels[row], nullptr);
      continue;
    }
    // dL/dz = (softmax(z) - one_hot(label)) / batch, in place of the logits.
    loss_sum += cnn_softmax_cross_entropy(z, classes, labels[row], z);
    z[labels[row]] -= 1.0F;
    for (int j = 0; j < classes; ++j) z[j] *= inverse_batch;
  }
  return loss_sum;
}

void CnnCpuTrainer::backward(Shard& shard, const float* parameters, float* gradient,
                             StepObserver* observer) {
  const int begin = shard.first_image;
  const int end = begin + shard.images;
  const int count = shard.images;
  const std::size_t features = to_size(spec_.linear[0].in_features);
  const std::size_t hidden = to_size(spec_.linear[0].out_features);
  const std::size_t classes = to_size(spec_.linear[1].out_features);
  {
    const ObservedOperation operation(observer, "fc2.backward");
    linear_backward(parameters, 1, hidden_.data() + to_size(begin) * hidden,
                    logits_.data() + to_size(begin) * classes, count,
                    hidden_gradient_.data() + to_size(begin) * hidden, gradient);
  }
  {
    const ObservedOperation operation(observer, "fc1.backward");
    linear_backward(parameters, 0, features_.data() + to_size(begin) * features,
                    hidden_gradient_.data() + to_size(begin) * hidden, count,
                    features_gradient_.data() + to_size(begin) * features, gradient);
    const NhwcLayout layout = pooled_layout(spec_, kConvLayers - 1);
    unflatten_nhwc(features_gradient_.data() + to_size(begin) * features, layout, count,
                   pooled3_gradient_.data() + to_size(begin) * layout.image_floats());
  }

  for (int l = kConvLayers - 1; l >= 0; --l) {
    const ConvShape& shape = spec_.conv[l];
    const NhwcLayout input_layout = conv_input_layout(shape);
    const NhwcLayout output_layout = pooled_layout(spec_, l);
    const bool last = l + 1 == kConvLayers;
    const float* pooled = last ? pooled3_.data() : conv_input_[l + 1].data();
    float* pooled_gradient = last ? pooled3_gradient_.data() : conv_input_gradient_[l + 1].data();
    const int out_channels = shape.out_channels;
    const int patch = shape.patch();
    const std::size_t argmax_per_image =
        to_size(out_channels) * to_size(shape.pooled_size()) * to_size(shape.pooled_size());
    {
      // Through the ReLU (zero where its output was not positive), then the bias gradient: the
      // sum of the pooled gradient per channel, which is the sum of the convolution output's
      // gradient, since the pool backward only moves values. Per image in float, over the
      // shard's images in double.
      const ObservedOperation operation(observer, kBiasGradientName[l]);
      const std::size_t offset = to_size(begin) * output_layout.image_floats();
      bias_gradient(pooled_gradient + offset, pooled + offset, output_layout, count, spec_.relu,
                    shard.channel_partial_sums.data(), shard.channel_sums.data());
      float* bias = gradient + spec_.bias_offset(l);
      for (int c = 0; c < out_channels; ++c) bias[c] = static_cast<float>(shard.channel_sums[c]);
    }

    float* weight_gradient = shard.weight_gradient_transposed.data();
    for (int first = begin; first < end; first += chunk_images_[l]) {
      const int images = std::min(chunk_images_[l], end - first);
      const int rows = images * shape.pixels();
      {
        const ObservedOperation operation(observer, kPoolBackwardName[l]);
        max_pool_2x2_nhwc_backward(pooled_gradient + to_size(first) * output_layout.image_floats(),
                                   output_layout,
                                   argmax_[l].data() + to_size(first) * argmax_per_image, images,
                                   shard.conv_output.data());
      }
      {
        const ObservedOperation operation(observer, kIm2colName[l]);
        im2col_bordered(conv_input_[l].data() + to_size(first) * input_layout.image_floats(),
                        input_layout, images, shard.columns.data());
      }
      {
        // dW^T (patch x out_channels) += columns^T dY; the first chunk overwrites.
        const ObservedOperation operation(observer, kWeightGradientName[l]);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, patch, out_channels, rows, 1.0F,
                    shard.columns.data(), patch, shard.conv_output.data(), out_channels,
                    first == begin ? 0.0F : 1.0F, weight_gradient, out_channels);
        if (first + images == end) {
          float* torch_gradient = gradient + spec_.weight_offset(l);
          for (int o = 0; o < out_channels; ++o) {
            for (int c = 0; c < shape.in_channels; ++c) {
              for (int tap = 0; tap < kTaps; ++tap) {
                torch_gradient[torch_weight_index(o, c, tap, shape.in_channels)] =
                    weight_gradient[(to_size(tap) * to_size(shape.in_channels) + to_size(c)) *
                                        to_size(out_channels) +
                                    to_size(o)];
              }
            }
          }
        }
      }
      if (l == 0) continue;  // nobody needs the gradient of the images
      {
        // Column gradient (pixels x patch) = dY W, into the columns' buffer (their last use was
        // the weight gradient), then added back onto the pixels they came from.
        const ObservedOperation operation(observer, kInputGradientName[l]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, patch, out_channels, 1.0F,
                    shard.conv_output.data(), out_channels, permuted_weights_[l].data(), patch,
                    0.0F, shard.columns.data(), patch);
        col2im_5x5_nhwc(
            shard.columns.data(), images,
            conv_input_gradient_[l].data() + to_size(first) * input_layout.image_floats(),
            input_layout);
      }
    }
  }
}

float CnnCpuTrainer::batch_step(const float* parameters, const float* images, const int* labels,
                                float* gradient, float* parameters_to_update) {
  // Without a gradient buffer the step is the loss alone: forward passes, no backward, no update.
  const bool with_gradient = gradient != nullptr;
  const int shard_count = workers();
  if (shard_count > 1) require_single_blas_thread("CNN trainer");
  permute_weights(parameters);
  run_on_workers(shard_count, [&](int index) {
    Shard& shard = shards_[to_size(index)];
    StepObserver* observer = index == 0 ? observer_ : nullptr;
    forward(shard, parameters, images, shard.images, observer);
    shard.loss_sum = softmax_loss(shard, labels, with_gradient, observer);
    if (with_gradient) {
      backward(shard, parameters, index == 0 ? gradient : shard.gradient.data(), observer);
    }
  });
  double loss_sum = 0;  // in shard order, so a given worker count always sums alike
  for (const Shard& shard : shards_) loss_sum += shard.loss_sum;
  if (!with_gradient) return static_cast<float>(loss_sum / batch_);
  other_gradients_.clear();  // capacity reserved in the constructor: no allocation here
  for (std::size_t index = 1; index < shards_.size(); ++index) {
    other_gradients_.push_back(shards_[index].gradient.data());
  }
  if (parameters_to_update != nullptr || !other_gradients_.empty()) {
    const ObservedOperation operation(observer_, "update");
    reduce_gradients(gradient, other_gradients_, spec_.parameter_count(), parameters_to_update,
                     spec_.learning_rate, shard_count);
  }
  return static_cast<float>(loss_sum / batch_);
}

float CnnCpuTrainer::loss_and_gradient(const float* parameters, const float* images,
                                       const int* labels, float* gradient) {
  return batch_step(parameters, images, labels, gradient, nullptr);
}

float CnnCpuTrainer::step(float* parameters, const float* images, const int* labels) {
  return batch_step(parameters, images, labels, gradient_.data(), parameters);
}

float CnnCpuTrainer::loss(const float* parameters, const float* images, const int* labels) {
  return batch_step(parameters, images, labels, nullptr, nullptr);
}

const float* CnnCpuTrainer::logits(const float* parameters, const float* images_nchw, int images) {
  if (images < 1 || images > batch_) {
    throw std::invalid_argument("CNN logits of " + std::to_string(images) + " images: must be 1.." +
                                std::to_string(batch_) + " (the trainer's batch)");
  }
  // On the caller's thread, through shard 0's buffers (which hold a chunk of any size up to the
  // largest shard's; the chunk loop covers the rest) from image 0.
  Shard& shard = shards_.front();
  permute_weights(parameters);
  forward(shard, parameters, images_nchw, images, observer_);
  return logits_.data();
}

CpuThreadPlan cnn_cpu_thread_plan(const CnnSpec& spec, int batch, int threads) {
  // One image is 69 MFLOP (cnn_step_flop), far above what a shard must take over to pay for its
  // meetings with the others, and its weight gradients are small (145k parameters): a shard per
  // image is worth it, so the shard count is min(threads, batch). OpenBLAS's own threads never:
  // the products of one chunk of images are too small for them (batch 64: 50 ms per step on two
  // OpenBLAS threads against 46 ms on one, on the 2-core Zen 4; docs/workloads.md, "Threads").
  ShardRule rule;
  rule.min_rows_per_shard = 1;
  rule.min_flop_per_shard = 0;
  rule.min_flop_for_blas_threads = std::numeric_limits<double>::infinity();
  return plan_cpu_threads(rule, cnn_step_flop(spec, batch), batch, threads);
}

CnnEvaluation cnn_evaluate(const CnnSpec& spec, const float* parameters, const float* images,
                           const int* labels, int rows) {
  if (rows < 1) {
    throw std::invalid_argument("CNN evaluation of " + std::to_string(rows) +
                                " images: must be >= 1");
  }
  CnnCpuTrainer trainer(spec, std::min(rows, kEvaluationBatch));
  const int classes = CnnSpec::kClasses;
  double loss_sum = 0;
  int correct = 0;
  for (int first = 0; first < rows; first += trainer.batch()) {
    const int count = std::min(trainer.batch(), rows - first);
    const float* logits = trainer.logits(
        parameters, images + to_size(first) * to_size(CnnSpec::image_floats()), count);
    for (int row = 0; row < count; ++row) {
      const float* z = logits + to_size(row) * to_size(classes);
      const int label = labels[first + row];
      if (label < 0 || label >= classes) {
        throw std::invalid_argument("CNN label " + std::to_string(label) + " of image " +
                                    std::to_string(first + row) + " is outside 0.." +
                                    std::to_string(classes - 1));
      }
      loss_sum += cnn_softmax_cross_entropy(z, classes, label, nullptr);
      if (std::max_element(z, z + classes) - z == label) ++correct;
    }
  }
  return {loss_sum / rows, static_cast<double>(correct) / rows};
}

double cnn_accuracy(const CnnSpec& spec, const float* parameters, const float* images,
                    const int* labels, int rows) {
  return cnn_evaluate(spec, parameters, images, labels, rows).accuracy;
}

}  // namespace gpubench::cpu
