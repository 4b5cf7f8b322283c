// The GPU CNN trainer (kernels/cnn/cnn_cuda_trainer.hpp) against a naive double-precision
// reference written here (direct convolution loops, max-pool, linear layers, softmax
// cross-entropy): the first step's loss and every parameter's gradient; eager and graph runs,
// resident and copied inputs follow the same trajectory; batch 1 and large batches; bad
// configurations are clear errors; the observer sees the CPU trainer's operation names; the
// device memory it takes is its model's within page rounding; the `bench` rows carry their input
// bytes, graph steps and device memory, and the largest-batch row runs where the model says.
// Label `gpu`; skipped without a device.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/device_memory.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/seeded_random.hpp"
#include "kernels/common/step_observer.hpp"
#include "tests/bench_process.hpp"
#include "tests/cnn_test_support.hpp"
#include "tests/gpu_test_main.hpp"

namespace {

using gpubench::CnnSpec;
using gpubench::ConvShape;
using gpubench::cuda::CnnGpuTrainer;
using gpubench::cuda::TrainingExecution;
using gpubench::cuda::TrainingInput;
using gpubench::cuda::TrainingRunConfig;
using Batch = gpubench::test::CnnBatch;
using gpubench::test::cnn_run_config;
using gpubench::test::cnn_trajectory;
using gpubench::test::random_cnn_batch;

constexpr int kImageFloats = CnnSpec::image_floats();
constexpr int kLayers = CnnSpec::kConvLayers + CnnSpec::kLinearLayers;

// The first step's loss: the GPU sums in fp32 in other orders (cuBLAS, block reductions, expf);
// its logits are within ~1e-6 of the reference's relative to their scale, which moves a loss near
// ln(10) by far less than this. A wrong index, a missed padding or a stale buffer moves it by
// 1e-3 or more.
constexpr double kLossTolerance = 1e-5;  // relative
// Gradients, per tensor (each layer's weight, each bias): max |gpu - reference| <= this x max
// |reference| of the tensor. fp32 rounding through three convolutions (sums of up to batch x 1024
// terms) stays below ~1e-5 of a tensor's largest entry; a wrong gradient is off by O(1) there.
constexpr double kGradientTolerance = 1e-4;
// A max-pool routes the gradient to one window position, chosen by comparing fp32 values on the
// GPU and doubles here: a window whose two largest values (or, with ReLU, whose largest value and
// 0) are closer than fp32 rounding could pick differently and move one gradient term elsewhere.
// Batches for the gradient check are drawn until every window's margin exceeds this fraction of
// the layer's largest |value|, ~10x the GPU's rounding there.
constexpr double kPoolMarginFraction = 1e-5;

// ---- The reference: straightforward loops in double, written from the network's definition. ----

struct Reference {
  double loss = 0;
  std::vector<double> gradient;  // the spec's parameter layout; empty for a forward-only run
  // The smallest max-pool margin of the batch, as a fraction of its layer's largest |value|.
  double pool_margin = std::numeric_limits<double>::infinity();
};

struct ConvRecord {
  std::vector<double> input;      // batch x in x size x size
  std::vector<double> pre;        // batch x out x size x size, before the ReLU
  std::vector<double> pooled;     // batch x out x size/2 x size/2
  std::vector<std::size_t> from;  // per pooled value, the index in `pre` of its maximum
};

std::size_t nchw(int image, int channels, int channel, int size, int y, int x) {
  return ((static_cast<std::size_t>(image) * channels + channel) * size + y) * size + x;
}

Reference reference_step(const CnnSpec& spec, const Batch& batch,
                         const std::vector<float>& parameters, bool with_gradient) {
  constexpr int kKernel = ConvShape::kKernel;
  constexpr int kPad = ConvShape::kPadding;
  const std::vector<double> p(parameters.begin(), parameters.end());
  const int n_images = batch.size;
  Reference result;
  std::array<ConvRecord, CnnSpec::kConvLayers> records;

  std::vector<double> input(batch.images.begin(), batch.images.end());
  for (int l = 0; l < CnnSpec::kConvLayers; ++l) {
    const ConvShape& shape = spec.conv[l];
    const int in_c = shape.in_channels;
    const int out_c = shape.out_channels;
    const int size = shape.size;
    const double* w = p.data() + spec.weight_offset(l);
    const double* b = p.data() + spec.bias_offset(l);
    ConvRecord& record = records[l];
    record.input = input;
    record.pre.assign(static_cast<std::size_t>(n_images) * out_c * size * size, 0.0);
    for (int n = 0; n < n_images; ++n) {
      for (int co = 0; co < out_c; ++co) {
        for (int y = 0; y < size; ++y) {
          for (int x = 0; x < size; ++x) record.pre[nchw(n, out_c, co, size, y, x)] = b[co];
        }
        for (int ci = 0; ci < in_c; ++ci) {
          for (int ky = 0; ky < kKernel; ++ky) {
            for (int kx = 0; kx < kKernel; ++kx) {
              const double weight = w[((co * in_c + ci) * kKernel + ky) * kKernel + kx];
              for (int y = 0; y < size; ++y) {
                const int iy = y + ky - kPad;
                if (iy < 0 || iy >= size) continue;
                for (int x = 0; x < size; ++x) {
                  const int ix = x + kx - kPad;
                  if (ix < 0 || ix >= size) continue;
                  record.pre[nchw(n, out_c, co, size, y, x)] +=
                      weight * input[nchw(n, in_c, ci, size, iy, ix)];
                }
              }
            }
          }
        }
      }
    }
    double scale = 0;
    for (double value : record.pre) scale = std::max(scale, std::fabs(value));
    const auto activation = [&](double value) { return spec.relu ? std::max(value, 0.0) : value; };
    const int half = size / 2;
    record.pooled.assign(static_cast<std::size_t>(n_images) * out_c * half * half, 0.0);
    record.from.assign(record.pooled.size(), 0);
    for (int n = 0; n < n_images; ++n) {
      for (int c = 0; c < out_c; ++c) {
        for (int py = 0; py < half; ++py) {
          for (int px = 0; px < half; ++px) {
            std::vector<double> candidates;
            std::size_t best_index = 0;
            double best = -std::numeric_limits<double>::infinity();
            for (int dy = 0; dy < 2; ++dy) {
              for (int dx = 0; dx < 2; ++dx) {
                const std::size_t index = nchw(n, out_c, c, size, 2 * py + dy, 2 * px + dx);
                const double value = activation(record.pre[index]);
                if (value > best) {  // the first maximum wins a tie
                  best = value;
                  best_index = index;
                }
                candidates.push_back(record.pre[index]);
              }
            }
            // With the ReLU, whether the maximum passes at all is a comparison with 0: a window
            // of values all below 0 passes nothing, unless one of them is within rounding of 0.
            if (spec.relu) candidates.push_back(0.0);
            std::sort(candidates.begin(), candidates.end(), std::greater<>());
            result.pool_margin =
                std::min(result.pool_margin, (candidates[0] - candidates[1]) / scale);
            const std::size_t pooled_index = nchw(n, out_c, c, half, py, px);
            record.pooled[pooled_index] = best;
            record.from[pooled_index] = best_index;
          }
        }
      }
    }
    input = record.pooled;
  }

  // fc1, fc2: y = x W^T + b.
  const auto linear = [&](int layer, const std::vector<double>& x) {
    const gpubench::LinearShape& shape = spec.linear[layer - CnnSpec::kConvLayers];
    const double* w = p.data() + spec.weight_offset(layer);
    const double* b = p.data() + spec.bias_offset(layer);
    std::vector<double> y(static_cast<std::size_t>(n_images) * shape.out_features);
    for (int n = 0; n < n_images; ++n) {
      for (int o = 0; o < shape.out_features; ++o) {
        double sum = b[o];
        for (int i = 0; i < shape.in_features; ++i) {
          sum += w[static_cast<std::size_t>(o) * shape.in_features + i] *
                 x[static_cast<std::size_t>(n) * shape.in_features + i];
        }
        y[static_cast<std::size_t>(n) * shape.out_features + o] = sum;
      }
    }
    return y;
  };
  const int fc1 = CnnSpec::kConvLayers;
  const int fc2 = fc1 + 1;
  const std::vector<double> features = input;  // NCHW flattened per image: torch.flatten's order
  const std::vector<double> hidden = linear(fc1, features);
  std::vector<double> logits = linear(fc2, hidden);

  constexpr int kClasses = CnnSpec::kClasses;
  std::vector<double> dlogits(logits.size());
  double loss = 0;
  for (int n = 0; n < n_images; ++n) {
    const double* z = logits.data() + static_cast<std::size_t>(n) * kClasses;
    const double largest = *std::max_element(z, z + kClasses);
    double sum = 0;
    for (int k = 0; k < kClasses; ++k) sum += std::exp(z[k] - largest);
    const int label = batch.labels[static_cast<std::size_t>(n)];
    loss += largest + std::log(sum) - z[label];
    for (int k = 0; k < kClasses; ++k) {
      dlogits[static_cast<std::size_t>(n) * kClasses + k] =
          (std::exp(z[k] - largest) / sum - (k == label ? 1.0 : 0.0)) / n_images;
    }
  }
  result.loss = loss / n_images;
  if (!with_gradient) return result;

  std::vector<double>& g = result.gradient;
  g.assign(p.size(), 0.0);
  // Linear backward: dW = dY^T X, db = column sums of dY, dX = dY W.
  const auto linear_backward = [&](int layer, const std::vector<double>& x,
                                   const std::vector<double>& dy) {
    const gpubench::LinearShape& shape = spec.linear[layer - CnnSpec::kConvLayers];
    const double* w = p.data() + spec.weight_offset(layer);
    double* dw = g.data() + spec.weight_offset(layer);
    double* db = g.data() + spec.bias_offset(layer);
    std::vector<double> dx(static_cast<std::size_t>(n_images) * shape.in_features, 0.0);
    for (int n = 0; n < n_images; ++n) {
      for (int o = 0; o < shape.out_features; ++o) {
        const double d = dy[static_cast<std::size_t>(n) * shape.out_features + o];
        db[o] += d;
        for (int i = 0; i < shape.in_features; ++i) {
          const std::size_t wi = static_cast<std::size_t>(o) * shape.in_features + i;
          const std::size_t xi = static_cast<std::size_t>(n) * shape.in_features + i;
          dw[wi] += d * x[xi];
          dx[xi] += d * w[wi];
        }
      }
    }
    return dx;
  };
  const std::vector<double> dhidden = linear_backward(fc2, hidden, dlogits);
  std::vector<double> dpooled = linear_backward(fc1, features, dhidden);

  for (int l = CnnSpec::kConvLayers - 1; l >= 0; --l) {
    const ConvShape& shape = spec.conv[l];
    const int in_c = shape.in_channels;
    const int out_c = shape.out_channels;
    const int size = shape.size;
    const ConvRecord& record = records[l];
    // The pool's backward scatters to each window's maximum; the ReLU's passes where pre > 0.
    std::vector<double> dpre(record.pre.size(), 0.0);
    for (std::size_t q = 0; q < record.from.size(); ++q) dpre[record.from[q]] += dpooled[q];
    if (spec.relu) {
      for (std::size_t i = 0; i < dpre.size(); ++i) {
        if (!(record.pre[i] > 0.0)) dpre[i] = 0.0;
      }
    }
    const double* w = p.data() + spec.weight_offset(l);
    double* dw = g.data() + spec.weight_offset(l);
    double* db = g.data() + spec.bias_offset(l);
    std::vector<double> dinput(record.input.size(), 0.0);
    for (int n = 0; n < n_images; ++n) {
      for (int co = 0; co < out_c; ++co) {
        for (int y = 0; y < size; ++y) {
          for (int x = 0; x < size; ++x) db[co] += dpre[nchw(n, out_c, co, size, y, x)];
        }
        for (int ci = 0; ci < in_c; ++ci) {
          for (int ky = 0; ky < kKernel; ++ky) {
            for (int kx = 0; kx < kKernel; ++kx) {
              const std::size_t wi =
                  ((static_cast<std::size_t>(co) * in_c + ci) * kKernel + ky) * kKernel + kx;
              double sum = 0;
              for (int y = 0; y < size; ++y) {
                const int iy = y + ky - kPad;
                if (iy < 0 || iy >= size) continue;
                for (int x = 0; x < size; ++x) {
                  const int ix = x + kx - kPad;
                  if (ix < 0 || ix >= size) continue;
                  const double d = dpre[nchw(n, out_c, co, size, y, x)];
                  sum += d * record.input[nchw(n, in_c, ci, size, iy, ix)];
                  if (l > 0) dinput[nchw(n, in_c, ci, size, iy, ix)] += d * w[wi];
                }
              }
              dw[wi] += sum;
            }
          }
        }
      }
    }
    dpooled = std::move(dinput);
  }
  return result;
}

// The first of `tries` seeds from `first_seed` whose batch has every pool margin above
// kPoolMarginFraction (see there), so the gradient comparison is not at the mercy of rounding.
Batch batch_with_clear_pooling(const CnnSpec& spec, int size, const std::vector<float>& parameters,
                               std::uint64_t first_seed) {
  constexpr int kTries = 200;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    Batch batch = random_cnn_batch(size, first_seed + static_cast<std::uint64_t>(attempt));
    if (reference_step(spec, batch, parameters, false).pool_margin > kPoolMarginFraction) {
      return batch;
    }
  }
  ADD_FAILURE() << "no batch of " << size << " images with clear max-pool decisions in " << kTries
                << " seeds: is the reference's margin computed right?";
  return random_cnn_batch(size, first_seed);
}

