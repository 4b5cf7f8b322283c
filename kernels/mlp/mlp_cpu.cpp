#include "kernels/mlp/mlp_cpu.hpp"

#include <cblas.h>

#include "kernels/mlp/mlp_cpu_small.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace gpubench {

namespace cpu {

bool small_path_supported() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;  // mlp_small.cpp is compiled for x86-64-v3 only
#endif
}

float softmax_cross_entropy(const float* logits, int classes, int label, float* probabilities) {
  float largest = logits[0];
  for (int j = 1; j < classes; ++j) largest = std::max(largest, logits[j]);
  // Read before `probabilities` (which may alias `logits`) is written.
  const float label_logit = logits[label];
  float sum = 0.0F;
  if (probabilities != nullptr) {
    for (int j = 0; j < classes; ++j) {
      const float e = std::exp(logits[j] - largest);
      probabilities[j] = e;
      sum += e;
    }
    const float inverse = 1.0F / sum;
    for (int j = 0; j < classes; ++j) probabilities[j] *= inverse;
  } else {
    for (int j = 0; j < classes; ++j) sum += std::exp(logits[j] - largest);
  }
  // sum >= 1 (the largest logit contributes exp(0)), so the logarithm is finite. The difference
  // first: it is exact-ish, while adding log(sum) to a large logit would round it away.
  return (largest - label_logit) + std::log(sum);
}

MlpBlasTrainer::MlpBlasTrainer(const MlpSpec& spec, int batch) : spec_(spec), batch_(batch) {
  spec_.validate();
  validate_batch(spec_, batch, /*rows_available=*/batch);  // only the lower bound applies here
  const auto rows = static_cast<std::size_t>(batch);
  int widest_hidden = 0;
  for (int width : spec_.hidden) {
    activations_.emplace_back(rows * static_cast<std::size_t>(width));
    widest_hidden = std::max(widest_hidden, width);
  }
  logits_.resize(rows * static_cast<std::size_t>(spec_.classes));
  delta_.resize(rows * static_cast<std::size_t>(widest_hidden));
  delta_previous_.resize(delta_.size());
  gradient_.resize(spec_.parameter_count());
}

void MlpBlasTrainer::forward(const float* parameters, const float* inputs) {
  const int layers = spec_.layer_count();
  const int batch = batch_;
  // Z = A W + b, with b broadcast into Z first so one GEMM (beta = 1) adds A W to it.
  const float* previous = inputs;
  for (int layer = 0; layer < layers; ++layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const float* weights = parameters + spec_.weight_offset(layer);
    const float* bias = parameters + spec_.bias_offset(layer);
    const bool last = layer == layers - 1;
    float* output = last ? logits_.data() : activations_[layer].data();
    for (int row = 0; row < batch; ++row) {
      std::copy(bias, bias + fan_out, output + static_cast<std::size_t>(row) * fan_out);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, fan_out, fan_in, 1.0F, previous,
                /*lda=*/fan_in, weights, /*ldb=*/fan_out, 1.0F, output, /*ldc=*/fan_out);
    if (!last) {
      const std::size_t count = static_cast<std::size_t>(batch) * fan_out;
      for (std::size_t i = 0; i < count; ++i) output[i] = std::max(output[i], 0.0F);
    }
    previous = output;
  }
}

float MlpBlasTrainer::loss(const float* parameters, const float* inputs, const int* labels) {
  forward(parameters, inputs);
  double loss_sum = 0;
  for (int row = 0; row < batch_; ++row) {
    loss_sum +=
        softmax_cross_entropy(logits_.data() + static_cast<std::size_t>(row) * spec_.classes,
                              spec_.classes, labels[row], nullptr);
  }
  return static_cast<float>(loss_sum / batch_);
}

