#include "kernels/mlp/mlp_cpu.hpp"

#include <cblas.h>

#include "kernels/mlp/mlp_cpu_small.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpubench {

namespace cpu {

namespace {

// The thread rule's constants (kernels/common/worker_threads.hpp, ShardRule; docs/workloads.md,
// "Threads", has the measurements):
// - 32 rows per shard: a shard's weight gradient is full-size whatever its rows, and summing it
//   reads about one float per parameter per worker against 6 flop per parameter and row of the
//   shard's own products, so at 32 rows the sum costs a few percent of the step;
// - 1 MFLOP per shard (15-25 us of one Zen 4 core at the 40-65 GFLOP/s these small products run):
//   measured on 2 cores, sharding won from 2.6 MFLOP steps up (1.5x; 2.0x at 5 MFLOP) and lost
//   below 0.5 MFLOP (0.65x at 16 x 64-64-10);
// - OpenBLAS's threads for one shard from 10 MFLOP: a batch too small to shard with wide layers
//   (16 x 64-4096-10, 21 MFLOP: 1.36x on 2 threads, the median of 7 rounds, two of which ran at
//   half speed; 32 x 64-4096-4096-10: 1.5x); smaller products it runs on one thread anyway.
constexpr int kMlpMinRowsPerShard = 32;
constexpr double kMlpMinFlopPerShard = 1e6;
constexpr double kMlpMinFlopForBlasThreads = 1e7;

}  // namespace

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

MlpBlasTrainer::MlpBlasTrainer(const MlpSpec& spec, int batch, int workers)
    : spec_(spec), batch_(batch) {
  spec_.validate();
  validate_batch(spec_, batch, /*rows_available=*/batch);  // only the lower bound applies here
  if (workers < 1) {
    throw std::invalid_argument("MLP trainer: " + std::to_string(workers) +
                                " workers; must be at least 1");
  }
  // At most one shard per row: a batch smaller than the worker count leaves workers idle.
  const int shard_count = std::min(workers, batch);
  int widest_hidden = 0;
  for (int width : spec_.hidden) widest_hidden = std::max(widest_hidden, width);
  shards_.resize(static_cast<std::size_t>(shard_count));
  for (int index = 0; index < shard_count; ++index) {
    Shard& shard = shards_[static_cast<std::size_t>(index)];
    const ShardRows range = shard_rows(batch, shard_count, index);
    shard.first_row = range.begin;
    shard.rows = range.count();
    const auto rows = static_cast<std::size_t>(shard.rows);
    for (int width : spec_.hidden) {
      shard.activations.emplace_back(rows * static_cast<std::size_t>(width));
    }
    shard.logits.resize(rows * static_cast<std::size_t>(spec_.classes));
    shard.delta.resize(rows * static_cast<std::size_t>(widest_hidden));
    shard.delta_previous.resize(shard.delta.size());
    if (index > 0) shard.gradient.resize(spec_.parameter_count());
  }
  gradient_.resize(spec_.parameter_count());
  other_gradients_.reserve(shards_.size());
}

void MlpBlasTrainer::forward(Shard& shard, const float* parameters, const float* inputs) const {
  const int layers = spec_.layer_count();
  const int rows = shard.rows;
  // Z = A W + b, with b broadcast into Z first so one GEMM (beta = 1) adds A W to it.
  const float* previous = inputs + static_cast<std::size_t>(shard.first_row) * spec_.inputs;
  for (int layer = 0; layer < layers; ++layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const float* weights = parameters + spec_.weight_offset(layer);
    const float* bias = parameters + spec_.bias_offset(layer);
    const bool last = layer == layers - 1;
    float* output = last ? shard.logits.data() : shard.activations[layer].data();
    for (int row = 0; row < rows; ++row) {
      std::copy(bias, bias + fan_out, output + static_cast<std::size_t>(row) * fan_out);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, fan_out, fan_in, 1.0F, previous,
                /*lda=*/fan_in, weights, /*ldb=*/fan_out, 1.0F, output, /*ldc=*/fan_out);
    if (!last) {
      const std::size_t count = static_cast<std::size_t>(rows) * fan_out;
      for (std::size_t i = 0; i < count; ++i) output[i] = std::max(output[i], 0.0F);
    }
    previous = output;
  }
}

float MlpBlasTrainer::loss(const float* parameters, const float* inputs, const int* labels) {
  if (shards_.size() > 1) require_single_blas_thread("MLP trainer");
  run_on_workers(workers(), [&](int index) {
    Shard& shard = shards_[static_cast<std::size_t>(index)];
    forward(shard, parameters, inputs);
    shard.loss_sum = 0;
    for (int row = 0; row < shard.rows; ++row) {
      shard.loss_sum +=
          softmax_cross_entropy(shard.logits.data() + static_cast<std::size_t>(row) * spec_.classes,
                                spec_.classes, labels[shard.first_row + row], nullptr);
    }
  });
  double loss_sum = 0;
  for (const Shard& shard : shards_) loss_sum += shard.loss_sum;
  return static_cast<float>(loss_sum / batch_);
}

void MlpBlasTrainer::forward_backward(Shard& shard, const float* parameters, const float* inputs,
                                      const int* labels, float* gradient) const {
  const int layers = spec_.layer_count();
  const int rows = shard.rows;
  forward(shard, parameters, inputs);

  // Loss, and dL/dZ of the last layer in place of the logits: (softmax - one_hot) / batch, with
  // the whole batch's size, so that the shards' gradients add up to the batch's.
  const int classes = spec_.classes;
  const float inverse_batch = 1.0F / static_cast<float>(batch_);
  double loss_sum = 0;  // double: a float sum of 65536 terms would lose digits the check needs
  for (int row = 0; row < rows; ++row) {
    float* z = shard.logits.data() + static_cast<std::size_t>(row) * classes;
    const int label = labels[shard.first_row + row];
    loss_sum += softmax_cross_entropy(z, classes, label, z);
    z[label] -= 1.0F;
    for (int j = 0; j < classes; ++j) z[j] *= inverse_batch;
  }
  shard.loss_sum = loss_sum;

  // Backward, last layer first.
  const float* shard_inputs = inputs + static_cast<std::size_t>(shard.first_row) * spec_.inputs;
  float* delta = shard.logits.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const float* weights = parameters + spec_.weight_offset(layer);
    const float* input = layer == 0 ? shard_inputs : shard.activations[layer - 1].data();
    // dW = A^T dZ (fan_in x fan_out).
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, fan_in, fan_out, rows, 1.0F, input,
                /*lda=*/fan_in, delta, /*ldb=*/fan_out, 0.0F, gradient + spec_.weight_offset(layer),
                /*ldc=*/fan_out);
    // db = column sums of dZ.
    float* bias_gradient = gradient + spec_.bias_offset(layer);
    std::fill(bias_gradient, bias_gradient + fan_out, 0.0F);
    for (int row = 0; row < rows; ++row) {
      const float* d = delta + static_cast<std::size_t>(row) * fan_out;
      for (int j = 0; j < fan_out; ++j) bias_gradient[j] += d[j];
    }
    if (layer == 0) break;
    // dA = dZ W^T (rows x fan_in), then through the ReLU: dZ_below = dA where A > 0.
    float* below = delta == shard.delta.data() ? shard.delta_previous.data() : shard.delta.data();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, fan_in, fan_out, 1.0F, delta,
                /*lda=*/fan_out, weights, /*ldb=*/fan_out, 0.0F, below, /*ldc=*/fan_in);
    const std::size_t count = static_cast<std::size_t>(rows) * fan_in;
    for (std::size_t i = 0; i < count; ++i) below[i] = input[i] > 0.0F ? below[i] : 0.0F;
    delta = below;
  }
}