const char* layer_name(int layer) {
  static const std::array<const char*, kLayers> names = {"conv1", "conv2", "conv3", "fc1", "fc2"};
  return names[static_cast<std::size_t>(layer)];
}

// Per tensor: max |gpu - reference| <= kGradientTolerance x max |reference|.
void expect_gradient_matches(const CnnSpec& spec, const std::vector<float>& gpu,
                             const std::vector<double>& reference, const std::string& what) {
  ASSERT_EQ(gpu.size(), reference.size()) << what;
  for (int layer = 0; layer < kLayers; ++layer) {
    const std::size_t bounds[3] = {spec.weight_offset(layer), spec.bias_offset(layer),
                                   spec.weight_offset(layer + 1)};
    for (int part = 0; part < 2; ++part) {
      double largest = 0;
      double worst = 0;
      std::size_t worst_index = bounds[part];
      for (std::size_t i = bounds[part]; i < bounds[part + 1]; ++i) {
        largest = std::max(largest, std::fabs(reference[i]));
        const double error = std::fabs(static_cast<double>(gpu[i]) - reference[i]);
        if (error > worst) {
          worst = error;
          worst_index = i;
        }
      }
      EXPECT_GT(largest, 0.0) << what << ": " << layer_name(layer) << " has no gradient at all";
      EXPECT_LE(worst, kGradientTolerance * largest)
          << what << ": " << layer_name(layer) << (part == 0 ? " weight" : " bias")
          << " gradient, element " << worst_index - bounds[part] << ": gpu " << gpu[worst_index]
          << ", reference " << reference[worst_index] << ", largest |reference| " << largest;
    }
  }
}