float MlpBlasTrainer::forward_backward(const float* parameters, const float* inputs,
                                       const int* labels, float* gradient) {
  const int layers = spec_.layer_count();
  const int batch = batch_;
  forward(parameters, inputs);

  // Loss, and dL/dZ of the last layer in place of the logits: (softmax - one_hot) / batch.
  const int classes = spec_.classes;
  const float inverse_batch = 1.0F / static_cast<float>(batch);
  double loss_sum = 0;  // double: a float sum of 65536 terms would lose digits the check needs
  for (int row = 0; row < batch; ++row) {
    float* z = logits_.data() + static_cast<std::size_t>(row) * classes;
    loss_sum += softmax_cross_entropy(z, classes, labels[row], z);
    z[labels[row]] -= 1.0F;
    for (int j = 0; j < classes; ++j) z[j] *= inverse_batch;
  }

  // Backward, last layer first.
  float* delta = logits_.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const float* weights = parameters + spec_.weight_offset(layer);
    const float* input = layer == 0 ? inputs : activations_[layer - 1].data();
    // dW = A^T dZ (fan_in x fan_out).
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, fan_in, fan_out, batch, 1.0F, input,
                /*lda=*/fan_in, delta, /*ldb=*/fan_out, 0.0F, gradient + spec_.weight_offset(layer),
                /*ldc=*/fan_out);
    // db = column sums of dZ.
    float* bias_gradient = gradient + spec_.bias_offset(layer);
    std::fill(bias_gradient, bias_gradient + fan_out, 0.0F);
    for (int row = 0; row < batch; ++row) {
      const float* d = delta + static_cast<std::size_t>(row) * fan_out;
      for (int j = 0; j < fan_out; ++j) bias_gradient[j] += d[j];
    }
    if (layer == 0) break;
    // dA = dZ W^T (batch x fan_in), then through the ReLU: dZ_below = dA where A > 0.
    float* below = delta == delta_.data() ? delta_previous_.data() : delta_.data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, fan_in, fan_out, 1.0F, delta,
                /*lda=*/fan_out, weights, /*ldb=*/fan_out, 0.0F, below, /*ldc=*/fan_in);
    const std::size_t count = static_cast<std::size_t>(batch) * fan_in;
    for (std::size_t i = 0; i < count; ++i) below[i] = input[i] > 0.0F ? below[i] : 0.0F;
    delta = below;
  }
  return static_cast<float>(loss_sum / batch);
}

float MlpBlasTrainer::step(float* parameters, const float* inputs, const int* labels) {
  const float loss = forward_backward(parameters, inputs, labels, gradient_.data());
  const float rate = spec_.learning_rate;
  const std::size_t count = gradient_.size();
  for (std::size_t i = 0; i < count; ++i) parameters[i] -= rate * gradient_[i];
  return loss;
}

float MlpBlasTrainer::loss_and_gradient(const float* parameters, const float* inputs,
                                        const int* labels, float* gradient) {
  return forward_backward(parameters, inputs, labels, gradient);
}

namespace {

// Logits of one row, layer by layer in plain loops (reference and evaluation path).
void forward_row(const MlpSpec& spec, const float* parameters, const float* row,
                 std::vector<float>* current, std::vector<float>* next) {
  current->assign(row, row + spec.inputs);
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const int fan_in = spec.fan_in(layer);
    const int fan_out = spec.fan_out(layer);
    const float* weights = parameters + spec.weight_offset(layer);
    const float* bias = parameters + spec.bias_offset(layer);
    next->assign(bias, bias + fan_out);
    for (int i = 0; i < fan_in; ++i) {
      const float a = (*current)[i];
      const float* w = weights + static_cast<std::size_t>(i) * fan_out;
      for (int j = 0; j < fan_out; ++j) (*next)[j] += a * w[j];
    }
    if (layer + 1 < spec.layer_count()) {
      for (float& value : *next) value = std::max(value, 0.0F);
    }
    std::swap(*current, *next);
  }
}

}  // namespace

float mlp_loss(const MlpSpec& spec, const float* parameters, const float* inputs, const int* labels,
               int rows) {
  std::vector<float> current;
  std::vector<float> next;
  double sum = 0;
  for (int row = 0; row < rows; ++row) {
    forward_row(spec, parameters, inputs + static_cast<std::size_t>(row) * spec.inputs, &current,
                &next);
    sum += softmax_cross_entropy(current.data(), spec.classes, labels[row], nullptr);
  }
  return rows > 0 ? static_cast<float>(sum / rows) : 0.0F;
}

double mlp_accuracy(const MlpSpec& spec, const float* parameters, const float* inputs,
                    const int* labels, int rows) {
  std::vector<float> current;
  std::vector<float> next;
  int correct = 0;
  for (int row = 0; row < rows; ++row) {
    forward_row(spec, parameters, inputs + static_cast<std::size_t>(row) * spec.inputs, &current,
                &next);
    const auto predicted = std::max_element(current.begin(), current.end()) - current.begin();
    if (predicted == labels[row]) ++correct;
  }
  return rows > 0 ? static_cast<double>(correct) / rows : 0.0;
}

}  // namespace cpu
}  // namespace gpubench
