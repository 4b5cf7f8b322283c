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

struct MlpBf16Trainer::Workspace {
  MlpSpec spec;
  int batch = 0;
  Bf16Product product = Bf16Product::openblas_sbgemm;
  SbgemmFunction sbgemm = nullptr;
  std::optional<LossScaler> scaler;

  std::vector<std::uint16_t> inputs_bf16;                    // batch x inputs
  std::vector<std::vector<std::uint16_t>> weights_bf16;      // per layer, fan_in x fan_out
  std::vector<std::vector<float>> activations;               // per hidden layer: ReLU output, fp32
  std::vector<std::vector<std::uint16_t>> activations_bf16;  // the same rounded, for products
  std::vector<float> logits;                                 // batch x classes; becomes dZ (fp32)
  std::vector<float> delta;                                  // dL/dZ of the current layer, fp32
  std::vector<float> delta_previous;                         // dL/dZ of the layer below, fp32
  std::vector<std::uint16_t> delta_bf16;                     // the current dL/dZ rounded
  std::vector<float> gradient;                               // parameter-shaped, fp32
  // widened_sgemm only: fp32 copies of the two bf16 operands of one product.
  std::vector<float> widened_a;
  std::vector<float> widened_b;

  // C (m x n, fp32) = op(A) op(B) + beta C, bf16 operands, row-major like cblas.
  void multiply(CBLAS_TRANSPOSE transpose_a, CBLAS_TRANSPOSE transpose_b, int m, int n, int k,
                const std::uint16_t* a, int lda, const std::uint16_t* b, int ldb, float beta,
                float* c, int ldc) {
    if (product == Bf16Product::openblas_sbgemm) {
      sbgemm(CblasRowMajor, transpose_a, transpose_b, m, n, k, 1.0F, a, lda, b, ldb, beta, c, ldc);
      return;
    }
    // Dense operands (ld equals the stored row length), as every product of the step has them.
    from_bfloat16(a, elements(m, k), widened_a.data());
    from_bfloat16(b, elements(k, n), widened_b.data());
    cblas_sgemm(CblasRowMajor, transpose_a, transpose_b, m, n, k, 1.0F, widened_a.data(), lda,
                widened_b.data(), ldb, beta, c, ldc);
  }

  void forward(const float* parameters, const float* inputs);
  float forward_backward(const float* parameters, const float* inputs, const int* labels,
                         float loss_scale, float* gradient_out);
};

void MlpBf16Trainer::Workspace::forward(const float* parameters, const float* inputs) {
  const int layers = spec.layer_count();
  // What autocast does on every forward pass: round the weights and the layer inputs to bf16.
  to_bfloat16(inputs, elements(batch, spec.inputs), inputs_bf16.data());
  for (int layer = 0; layer < layers; ++layer) {
    to_bfloat16(parameters + spec.weight_offset(layer),
                elements(spec.fan_in(layer), spec.fan_out(layer)), weights_bf16[layer].data());
  }
  const std::uint16_t* previous = inputs_bf16.data();
  for (int layer = 0; layer < layers; ++layer) {
    const int fan_in = spec.fan_in(layer);
    const int fan_out = spec.fan_out(layer);
    const float* bias = parameters + spec.bias_offset(layer);
    const bool last = layer == layers - 1;
    float* output = last ? logits.data() : activations[layer].data();
    // Z = A W + b: the fp32 bias first, then one product with beta = 1 adds A W to it in fp32.
    for (int row = 0; row < batch; ++row) {
      std::copy(bias, bias + fan_out, output + elements(row, fan_out));
    }
    multiply(CblasNoTrans, CblasNoTrans, batch, fan_out, fan_in, previous, /*lda=*/fan_in,
             weights_bf16[layer].data(), /*ldb=*/fan_out, 1.0F, output, /*ldc=*/fan_out);
    if (last) break;
    const std::size_t count = elements(batch, fan_out);
    for (std::size_t i = 0; i < count; ++i) output[i] = std::max(output[i], 0.0F);
    to_bfloat16(output, count, activations_bf16[layer].data());
    previous = activations_bf16[layer].data();
  }
}