// One eager step from the initial weights: its loss and gradient against the reference, and the
// update parameters -= lr * gradient.
void check_first_step(const CnnSpec& spec, int images, std::uint64_t seed) {
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const Batch batch = batch_with_clear_pooling(spec, images, initial, seed);
  const Reference reference = reference_step(spec, batch, initial, true);
  const std::string what = "batch " + std::to_string(images) + (spec.relu ? " relu" : "");

  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  // The constructor's warm-up step left the initial loss and gradient, and the initial weights.
  const float warm_up_loss = trainer.last_loss();
  const std::vector<float> warm_up_gradient = trainer.last_gradient();
  EXPECT_EQ(trainer.parameters(), initial) << what;
  const float loss = trainer.step_and_read_loss();
  EXPECT_NEAR(loss, reference.loss, kLossTolerance * reference.loss) << what;
  const std::vector<float> gradient = trainer.last_gradient();
  expect_gradient_matches(spec, gradient, reference.gradient, what);
  EXPECT_EQ(loss, warm_up_loss) << what << ": the same step twice differs";
  EXPECT_EQ(gradient, warm_up_gradient) << what << ": the same step twice differs";

  // One SGD step: after = initial - lr * gradient, up to one rounding of each product and
  // difference (the GPU may fuse them into one FMA).
  const std::vector<float> after = trainer.parameters();
  ASSERT_EQ(after.size(), initial.size());
  const double lr = spec.learning_rate;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double step = lr * gradient[i];
    const double expected = static_cast<double>(initial[i]) - step;
    const double slack = 2.4e-7 * (std::fabs(initial[i]) + std::fabs(step)) + 1e-30;
    if (std::fabs(after[i] - expected) > slack && wrong++ < 5) {
      ADD_FAILURE() << what << ": parameter " << i << " is " << after[i] << " after the step, "
                    << expected << " expected";
    }
  }
  EXPECT_EQ(wrong, 0U) << what;
}