float MlpBlasTrainer::batch_step(const float* parameters, const float* inputs, const int* labels,
                                 float* gradient, float* parameters_to_update) {
  const int shard_count = workers();
  const float rate = spec_.learning_rate;
  const std::size_t count = spec_.parameter_count();
  if (shard_count == 1) {
    // One shard: the caller's thread, OpenBLAS at whatever thread count the caller set.
    forward_backward(shards_.front(), parameters, inputs, labels, gradient);
    if (parameters_to_update != nullptr) {
      for (std::size_t i = 0; i < count; ++i) parameters_to_update[i] -= rate * gradient[i];
    }
    return static_cast<float>(shards_.front().loss_sum / batch_);
  }
  require_single_blas_thread("MLP trainer");
  run_on_workers(shard_count, [&](int index) {
    Shard& shard = shards_[static_cast<std::size_t>(index)];
    forward_backward(shard, parameters, inputs, labels,
                     index == 0 ? gradient : shard.gradient.data());
  });
  other_gradients_.clear();  // capacity reserved in the constructor: no allocation here
  double loss_sum = shards_.front().loss_sum;
  for (std::size_t index = 1; index < shards_.size(); ++index) {
    other_gradients_.push_back(shards_[index].gradient.data());
    loss_sum += shards_[index].loss_sum;
  }
  reduce_gradients(gradient, other_gradients_, count, parameters_to_update, rate, shard_count);
  return static_cast<float>(loss_sum / batch_);
}

float MlpBlasTrainer::step(float* parameters, const float* inputs, const int* labels) {
  return batch_step(parameters, inputs, labels, gradient_.data(), parameters);
}

float MlpBlasTrainer::loss_and_gradient(const float* parameters, const float* inputs,
                                        const int* labels, float* gradient) {
  return batch_step(parameters, inputs, labels, gradient, nullptr);
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

CpuThreadPlan mlp_cpu_thread_plan(const MlpSpec& spec, int batch, int threads) {
  ShardRule rule;
  rule.min_rows_per_shard = kMlpMinRowsPerShard;
  rule.min_flop_per_shard = kMlpMinFlopPerShard;
  rule.min_flop_for_blas_threads = kMlpMinFlopForBlasThreads;
  return plan_cpu_threads(rule, mlp_step_flop(spec, batch), batch, threads);
}

}  // namespace cpu
}  // namespace gpubench
