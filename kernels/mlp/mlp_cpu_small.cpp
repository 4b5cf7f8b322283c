// Compiled with -O3 -march=x86-64-v3 -ffp-contract=fast (kernels/CMakeLists.txt): every Vec
// operation below is one AVX2 instruction, and a * b + c one FMA. See mlp_small.hpp for the layout
// and why.

#include "kernels/mlp/mlp_cpu_small.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpubench::cpu {

namespace {

constexpr int kLanes = MlpSmallTrainer::kLanes;

// Eight floats (one AVX2 register) as a GCC/Clang vector type: arithmetic, comparisons and ?: work
// lane by lane, and the code stays portable C++ without intrinsics. Plain loops over 8 lanes were
// tried first: GCC left the softmax, the ReLU masks and the label selection scalar (measured
// 6-11 us per Iris epoch instead of ~1), so the lanes are spelled out.
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
using IntVec = std::int32_t __attribute__((vector_size(kLanes * sizeof(std::int32_t))));

inline Vec load(const float* source) {
  Vec value;
  std::memcpy(&value, source, sizeof value);  // unaligned load (vmovups)
  return value;
}
inline IntVec load(const int* source) {
  IntVec value;
  std::memcpy(&value, source, sizeof value);
  return value;
}
inline void store(float* destination, Vec value) { std::memcpy(destination, &value, sizeof value); }
inline Vec splat(float value) { return Vec{} + value; }
// Same bits, other type (compiles to nothing).
inline Vec bits_as_float(IntVec bits) {
  Vec value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline IntVec float_as_bits(Vec value) {
  IntVec bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline Vec max(Vec a, Vec b) { return a > b ? a : b; }
inline float horizontal_sum(Vec value) {
  float sum = 0;
  for (int t = 0; t < kLanes; ++t) sum += value[t];
  return sum;
}

// exp(x) for x <= 0 (softmax after subtracting the row maximum), Cephes expf: x = n ln2 + r,
// |r| <= ln2 / 2, exp(r) by a degree-6 polynomial, times 2^n built in the exponent bits. Relative
// error about 1e-7. Below -87 the result would be subnormal; clamping there changes the softmax by
// less than 1e-38.
inline Vec exp_nonpositive(Vec x) {
  x = max(x, splat(-87.0F));
  // Round to nearest by adding and subtracting 1.5 * 2^23 (exact for |x log2 e| < 2^22).
  const Vec n = (x * 1.44269504088896341F + 12582912.0F) - 12582912.0F;
  Vec r = x - n * 0.693359375F;  // ln2 split in two for an exact first product
  r = r - n * -2.12194440e-4F;
  const Vec r2 = r * r;
  Vec p = splat(1.9875691500e-4F);
  p = p * r + 1.3981999507e-3F;
  p = p * r + 8.3334519073e-3F;
  p = p * r + 4.1665795894e-2F;
  p = p * r + 1.6666665459e-1F;
  p = p * r + 5.0000001201e-1F;
  const Vec exp_r = p * r2 + r + 1.0F;
  const IntVec exponent = __builtin_convertvector(n, IntVec);
  return exp_r * bits_as_float((exponent + 127) << 23);
}

// log(x) for finite x >= 1 (the softmax denominator), Cephes logf: x = m 2^e with m in
// [sqrt(1/2), sqrt(2)), log(1 + f) by a degree-9 polynomial. Relative error about 1e-7.
inline Vec log_at_least_one(Vec x) {
  const IntVec bits = float_as_bits(x);
  Vec e = __builtin_convertvector(((bits >> 23) & 0xFF) - 126, Vec);
  const Vec m = bits_as_float((bits & 0x007FFFFF) | 0x3F000000);  // in [0.5, 1)
  const IntVec low = m < 0.707106781186547524F;
  e = low ? e - 1.0F : e;
  const Vec f = low ? m + m - 1.0F : m - 1.0F;
  const Vec f2 = f * f;
  Vec p = splat(7.0376836292e-2F);
  p = p * f - 1.1514610310e-1F;
  p = p * f + 1.1676998740e-1F;
  p = p * f - 1.2420140846e-1F;
  p = p * f + 1.4249322787e-1F;
  p = p * f - 1.6668057665e-1F;
  p = p * f + 2.0000714765e-1F;
  p = p * f - 2.4999993993e-1F;
  p = p * f + 3.3333331174e-1F;
  Vec y = p * f * f2;
  y += -2.12194440e-4F * e;
  y += -0.5F * f2;
  return f + y + 0.693359375F * e;
}

// Four chunks of 8 samples per pass of the inner loop in the two loops below: four independent
// FMA chains hide the FMA latency (one chain per chunk left the forward pass latency-bound, about
// 3x slower on Iris), and each broadcast weight feeds four FMAs.
constexpr int kChunksPerBlock = 4;
constexpr int kBlockLanes = kChunksPerBlock * kLanes;
// Pointer offsets of chunks 1-3 within a block (compile-time constants).
constexpr std::ptrdiff_t kChunk1 = kLanes;
constexpr std::ptrdiff_t kChunk2 = 2 * kChunk1;
constexpr std::ptrdiff_t kChunk3 = 3 * kChunk1;

// out (fan_out x stride) = act(W^T in + b), in is fan_in x stride, W fan_in x fan_out row-major.
void forward_layer(const float* __restrict in, int fan_in, const float* __restrict weights,
                   const float* __restrict bias, float* __restrict out, int fan_out, int stride,
                   bool relu) {
  const Vec zero{};
  for (int j = 0; j < fan_out; ++j) {
    float* o = out + static_cast<std::size_t>(j) * stride;
    int c = 0;
    for (; c + kBlockLanes <= stride; c += kBlockLanes) {
      Vec acc0 = splat(bias[j]);
      Vec acc1 = acc0;
      Vec acc2 = acc0;
      Vec acc3 = acc0;
      for (int i = 0; i < fan_in; ++i) {
        const float w = weights[static_cast<std::size_t>(i) * fan_out + j];
        const float* a = in + static_cast<std::size_t>(i) * stride + c;
        acc0 += w * load(a);
        acc1 += w * load(a + kChunk1);
        acc2 += w * load(a + kChunk2);
        acc3 += w * load(a + kChunk3);
      }
      store(o + c, relu ? max(acc0, zero) : acc0);
      store(o + c + kChunk1, relu ? max(acc1, zero) : acc1);
      store(o + c + kChunk2, relu ? max(acc2, zero) : acc2);
      store(o + c + kChunk3, relu ? max(acc3, zero) : acc3);
    }
    for (; c < stride; c += kLanes) {
      Vec acc = splat(bias[j]);
      for (int i = 0; i < fan_in; ++i) {
        acc += weights[static_cast<std::size_t>(i) * fan_out + j] *
               load(in + static_cast<std::size_t>(i) * stride + c);
      }
      store(o + c, relu ? max(acc, zero) : acc);
    }
  }
}

// Softmax cross-entropy over the classes x stride logits; replaces them with
// dZ = (softmax - one_hot) * lane_weight and returns the mean loss (lane_weight = 1/batch on real
// lanes, 0 on padding lanes, so padding contributes neither loss nor gradient).
float softmax_loss(float* __restrict logits, int classes, const int* __restrict labels,
                   const float* __restrict lane_weight, int stride) {
  Vec loss{};
  for (int c = 0; c < stride; c += kLanes) {
    const IntVec label = load(labels + c);
    const Vec weight = load(lane_weight + c);
    Vec largest = load(logits + c);
    for (int k = 1; k < classes; ++k) {
      largest = max(largest, load(logits + static_cast<std::size_t>(k) * stride + c));
    }
    Vec label_logit{};
    Vec sum{};
    for (int k = 0; k < classes; ++k) {
      float* z = logits + static_cast<std::size_t>(k) * stride + c;
      const Vec logit = load(z);
      label_logit = label == k ? logit : label_logit;
      const Vec e = exp_nonpositive(logit - largest);
      store(z, e);
      sum += e;
    }
    // The difference first: exact-ish, while log(sum) added to a large logit would round away.
    loss += ((largest - label_logit) + log_at_least_one(sum)) * weight;
    const Vec scale = weight / sum;
    for (int k = 0; k < classes; ++k) {
      float* z = logits + static_cast<std::size_t>(k) * stride + c;
      store(z, load(z) * scale - (label == k ? weight : Vec{}));
    }
  }
  return horizontal_sum(loss);
}

// below (fan_in x stride) = (W dZ) masked by input > 0: the gradient with respect to the layer's
// input, through the ReLU that produced it.
void backward_input(const float* __restrict delta, int fan_out, const float* __restrict weights,
                    const float* __restrict input, float* __restrict below, int fan_in,
                    int stride) {
  const Vec zero{};
  for (int i = 0; i < fan_in; ++i) {
    const float* w = weights + static_cast<std::size_t>(i) * fan_out;
    const float* a = input + static_cast<std::size_t>(i) * stride;
    float* b = below + static_cast<std::size_t>(i) * stride;
    int c = 0;
    for (; c + kBlockLanes <= stride; c += kBlockLanes) {
      Vec acc0{};
      Vec acc1{};
      Vec acc2{};
      Vec acc3{};
      for (int k = 0; k < fan_out; ++k) {
        const float* d = delta + static_cast<std::size_t>(k) * stride + c;
        acc0 += w[k] * load(d);
        acc1 += w[k] * load(d + kChunk1);
        acc2 += w[k] * load(d + kChunk2);
        acc3 += w[k] * load(d + kChunk3);
      }
      store(b + c, load(a + c) > 0.0F ? acc0 : zero);
      store(b + c + kChunk1, load(a + c + kChunk1) > 0.0F ? acc1 : zero);
      store(b + c + kChunk2, load(a + c + kChunk2) > 0.0F ? acc2 : zero);
      store(b + c + kChunk3, load(a + c + kChunk3) > 0.0F ? acc3 : zero);
    }
    for (; c < stride; c += kLanes) {
      Vec acc{};
      for (int k = 0; k < fan_out; ++k) {
        acc += w[k] * load(delta + static_cast<std::size_t>(k) * stride + c);
      }
      store(b + c, load(a + c) > 0.0F ? acc : zero);
    }
  }
}

// Weight and bias gradient of one layer: g[i][k] = sum_b input[i][b] dZ[k][b] for i < fan_in, and
// the bias row i = fan_in with input = `ones`. Applied at once (parameters -= rate * g) when
// `gradient` is null, else written to `gradient` (same layout as the parameters). The
// (fan_in + 1) x fan_out dot products are taken four at a time, whatever the shape (Iris's output
// layer has only 3 columns), so four independent FMA chains are always in flight.
void weight_gradient(const float* __restrict input, int fan_in, const float* __restrict ones,
                     const float* __restrict delta, int fan_out, int stride,
                     float* __restrict parameters, float rate, float* __restrict gradient) {
  const auto row_of = [&](int pair) {
    const int i = pair / fan_out;
    return i == fan_in ? ones : input + static_cast<std::size_t>(i) * stride;
  };
  const auto delta_of = [&](int pair) {
    return delta + static_cast<std::size_t>(pair % fan_out) * stride;
  };
  const auto apply = [&](int pair, Vec lanes) {
    const float g = horizontal_sum(lanes);
    if (gradient != nullptr) {
      gradient[pair] = g;
    } else {
      parameters[pair] -= rate * g;
    }
  };
  const int pairs = (fan_in + 1) * fan_out;  // index = i * fan_out + k, the parameter layout
  int pair = 0;
  for (; pair + 4 <= pairs; pair += 4) {
    const float* a0 = row_of(pair);
    const float* a1 = row_of(pair + 1);
    const float* a2 = row_of(pair + 2);
    const float* a3 = row_of(pair + 3);
    const float* d0 = delta_of(pair);
    const float* d1 = delta_of(pair + 1);
    const float* d2 = delta_of(pair + 2);
    const float* d3 = delta_of(pair + 3);
    Vec acc0{};
    Vec acc1{};
    Vec acc2{};
    Vec acc3{};
    for (int c = 0; c < stride; c += kLanes) {
      acc0 += load(a0 + c) * load(d0 + c);
      acc1 += load(a1 + c) * load(d1 + c);
      acc2 += load(a2 + c) * load(d2 + c);
      acc3 += load(a3 + c) * load(d3 + c);
    }
    apply(pair, acc0);
    apply(pair + 1, acc1);
    apply(pair + 2, acc2);
    apply(pair + 3, acc3);
  }
  for (; pair < pairs; ++pair) {
    const float* a = row_of(pair);
    const float* d = delta_of(pair);
    Vec acc{};
    for (int c = 0; c < stride; c += kLanes) acc += load(a + c) * load(d + c);
    apply(pair, acc);
  }
}

// Test aid, 0 in every real build: with the CMake option GPUBENCH_TEST_EXTRA_WORK_PCT=P every
// training step does about P % more instructions, in this kernel alone, so the regression gate's
// studies have a real contender whose own CPU code got slower
// (scripts/measure-instruction-lane.sh). The extra work is an empty loop whose trip count is
// proportional to the step's vector work, so the share is the same at every batch and width.
#ifndef GPUBENCH_TEST_EXTRA_WORK_PCT
#define GPUBENCH_TEST_EXTRA_WORK_PCT 0
#endif
constexpr int kExtraWorkPercent = GPUBENCH_TEST_EXTRA_WORK_PCT;
// Instructions of a step per unit of vector work (one 8-lane multiply-add of the three passes),
// and of one trip of the loop below (increment, compare, branch), as counted
// by the gate's instruction lane (callgrind) on the Digits row, batch 64, 64-32-10: 20.16 M
// instructions per timed iteration of 100 steps of 57168 units (GCC 12, x86-64-v3). Rows where
// the softmax and the per-layer overheads weigh more (Iris: 5.5 per unit) get a smaller share.
constexpr double kStepInstructionsPerUnit = 3.53;
constexpr double kInstructionsPerExtraTrip = 3.0;

[[maybe_unused]] std::int64_t extra_trips(const MlpSpec& spec, int stride) {
  std::int64_t units = 0;
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const std::int64_t fan_in = spec.fan_in(layer);
    const std::int64_t fan_out = spec.fan_out(layer);
    units += (3 * fan_in * fan_out + fan_out) * (stride / kLanes);
  }
  return static_cast<std::int64_t>(static_cast<double>(units) * kExtraWorkPercent / 100.0 *
                                   kStepInstructionsPerUnit / kInstructionsPerExtraTrip);
}

[[maybe_unused]] void extra_work(std::int64_t trips) {
  // The empty asm keeps the loop: the compiler may not remove or fold it.
  for (std::int64_t trip = 0; trip < trips; ++trip) asm volatile("");
}

}  // namespace

MlpSmallTrainer::MlpSmallTrainer(const MlpSpec& spec, int batch) : spec_(spec), batch_(batch) {
  spec_.validate();
  validate_batch(spec_, batch, /*rows_available=*/batch);  // only the lower bound applies here
  stride_ = (batch + kLanes - 1) / kLanes * kLanes;
  const auto stride = static_cast<std::size_t>(stride_);
  inputs_.assign(static_cast<std::size_t>(spec_.inputs) * stride, 0.0F);
  labels_.assign(stride, 0);
  lane_weight_.assign(stride, 0.0F);
  ones_.assign(stride, 1.0F);
  std::fill(lane_weight_.begin(), lane_weight_.begin() + batch, 1.0F / static_cast<float>(batch));
  int widest_hidden = 0;
  for (int width : spec_.hidden) {
    activations_.emplace_back(static_cast<std::size_t>(width) * stride, 0.0F);
    widest_hidden = std::max(widest_hidden, width);
  }
  logits_.assign(static_cast<std::size_t>(spec_.classes) * stride, 0.0F);
  delta_.assign(static_cast<std::size_t>(widest_hidden) * stride, 0.0F);
  delta_below_.assign(delta_.size(), 0.0F);
}

void MlpSmallTrainer::set_batch(const float* inputs, const int* labels) {
  validate_labels(spec_, labels, batch_);
  const auto stride = static_cast<std::size_t>(stride_);
  for (int row = 0; row < batch_; ++row) {
    for (int feature = 0; feature < spec_.inputs; ++feature) {
      inputs_[feature * stride + row] =
          inputs[static_cast<std::size_t>(row) * spec_.inputs + feature];
    }
    labels_[row] = labels[row];
  }
}

float MlpSmallTrainer::run(float* parameters, float* gradient) {
  const int layers = spec_.layer_count();
  const float* previous = inputs_.data();
  for (int layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    float* output = last ? logits_.data() : activations_[layer].data();
    forward_layer(previous, spec_.fan_in(layer), parameters + spec_.weight_offset(layer),
                  parameters + spec_.bias_offset(layer), output, spec_.fan_out(layer), stride_,
                  /*relu=*/!last);
    previous = output;
  }
  const float loss =
      softmax_loss(logits_.data(), spec_.classes, labels_.data(), lane_weight_.data(), stride_);

  float* delta = logits_.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    float* weights = parameters + spec_.weight_offset(layer);
    const float* input = layer == 0 ? inputs_.data() : activations_[layer - 1].data();
    float* below = nullptr;
    // The input gradient uses this layer's weights before they are updated below.
    if (layer > 0) {
      below = delta == delta_.data() ? delta_below_.data() : delta_.data();
      backward_input(delta, fan_out, weights, input, below, fan_in, stride_);
    }
    weight_gradient(input, fan_in, ones_.data(), delta, fan_out, stride_, weights,
                    spec_.learning_rate,
                    gradient != nullptr ? gradient + spec_.weight_offset(layer) : nullptr);
    delta = below;
  }
  if constexpr (kExtraWorkPercent > 0) extra_work(extra_trips(spec_, stride_));
  return loss;
}

float MlpSmallTrainer::step(float* parameters) { return run(parameters, nullptr); }

float MlpSmallTrainer::loss_and_gradient(const float* parameters, float* gradient) {
  // run() writes to `parameters` only when no gradient buffer is given.
  return run(const_cast<float*>(parameters), gradient);
}

}  // namespace gpubench::cpu