TEST(CnnGpu, FirstStepLossAndGradientMatchTheDoubleReference) {
  check_first_step(CnnSpec{}, 3, 100);
}

TEST(CnnGpu, FirstStepWithReluMatchesTheDoubleReference) {
  CnnSpec spec;
  spec.relu = true;
  check_first_step(spec, 3, 300);
}

TEST(CnnGpu, BatchOfOneImageMatchesTheDoubleReference) { check_first_step(CnnSpec{}, 1, 500); }

void expect_same_trajectory(const std::vector<float>& losses, const std::vector<float>& reference,
                            const std::string& what) {
  ASSERT_EQ(losses.size(), reference.size()) << what;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], reference[i], kLossTolerance * std::fabs(reference[i]))
        << what << " step " << i + 1;
  }
}

TEST(CnnGpu, EagerAndGraphRunsFollowTheSameTrajectory) {
  constexpr int kSteps = 20;
  const CnnSpec spec;
  const Batch batch = random_cnn_batch(8, 7);
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  EXPECT_EQ(trainer.launches_per_step(), 37);

  const std::vector<float> eager = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), kSteps);
  ASSERT_EQ(eager.size(), static_cast<std::size_t>(kSteps));
  for (float loss : eager) EXPECT_TRUE(std::isfinite(loss));
  const Reference first = reference_step(spec, batch, initial, false);
  EXPECT_NEAR(eager[0], first.loss, kLossTolerance * first.loss);
  // The same batch every step at lr 0.01: the loss goes down.
  EXPECT_LT(eager.back(), eager.front());
  // A second eager run from the reset weights repeats the first bit for bit (fixed-order sums,
  // one stream, cuBLAS with a fixed workspace).
  EXPECT_EQ(
      cnn_trajectory(trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident),
                     kSteps),
      eager);

  // A graph per step with its readback; the same kernels and products in the same order.
  const std::vector<float> graph = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::resident), kSteps);
  EXPECT_EQ(trainer.graph_steps(), 1);
  expect_same_trajectory(graph, eager, "graph readback:1");
  EXPECT_EQ(
      cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::resident),
                     kSteps),
      graph)
      << "graph replays differ";
  // Five steps per graph, a readback at the end of each.
  const std::vector<float> every_fifth = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::graph, 5, TrainingInput::resident), kSteps);
  EXPECT_EQ(trainer.graph_steps(), 5);
  ASSERT_EQ(every_fifth.size(), 4U);
  for (std::size_t i = 0; i < every_fifth.size(); ++i) {
    EXPECT_NEAR(every_fifth[i], eager[5 * i + 4], kLossTolerance * eager[5 * i + 4]);
  }
  // No readbacks, 8 steps per graph: two graphs and a remainder of 4.
  const std::vector<float> none = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::graph, 0, TrainingInput::resident, 8), kSteps);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(trainer.graph_steps(), 8);
  EXPECT_NEAR(trainer.last_loss(), eager.back(), kLossTolerance * eager.back());
}

