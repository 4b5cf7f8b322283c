#include "kernels/mlp/mlp_cpu_bf16.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/common/bfloat16.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/worker_threads.hpp"
#include "kernels/mlp/mlp_cpu.hpp"

namespace gpubench {
namespace cpu {

namespace {

static_assert(std::is_same_v<bfloat16, std::uint16_t>,
              "OpenBLAS's bfloat16 is the raw 16 bits that kernels/common/bfloat16.hpp writes");

// cblas_sbgemm's exact type, from OpenBLAS's own declaration (decltype does not reference the
// symbol, so this links against an OpenBLAS without it).
using SbgemmFunction = decltype(&cblas_sbgemm);

// The loaded OpenBLAS's cblas_sbgemm, or null. Looked up once: the library does not change while
// the process runs.
SbgemmFunction loaded_sbgemm() {
  static const SbgemmFunction function =
      reinterpret_cast<SbgemmFunction>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return function;
}

std::size_t elements(int rows, int columns) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(columns);
}

}  // namespace

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

bool openblas_has_sbgemm() { return loaded_sbgemm() != nullptr; }

std::string bf16_unavailable_reason() {
  if (!cpu_has_avx512_bf16()) {
    return "the CPU has no AVX512_BF16, so OpenBLAS's bf16 products would run its generic "
           "emulation rather than bf16 hardware";
  }
  if (!openblas_has_sbgemm()) {
    return "the loaded OpenBLAS (" + blas_config() +
           ") exports no cblas_sbgemm: it was built without BUILD_BFLOAT16";
  }
  return "";
}

// One shard's rows and buffers (kernels/mlp/mlp_cpu.hpp describes the sharded step).
struct Bf16Shard {
  int first_row = 0;
  int rows = 0;
  std::vector<std::uint16_t> inputs_bf16;                    // rows x inputs
  std::vector<std::vector<float>> activations;               // per hidden layer: ReLU output, fp32
  std::vector<std::vector<std::uint16_t>> activations_bf16;  // the same rounded, for products
  std::vector<float> logits;                                 // rows x classes; becomes dZ (fp32)
  std::vector<float> delta;                                  // dL/dZ of the current layer, fp32
  std::vector<float> delta_previous;                         // dL/dZ of the layer below, fp32
  std::vector<std::uint16_t> delta_bf16;                     // the current dL/dZ rounded
  std::vector<float> gradient;  // parameter-shaped, fp32; shard 0 writes the caller's buffer
  // widened_sgemm only: fp32 copies of the two bf16 operands of one product.
  std::vector<float> widened_a;
  std::vector<float> widened_b;
  double loss_sum = 0;
};

struct MlpBf16Trainer::Workspace {
  MlpSpec spec;
  int batch = 0;
  Bf16Product product = Bf16Product::openblas_sbgemm;
  SbgemmFunction sbgemm = nullptr;
  std::optional<LossScaler> scaler;

  std::vector<std::vector<std::uint16_t>> weights_bf16;  // per layer, fan_in x fan_out, shared
  std::vector<Bf16Shard> shards;
  std::vector<const float*> other_gradients;  // shards 1.. gradients, for the reduction
  std::vector<float> gradient;                // parameter-shaped, fp32, for step()