float MlpBf16Trainer::Workspace::forward_backward(const float* parameters, const float* inputs,
                                                  const int* labels, float loss_scale,
                                                  float* gradient_out) {
  const int layers = spec.layer_count();
  forward(parameters, inputs);

  // Loss in fp32 from the fp32 logits, and dL/dZ of the last layer in their place:
  // (softmax - one_hot) / batch, times the loss scale (1 without scaling).
  const int classes = spec.classes;
  const float delta_factor = loss_scale / static_cast<float>(batch);
  double loss_sum = 0;  // double, as in the fp32 path: the loss is compared with it
  for (int row = 0; row < batch; ++row) {
    float* z = logits.data() + elements(row, classes);
    loss_sum += softmax_cross_entropy(z, classes, labels[row], z);
    z[labels[row]] -= 1.0F;
    for (int j = 0; j < classes; ++j) z[j] *= delta_factor;
  }

  float* current = logits.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec.fan_in(layer);
    const int fan_out = spec.fan_out(layer);
    const std::uint16_t* input_bf16 =
        layer == 0 ? inputs_bf16.data() : activations_bf16[layer - 1].data();
    to_bfloat16(current, elements(batch, fan_out), delta_bf16.data());
    // dW = A^T dZ (fan_in x fan_out), bf16 operands, fp32 result.
    multiply(CblasTrans, CblasNoTrans, fan_in, fan_out, batch, input_bf16, /*lda=*/fan_in,
             delta_bf16.data(), /*ldb=*/fan_out, 0.0F, gradient_out + spec.weight_offset(layer),
             /*ldc=*/fan_out);
    // db = column sums of the fp32 dZ: a reduction, not a product, so it stays in fp32.
    float* bias_gradient = gradient_out + spec.bias_offset(layer);
    std::fill(bias_gradient, bias_gradient + fan_out, 0.0F);
    for (int row = 0; row < batch; ++row) {
      const float* d = current + elements(row, fan_out);
      for (int j = 0; j < fan_out; ++j) bias_gradient[j] += d[j];
    }
    if (layer == 0) break;
    // dA = dZ W^T (batch x fan_in), then through the ReLU: dZ_below = dA where the fp32 A > 0.
    float* below = current == delta.data() ? delta_previous.data() : delta.data();
    multiply(CblasNoTrans, CblasTrans, batch, fan_in, fan_out, delta_bf16.data(), /*lda=*/fan_out,
             weights_bf16[layer].data(), /*ldb=*/fan_out, 0.0F, below, /*ldc=*/fan_in);
    const float* activation = activations[layer - 1].data();
    const std::size_t count = elements(batch, fan_in);
    for (std::size_t i = 0; i < count; ++i) below[i] = activation[i] > 0.0F ? below[i] : 0.0F;
    current = below;
  }
  return static_cast<float>(loss_sum / batch);
}

MlpBf16Trainer::MlpBf16Trainer(const MlpSpec& spec, int batch, Bf16Product product)
    : workspace_(std::make_unique<Workspace>()) {
  Workspace& w = *workspace_;
  w.spec = spec;
  w.spec.validate();
  validate_batch(w.spec, batch, /*rows_available=*/batch);  // only the lower bound applies here
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
  w.inputs_bf16.resize(elements(batch, w.spec.inputs));
  std::size_t largest_operand = w.inputs_bf16.size();
  int widest_hidden = 0;
  for (int layer = 0; layer < layers; ++layer) {
    const int fan_in = w.spec.fan_in(layer);
    const int fan_out = w.spec.fan_out(layer);
    w.weights_bf16.emplace_back(elements(fan_in, fan_out));
    largest_operand = std::max({largest_operand, elements(fan_in, fan_out), elements(batch, fan_in),
                                elements(batch, fan_out)});
  }
  for (int width : w.spec.hidden) {
    w.activations.emplace_back(elements(batch, width));
    w.activations_bf16.emplace_back(elements(batch, width));
    widest_hidden = std::max(widest_hidden, width);
  }
  w.logits.resize(elements(batch, w.spec.classes));
  w.delta.resize(elements(batch, widest_hidden));
  w.delta_previous.resize(w.delta.size());
  w.delta_bf16.resize(elements(batch, std::max(widest_hidden, w.spec.classes)));
  w.gradient.resize(w.spec.parameter_count());
  if (product == Bf16Product::widened_sgemm) {
    w.widened_a.resize(largest_operand);
    w.widened_b.resize(largest_operand);
  }
}

MlpBf16Trainer::~MlpBf16Trainer() = default;
MlpBf16Trainer::MlpBf16Trainer(MlpBf16Trainer&&) noexcept = default;
MlpBf16Trainer& MlpBf16Trainer::operator=(MlpBf16Trainer&&) noexcept = default;

float MlpBf16Trainer::step(float* parameters, const float* inputs, const int* labels) {
  Workspace& w = *workspace_;
  const float scale = w.scaler ? w.scaler->scale() : 1.0F;
  const float loss = w.forward_backward(parameters, inputs, labels, scale, w.gradient.data());
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
  return workspace_->forward_backward(parameters, inputs, labels, 1.0F, gradient);
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