// The two trainers a user compares, operation by operation in the same network: the GPU's first
// gradient against the CPU trainer's (same per-tensor tolerance as against the double reference),
// and 20 steps of losses within 1e-3 relative (each step carries the previous steps' rounding, as
// the benchmarks' trajectory check allows).
TEST(CnnGpu, FollowsTheCpuTrainer) {
  constexpr int kSteps = 20;
  constexpr double kTrajectoryTolerance = 1e-3;
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  // Four images: the CPU and the GPU trainer must take the same max-pool decisions for 20 steps,
  // and among 16 images no seed of 200 keeps every pooling window's margin clear (checked on the
  // CPU: the search fails at 16 and succeeds at 4).
  const Batch batch = batch_with_clear_pooling(spec, 4, initial, 4000);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::CnnCpuTrainer cpu(spec, batch.size);
  std::vector<float> cpu_gradient(spec.parameter_count());
  cpu.loss_and_gradient(initial.data(), batch.images.data(), batch.labels.data(),
                        cpu_gradient.data());
  CnnGpuTrainer gpu(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  // After construction the trainer holds the gradient at the initial parameters.
  const std::vector<double> cpu_as_double(cpu_gradient.begin(), cpu_gradient.end());
  expect_gradient_matches(spec, gpu.last_gradient(), cpu_as_double, "GPU vs CPU trainer");

  std::vector<float> parameters = initial;
  const std::vector<float> gpu_losses = cnn_trajectory(
      gpu, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), kSteps);
  ASSERT_EQ(gpu_losses.size(), static_cast<std::size_t>(kSteps));
  for (int step = 0; step < kSteps; ++step) {
    const float cpu_loss = cpu.step(parameters.data(), batch.images.data(), batch.labels.data());
    EXPECT_NEAR(gpu_losses[step], cpu_loss, kTrajectoryTolerance * cpu_loss) << "step " << step + 1;
  }
}

TEST(CnnGpu, CopiedInputsGiveTheResidentLosses) {
  constexpr int kSteps = 6;
  const CnnSpec spec;
  const Batch batch = random_cnn_batch(16, 11);
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  const std::size_t batch_bytes =
      static_cast<std::size_t>(batch.size) * (kImageFloats * sizeof(float) + sizeof(int));
  // The copies bring the same bytes the resident buffers hold, and the same kernels run on them:
  // the losses are identical, bit for bit.
  const std::vector<float> resident = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), kSteps);
  EXPECT_EQ(trainer.input_bytes_per_step(), 0U);
  for (TrainingInput input : {TrainingInput::pageable, TrainingInput::pinned}) {
    EXPECT_EQ(cnn_trajectory(trainer, cnn_run_config(TrainingExecution::eager, 1, input), kSteps),
              resident)
        << "eager " << gpubench::cuda::training_input_name(input);
    EXPECT_EQ(trainer.input_bytes_per_step(), batch_bytes);
  }
  const std::vector<float> graph_resident = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::resident), kSteps);
  EXPECT_EQ(
      cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::pinned),
                     kSteps),
      graph_resident)
      << "graph pinned";
  expect_same_trajectory(graph_resident, resident, "graph resident");
}

TEST(CnnGpu, BatchOneAndLargeBatchesRunAndStayFinite) {
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  for (int images : {1, 300, 1024}) {
    const Batch batch = random_cnn_batch(images, 1000 + static_cast<std::uint64_t>(images));
    CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(),
                          initial.data());
    // The model the benchmarks plan with, counted by hand in test_cnn_gpu_memory.cpp.
    EXPECT_EQ(trainer.device_bytes(), gpubench::cuda::cnn_gpu_device_bytes(spec, images))
        << "batch " << images;
    const std::string what = "batch " + std::to_string(images);
    const std::vector<float> eager = cnn_trajectory(
        trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), 3);
    for (float loss : eager) EXPECT_TRUE(std::isfinite(loss)) << what;
    const std::vector<float> graph = cnn_trajectory(
        trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::pinned), 3);
    expect_same_trajectory(graph, eager, what + " graph");
    for (float value : trainer.parameters()) {
      if (!std::isfinite(value)) {
        ADD_FAILURE() << what << ": a parameter is not finite";
        break;
      }
    }
    if (images <= 300) {  // more than 256 images: the loss is summed over several blocks
      const Reference first = reference_step(spec, batch, initial, false);
      EXPECT_NEAR(eager[0], first.loss, kLossTolerance * first.loss) << what;
    }
  }
}

// Records the operations an observer sees, checking that begin and end come in pairs.
class RecordingObserver : public gpubench::StepObserver {
 public:
  void begin(const char* operation) override {
    EXPECT_TRUE(open_.empty()) << operation << " begins inside " << open_;
    open_ = operation;
  }
  void end(const char* operation) noexcept override {
    EXPECT_EQ(open_, operation);
    open_.clear();
    operations.emplace_back(operation);
  }
  std::vector<std::string> operations;