  // C (m x n, fp32) = op(A) op(B) + beta C, bf16 operands, row-major like cblas.
  void multiply(Bf16Shard& shard, CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, int m,
                int n, int k, const std::uint16_t* a, int lda, const std::uint16_t* b, int ldb,
                float beta, float* c, int ldc) const {
    if (product == Bf16Product::openblas_sbgemm) {
      sbgemm(CblasRowMajor, transpose_a, transpose_b, m, n, k, 1.0F, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    // Dense operands (ld equals the stored row length), as every product of the step has them.
    from_bfloat16(a, elements(m, k), shard.widened_a.data());
    from_bfloat16(b, elements(k, n), shard.widened_b.data());
    cblas_sgemm(CblasRowMajor, transpose_a, transpose_b, m, n, k, 1.0F, shard.widened_a.data(), lda,
                shard.widened_b.data(), ldb, beta, c, ldc);
  }

  void round_weights(const float* parameters);
  void forward(Bf16Shard& shard, const float* parameters, const float* inputs) const;
  void forward_backward(Bf16Shard& shard, const float* parameters, const float* inputs,
                        const int* labels, float loss_scale, float* gradient_out) const;
  // The whole batch's loss and (scaled) gradient into `gradient_out`.
  float batch_gradient(const float* parameters, const float* inputs, const int* labels,
                       float loss_scale, float* gradient_out);
};

void MlpBf16Trainer::Workspace::round_weights(const float* parameters) {
  // What autocast does on every forward pass: round the weights (here once per step, for every
  // shard) and the layer inputs to bf16.
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    to_bfloat16(parameters + spec.weight_offset(layer),
                elements(spec.fan_in(layer), spec.fan_out(layer)), weights_bf16[layer].data());
  }
}

void MlpBf16Trainer::Workspace::forward(Bf16Shard& shard, const float* parameters,
                                        const float* inputs) const {
  const int layers = spec.layer_count();
  const int rows = shard.rows;
  to_bfloat16(inputs + elements(shard.first_row, spec.inputs), elements(rows, spec.inputs),
              shard.inputs_bf16.data());
  const std::uint16_t* previous = shard.inputs_bf16.data();
  for (int layer = 0; layer < layers; ++layer) {
    const int fan_in = spec.fan_in(layer);
    const int fan_out = spec.fan_out(layer);
    const float* bias = parameters + spec.bias_offset(layer);
    const bool last = layer == layers - 1;
    float* output = last ? shard.logits.data() : shard.activations[layer].data();
    // Z = A W + b: the fp32 bias first, then one product with beta = 1 adds A W to it in fp32.
    for (int row = 0; row < rows; ++row) {
      std::copy(bias, bias + fan_out, output + elements(row, fan_out));
    }
    multiply(shard, CblasNoTrans, CblasNoTrans, rows, fan_out, fan_in, previous, /*lda=*/fan_in,
             weights_bf16[layer].data(), /*ldb=*/fan_out, 1.0F, output, /*ldc=*/fan_out);
    if (last) break;
    const std::size_t count = elements(rows, fan_out);
    for (std::size_t i = 0; i < count; ++i) output[i] = std::max(output[i], 0.0F);
    to_bfloat16(output, count, shard.activations_bf16[layer].data());
    previous = shard.activations_bf16[layer].data();
  }
}

void MlpBf16Trainer::Workspace::forward_backward(Bf16Shard& shard, const float* parameters,
                                                 const float* inputs, const int* labels,
                                                 float loss_scale, float* gradient_out) const {
  const int layers = spec.layer_count();
  const int rows = shard.rows;
  forward(shard, parameters, inputs);

  // Loss in fp32 from the fp32 logits, and dL/dZ of the last layer in their place:
  // (softmax - one_hot) / batch (the whole batch's size, so the shards' gradients add up), times
  // the loss scale (1 without scaling).
  const int classes = spec.classes;
  const float delta_factor = loss_scale / static_cast<float>(batch);
  double loss_sum = 0;  // double, as in the fp32 path: the loss is compared with it
  for (int row = 0; row < rows; ++row) {
    float* z = shard.logits.data() + elements(row, classes);
    const int label = labels[shard.first_row + row];
    loss_sum += softmax_cross_entropy(z, classes, label, z);
    z[label] -= 1.0F;
    for (int j = 0; j < classes; ++j) z[j] *= delta_factor;
  }
  shard.loss_sum = loss_sum;

  float* current = shard.logits.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec.fan_in(layer);
    const int fan_out = spec.fan_out(layer);
    const std::uint16_t* input_bf16 =
        layer == 0 ? shard.inputs_bf16.data() : shard.activations_bf16[layer - 1].data();
    to_bfloat16(current, elements(rows, fan_out), shard.delta_bf16.data());
    // dW = A^T dZ (fan_in x fan_out), bf16 operands, fp32 result.
    multiply(shard, CblasTrans, CblasNoTrans, fan_in, fan_out, rows, input_bf16, /*lda=*/fan_in,
             shard.delta_bf16.data(), /*ldb=*/fan_out, 0.0F,
             gradient_out + spec.weight_offset(layer), /*ldc=*/fan_out);
    // db = column sums of the fp32 dZ: a reduction, not a product, so it stays in fp32.
    float* bias_gradient = gradient_out + spec.bias_offset(layer);
    std::fill(bias_gradient, bias_gradient + fan_out, 0.0F);
    for (int row = 0; row < rows; ++row) {
      const float* d = current + elements(row, fan_out);
      for (int j = 0; j < fan_out; ++j) bias_gradient[j] += d[j];
    }
    if (layer == 0) break;
    // dA = dZ W^T (rows x fan_in), then through the ReLU: dZ_below = dA where the fp32 A > 0.
    float* below = current == shard.delta.data() ? shard.delta_previous.data() : shard.delta.data();
    multiply(shard, CblasNoTrans, CblasTrans, rows, fan_in, fan_out, shard.delta_bf16.data(),
             /*lda=*/fan_out, weights_bf16[layer].data(), /*ldb=*/fan_out, 0.0F, below,
             /*ldc=*/fan_in);
    const float* activation = shard.activations[layer - 1].data();
    const std::size_t count = elements(rows, fan_in);
    for (std::size_t i = 0; i < count; ++i) below[i] = activation[i] > 0.0F ? below[i] : 0.0F;
    current = below;
  }
}

float MlpBf16Trainer::Workspace::batch_gradient(const float* parameters, const float* inputs,
                                                const int* labels, float loss_scale,
                                                float* gradient_out) {
  const int workers = static_cast<int>(shards.size());
  if (workers > 1) require_single_blas_thread("bf16 MLP trainer");
  round_weights(parameters);
  run_on_workers(workers, [&](int index) {
    Bf16Shard& shard = shards[static_cast<std::size_t>(index)];
    forward_backward(shard, parameters, inputs, labels, loss_scale,
                     index == 0 ? gradient_out : shard.gradient.data());
  });
  double loss_sum = shards.front().loss_sum;
  other_gradients.clear();  // capacity reserved in the constructor: no allocation here
  for (std::size_t index = 1; index < shards.size(); ++index) {
    other_gradients.push_back(shards[index].gradient.data());
    loss_sum += shards[index].loss_sum;
  }
  if (!other_gradients.empty()) {
    reduce_gradients(gradient_out, other_gradients, spec.parameter_count(), nullptr, 0.0F, workers);
  }
  return static_cast<float>(loss_sum / batch);
}

MlpBf16Trainer::MlpBf16Trainer(const MlpSpec& spec, int batch, Bf16Product product, int workers)
    : workspace_(std::make_unique<Workspace>()) {
  Workspace& w = *workspace_;
  w.spec = spec;
  w.spec.validate();
  validate_batch(w.spec, batch, /*rows_available=*/batch);  // only the lower bound applies here
  if (workers < 1) {
    throw std::invalid_argument("bf16 MLP trainer: " + std::to_string(workers) +
                                " workers; must be at least 1");
  }
  w.batch = batch;
  w.product = product;
  if (product == Bf16Product::openblas_sbgemm) {
    w.sbgemm = loaded_sbgemm();
    if (w.sbgemm == nullptr) {
      throw std::runtime_error("bf16 MLP: the loaded OpenBLAS (" + blas_config() +
                               ") exports no cblas_sbgemm: it was built without BUILD_BFLOAT16");
    }
  }
  const int layers = w.spec.layer_count();
  int widest_hidden = 0;
  for (int layer = 0; layer < layers; ++layer) {
    w.weights_bf16.emplace_back(elements(w.spec.fan_in(layer), w.spec.fan_out(layer)));
  }
  for (int width : w.spec.hidden) widest_hidden = std::max(widest_hidden, width);
  const int shard_count = std::min(workers, batch);  // at most one shard per row
  w.shards.resize(static_cast<std::size_t>(shard_count));
  for (int index = 0; index < shard_count; ++index) {
    Bf16Shard& shard = w.shards[static_cast<std::size_t>(index)];
    const ShardRows range = shard_rows(batch, shard_count, index);
    shard.first_row = range.begin;
    shard.rows = range.count();
    const int rows = shard.rows;
    shard.inputs_bf16.resize(elements(rows, w.spec.inputs));
    std::size_t largest_operand = shard.inputs_bf16.size();
    for (int layer = 0; layer < layers; ++layer) {
      const int fan_in = w.spec.fan_in(layer);
      const int fan_out = w.spec.fan_out(layer);
      largest_operand = std::max({largest_operand, elements(fan_in, fan_out),
                                  elements(rows, fan_in), elements(rows, fan_out)});
    }
    for (int width : w.spec.hidden) {
      shard.activations.emplace_back(elements(rows, width));
      shard.activations_bf16.emplace_back(elements(rows, width));
    }
    shard.logits.resize(elements(rows, w.spec.classes));
    shard.delta.resize(elements(rows, widest_hidden));
    shard.delta_previous.resize(shard.delta.size());
    shard.delta_bf16.resize(elements(rows, std::max(widest_hidden, w.spec.classes)));
    if (index > 0) shard.gradient.resize(w.spec.parameter_count());
    if (product == Bf16Product::widened_sgemm) {
      shard.widened_a.resize(largest_operand);
      shard.widened_b.resize(largest_operand);
    }
  }
  w.other_gradients.reserve(w.shards.size());
  w.gradient.resize(w.spec.parameter_count());
}

MlpBf16Trainer::~MlpBf16Trainer() = default;
MlpBf16Trainer::MlpBf16Trainer(MlpBf16Trainer&&) noexcept = default;
MlpBf16Trainer& MlpBf16Trainer::operator=(MlpBf16Trainer&&) noexcept = default;

float MlpBf16Trainer::step(float* parameters, const float* inputs, const int* labels) {
  Workspace& w = *workspace_;
  const float scale = w.scaler ? w.scaler->scale() : 1.0F;
  const float loss = w.batch_gradient(parameters, inputs, labels, scale, w.gradient.data());
  if (w.scaler) {
    const bool finite = w.scaler->unscale(w.gradient.data(), w.gradient.size());
    w.scaler->update(!finite);
    if (!finite) return loss;  // skipped: the master weights stay as they were
  }
  const float rate = w.spec.learning_rate;
  const std::size_t count = w.gradient.size();
  for (std::size_t i = 0; i < count; ++i) parameters[i] -= rate * w.gradient[i];
  return loss;
}

float MlpBf16Trainer::loss_and_gradient(const float* parameters, const float* inputs,
                                        const int* labels, float* gradient) {
  return workspace_->batch_gradient(parameters, inputs, labels, 1.0F, gradient);
}

void MlpBf16Trainer::enable_loss_scaling(const LossScalerSettings& settings) {
  workspace_->scaler.emplace(settings);
}

const LossScaler* MlpBf16Trainer::loss_scaler() const {
  return workspace_->scaler ? &*workspace_->scaler : nullptr;
}

int MlpBf16Trainer::batch() const { return workspace_->batch; }
const MlpSpec& MlpBf16Trainer::spec() const { return workspace_->spec; }

}  // namespace cpu
}  // namespace gpubench