 private:
  std::string open_;
};

TEST(CnnGpu, ObserverSeesTheCpuTrainersOperationNamesInEagerStepsOnly) {
  const CnnSpec spec;
  const Batch batch = random_cnn_batch(2, 3);
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  RecordingObserver observer;
  trainer.set_observer(&observer);
  const float observed = trainer.step_and_read_loss();
  const std::vector<std::string> expected = {"conv1.im2col",
                                             "conv1.gemm",
                                             "conv1.bias",
                                             "pool1.forward",
                                             "conv2.im2col",
                                             "conv2.gemm",
                                             "conv2.bias",
                                             "pool2.forward",
                                             "conv3.im2col",
                                             "conv3.gemm",
                                             "conv3.bias",
                                             "pool3.forward",
                                             "fc1.forward",
                                             "fc2.forward",
                                             "loss",
                                             "fc2.backward",
                                             "fc1.backward",
                                             "pool3.backward",
                                             "conv3.weight_gradient",
                                             "conv3.input_gradient",
                                             "pool2.backward",
                                             "conv2.weight_gradient",
                                             "conv2.input_gradient",
                                             "pool1.backward",
                                             "conv1.weight_gradient",
                                             "update"};
  EXPECT_EQ(observer.operations, expected);
  // The work model of the GPU trainer's operations (flop_op:, bytes_op:) names exactly these.
  std::vector<std::string> modelled;
  for (const auto& entry :
       gpubench::cnn_operation_work(spec, batch.size, gpubench::CnnTrainerKind::gpu)) {
    modelled.push_back(entry.first);
  }
  std::vector<std::string> named = expected;
  std::sort(named.begin(), named.end());
  EXPECT_EQ(modelled, named);

  observer.operations.clear();
  trainer.prepare(cnn_run_config(TrainingExecution::eager, 0, TrainingInput::resident), 2);
  trainer.run(2, nullptr);
  EXPECT_EQ(observer.operations.size(), 2 * expected.size());

  observer.operations.clear();
  trainer.prepare(cnn_run_config(TrainingExecution::graph, 0, TrainingInput::resident), 2);
  trainer.run(2, nullptr);
  trainer.capture_compute_graph(2).launch(trainer.stream());
  EXPECT_TRUE(observer.operations.empty()) << "a captured step reported " << observer.operations[0];

  // Observing changes nothing in the numbers.
  trainer.set_observer(nullptr);
  trainer.enqueue_reset();
  EXPECT_EQ(trainer.step_and_read_loss(), observed);
}

// Every kernel and launch path, a few steps each on small batches: the case tools/gpu-check runs
// under compute-sanitizer (memcheck, racecheck, synccheck, initcheck), where every access is a
// checked event.
TEST(CnnGpu, ShortRunsOfEveryKernelForTheSanitizers) {
  CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  // Five images: conv1's bias sums span two blocks per channel (5 x 1024 > 4096 elements), so
  // the partial sums and the last-block finish run too.
  const Batch batch = random_cnn_batch(5, 21);
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  const Reference first = reference_step(spec, batch, initial, false);
  const std::vector<float> eager = cnn_trajectory(
      trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::pageable), 3);
  ASSERT_EQ(eager.size(), 3U);
  EXPECT_NEAR(eager[0], first.loss, kLossTolerance * first.loss);
  expect_same_trajectory(
      cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::pinned),
                     3),
      eager, "graph pinned");
  cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 0, TrainingInput::resident, 2),
                 3);
  EXPECT_NEAR(trainer.last_loss(), eager.back(), kLossTolerance * eager.back());
  // The compute graph the benchmark times: two steps, the same losses as two eager steps.
  trainer.enqueue_reset();
  trainer.capture_compute_graph(2).launch(trainer.stream());
  const float after_graph = trainer.last_loss();
  trainer.enqueue_reset();
  trainer.step_and_read_loss();
  EXPECT_NEAR(after_graph, trainer.step_and_read_loss(), kLossTolerance * after_graph);

  // The ReLU paths of the bias kernel and the pool's backward.
  spec.relu = true;
  CnnGpuTrainer relu(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  const Reference relu_first = reference_step(spec, batch, initial, false);
  EXPECT_NEAR(relu.step_and_read_loss(), relu_first.loss, kLossTolerance * relu_first.loss);
  EXPECT_TRUE(std::isfinite(relu.step_and_read_loss()));

  // More than 256 images: the loss's partial sums and last-block finish.
  spec.relu = false;
  const Batch tall = random_cnn_batch(257, 22);
  CnnGpuTrainer tall_trainer(spec, tall.size, tall.images.data(), tall.labels.data(),
                             initial.data());
  for (float loss : cnn_trajectory(
           tall_trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), 2)) {
    EXPECT_TRUE(std::isfinite(loss));
  }
}

template <typename Error, typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(CnnGpu, BadConfigurationsAreClearErrors) {
  const CnnSpec spec;
  const Batch batch = random_cnn_batch(4, 5);
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const auto construct = [&](const CnnSpec& s, int images, const int* labels) {
    CnnGpuTrainer trainer(s, images, batch.images.data(), labels, initial.data());
  };
  const auto expect_message = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "\"" << message << "\" lacks \"" << part << "\"";
  };
  expect_message(error_of<std::invalid_argument>([&] { construct(spec, 0, batch.labels.data()); }),
                 "invalid CNN batch 0: must be >= 1");
  expect_message(error_of<std::invalid_argument>([&] { construct(spec, -3, batch.labels.data()); }),
                 "invalid CNN batch -3");
  // Checked before anything is read or allocated, so the 4-image arrays are enough here.
  expect_message(
      error_of<std::invalid_argument>([&] { construct(spec, 20000, batch.labels.data()); }),
      "CNN batch 20000 is too large for the GPU trainer");
  CnnSpec broken = spec;
  broken.conv[1].in_channels = 16;
  expect_message(
      error_of<std::invalid_argument>([&] { construct(broken, 4, batch.labels.data()); }),
      "conv2 takes 16");
  std::vector<int> bad_labels = batch.labels;
  bad_labels[2] = 10;
  expect_message(error_of<std::invalid_argument>([&] { construct(spec, 4, bad_labels.data()); }),
                 "invalid CNN label 10 of image 2");
  bad_labels[2] = -1;
  expect_message(error_of<std::invalid_argument>([&] { construct(spec, 4, bad_labels.data()); }),
                 "invalid CNN label -1 of image 2");

  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data());
  // A graph cannot capture copies from pageable memory; the trainer says so and stays usable.
  expect_message(error_of<std::invalid_argument>([&] {
                   trainer.prepare(
                       cnn_run_config(TrainingExecution::graph, 0, TrainingInput::pageable), 10);
                 }),
                 "cannot capture copies from pageable host memory");
  EXPECT_TRUE(std::isfinite(trainer.step_and_read_loss()));
  std::vector<float> losses;
  trainer.run(2, &losses);  // still the eager default: the failed prepare changed nothing
  expect_message(error_of<std::invalid_argument>([&] {
                   trainer.prepare(
                       cnn_run_config(TrainingExecution::eager, 0, TrainingInput::resident), 0);
                 }),
                 "at least one step");
  expect_message(error_of<std::invalid_argument>([&] {
                   trainer.prepare(
                       cnn_run_config(TrainingExecution::eager, -1, TrainingInput::resident), 5);
                 }),
                 "readback interval must be >= 0");
  trainer.prepare(cnn_run_config(TrainingExecution::graph, 0, TrainingInput::resident, 4), 8);
  expect_message(error_of<std::logic_error>([&] { trainer.run(9, nullptr); }),
                 "graphs were prepared for 8 steps, not 9");
  expect_message(error_of<std::invalid_argument>([&] { trainer.capture_compute_graph(0); }),
                 "at least one step");
}

// ---- Device memory: the model against the meter, and the rows of `bench` that report it. ----

constexpr std::size_t kMiB = std::size_t{1} << 20;
// How far a measured peak may fall below the model: buffers smaller than a 2 MiB page may be
// placed in pages the driver kept from allocations freed earlier in the process, which the meter
// does not see as taken; a trainer's sub-page buffers come to a few MiB.
constexpr std::size_t kPeakBelowModelBytes = 16 * kMiB;
// How far it may rise above the model once the kernels and cuBLAS are loaded: each of the
// trainer's 27 buffers rounded up to 2 MiB pages (54 MiB at most), its stream and cuBLAS handle,
// and for a graph row its instantiated graphs (two of at most 50 steps of 37 nodes).
constexpr std::size_t kPeakAboveModelBytes = 128 * kMiB;

TEST(CnnGpu, MeasuredDevicePeakIsTheModelWithinPageRoundingAndTheHandle) {
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  {
    // A first trainer loads every kernel module and initialises cuBLAS, which happens once per
    // process: the meter below then sees what a trainer itself takes.
    const Batch small = random_cnn_batch(2, 40);
    CnnGpuTrainer warm_up(spec, small.size, small.images.data(), small.labels.data(),
                          initial.data());
  }
  constexpr int kImages = 1024;
  const Batch batch = random_cnn_batch(kImages, 41);
  const std::size_t model = gpubench::cuda::cnn_gpu_device_bytes(spec, kImages);
  gpubench::DeviceMemoryMeter meter;
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(),
                        initial.data());  // allocates, then trains one step
  meter.sample();
  EXPECT_TRUE(std::isfinite(trainer.step_and_read_loss()));
  meter.sample();
  EXPECT_EQ(trainer.device_bytes(), model);
  EXPECT_GE(meter.peak_bytes() + kPeakBelowModelBytes, model) << "peak " << meter.peak_bytes();
  EXPECT_LE(meter.peak_bytes(), model + kPeakAboveModelBytes) << "model " << model;
}

TEST(CnnGpu, BenchRowsReportInputBytesGraphStepsAndDeviceMemory) {
  // The tutorial's batch without readbacks: eager and graph with the batch resident, and the
  // variants that copy it from host memory before every step.
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^cnn/gpu/(eager|graph)/data:[a-z0-9]+/batch:64/readback:0/"
      "(input:(pageable|pinned)/)?manual_time$' --benchmark_min_time=0.01");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const std::size_t model = gpubench::cuda::cnn_gpu_device_bytes(CnnSpec{}, 64);
  const double input_bytes_per_step = 64.0 * (kImageFloats * sizeof(float) + sizeof(int));
  int rows = 0;
  for (const auto& row : run.json["benchmarks"]) {
    const std::string name = row["name"];
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    const bool copies_input = name.find("/input:") != std::string::npos;
    const bool graph = name.rfind("cnn/gpu/graph/", 0) == 0;
    const double steps = row["steps"];
    EXPECT_DOUBLE_EQ(row["bytes_h2d"].get<double>(),
                     copies_input ? steps * input_bytes_per_step : 0)
        << name;
    if (graph) {
      EXPECT_GE(row["graph_steps"].get<double>(), 1) << name;
    } else {
      EXPECT_FALSE(row.contains("graph_steps")) << name;
    }
    EXPECT_DOUBLE_EQ(row["device_bytes_model"].get<double>(), static_cast<double>(model)) << name;
    EXPECT_DOUBLE_EQ(row["device_bytes"].get<double>(), static_cast<double>(model)) << name;
    // The work: flop and bytes by the layer model, and each profiled operation's beside its time.
    EXPECT_DOUBLE_EQ(row["bytes_moved"].get<double>(),
                     steps * gpubench::cnn_step_bytes(CnnSpec{}, 64))
        << name;
    EXPECT_DOUBLE_EQ(row["arithmetic_intensity"].get<double>(),
                     row["flop"].get<double>() / row["bytes_moved"].get<double>())
        << name;
    for (const auto& [key, value] : row.items()) {
      if (key.rfind("t_op:", 0) != 0 || key == "t_op:launch_gaps") continue;  // gaps do no work
      const std::string operation = key.substr(5);
      EXPECT_TRUE(row.contains("flop_op:" + operation)) << name << " " << operation;
      EXPECT_GT(row.value("bytes_op:" + operation, 0.0), 0) << name << " " << operation;
    }
    const double peak = row["device_bytes_peak"];
    EXPECT_GE(peak + kPeakBelowModelBytes, static_cast<double>(model)) << name;
    // The first row of the process also pays for loading the kernels and cuBLAS.
    if (rows > 0) {
      EXPECT_LE(peak, static_cast<double>(model + kPeakAboveModelBytes)) << name;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 5);
}

TEST(CnnGpu, LargestBatchRowRunsNearTheLargestBatchTheModelAllows) {
  const auto run =
      gpubench::testing::run_bench("--benchmark_filter='^memory/gpu/largest_batch/net:cnn/'");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  ASSERT_EQ(run.json["benchmarks"].size(), 1U) << run.stdout_text;
  const auto& row = run.json["benchmarks"][0];
  ASSERT_FALSE(row.contains("error_occurred")) << row.value("error_message", "");
  const std::string label = row["label"];
  EXPECT_EQ(label.rfind("workload=memory backend=gpu variant=largest_batch net=cnn data=", 0), 0U)
      << label;
  EXPECT_NE(label.find(" precision=fp32"), std::string::npos) << label;

  const CnnSpec spec;
  const auto bytes_at = [&](double batch) {
    return gpubench::cuda::cnn_gpu_device_bytes(spec, static_cast<int>(batch));
  };
  const auto free_bytes = static_cast<std::size_t>(row["device_bytes_free"].get<double>());
  const std::size_t usable = gpubench::usable_device_bytes(free_bytes);
  const double largest = row["batch_largest"];
  const double batch = row["batch"];
  // batch_largest is the largest batch whose model fits in the free memory less the margin.
  EXPECT_LE(bytes_at(largest), usable);
  EXPECT_GT(bytes_at(largest + 1), usable);
  // The run: 90% of it, or the trainer's largest batch (the host bound is far above both).
  const int near_largest = std::max(1, static_cast<int>(0.9 * largest));
  EXPECT_EQ(batch, std::min(near_largest, gpubench::cuda::cnn_gpu_max_batch(spec)));
  const std::size_t model = bytes_at(batch);
  EXPECT_DOUBLE_EQ(row["device_bytes_model"].get<double>(), static_cast<double>(model));
  // The margin left out of the search is for what the model leaves out (this row is the first of
  // its process, so that includes loading the kernels and cuBLAS): the peak stays within it.
  const double peak = row["device_bytes_peak"];
  EXPECT_GE(peak + kPeakBelowModelBytes, static_cast<double>(model));
  EXPECT_LE(peak, static_cast<double>(model + (free_bytes - usable)));
  EXPECT_DOUBLE_EQ(row["steps"].get<double>(), 10);
  EXPECT_GT(row["t_step"].get<double>(), 0);
  EXPECT_TRUE(std::isfinite(row["final_loss"].get<double>()));
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
