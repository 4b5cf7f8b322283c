// The CPU CNN: gradients against central differences of a double-precision reference written
// straight from the definitions (PyTorch's Conv2d, ReLU, MaxPool2d, flatten, Linear,
// cross-entropy), im2col against its definition and col2im as its adjoint, max-pool routing, the
// loss falling on the synthetic set, the observer's operations, and clear errors for bad
// configurations.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/image_dataset.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/seeded_random.hpp"

namespace {

using gpubench::CnnSpec;
using gpubench::SeededRandom;
using gpubench::cpu::NhwcLayout;

// The tutorial network's shape with few channels: every code path of the full one (three conv
// layers, chunks of several images, two linear layers), at a cost the double reference can pay
// for many parameters.
CnnSpec narrow_spec(bool relu) {
  CnnSpec spec;
  spec.conv = {{{3, 4, 32}, {4, 4, 16}, {4, 8, 8}}};
  spec.linear = {{{8 * 4 * 4, 8}, {8, 10}}};
  spec.relu = relu;
  spec.seed = 3;
  return spec;
}

struct Batch {
  std::vector<float> images;
  std::vector<int> labels;
};

Batch random_batch(int batch, std::uint64_t seed) {
  Batch data;
  SeededRandom random(seed);
  data.images.resize(static_cast<std::size_t>(batch) * CnnSpec::image_floats());
  for (float& value : data.images) value = static_cast<float>(random.uniform());
  for (int n = 0; n < batch; ++n) data.labels.push_back(static_cast<int>(random.below(10)));
  return data;
}

// Logits of one image in double, from the definitions, on NCHW tensors.
std::vector<double> reference_logits(const CnnSpec& spec, const std::vector<double>& parameters,
                                     const float* image) {
  std::vector<double> activation(image, image + CnnSpec::image_floats());
  int channels = CnnSpec::kChannels;
  int size = CnnSpec::kImageSize;
  for (int l = 0; l < CnnSpec::kConvLayers; ++l) {
    const int out_channels = spec.conv[l].out_channels;
    const double* weights = parameters.data() + spec.weight_offset(l);
    const double* bias = parameters.data() + spec.bias_offset(l);
    std::vector<double> convolved(static_cast<std::size_t>(out_channels) * size * size);
    for (int o = 0; o < out_channels; ++o) {
      for (int y = 0; y < size; ++y) {
        for (int x = 0; x < size; ++x) {
          double sum = bias[o];
          for (int c = 0; c < channels; ++c) {
            for (int ky = 0; ky < 5; ++ky) {
              for (int kx = 0; kx < 5; ++kx) {
                const int source_y = y + ky - 2;
                const int source_x = x + kx - 2;
                if (source_y < 0 || source_y >= size || source_x < 0 || source_x >= size) continue;
                sum +=
                    weights[((o * channels + c) * 5 + ky) * 5 + kx] *
                    activation[(static_cast<std::size_t>(c) * size + source_y) * size + source_x];
              }
            }
          }
          if (spec.relu) sum = std::max(sum, 0.0);
          convolved[(static_cast<std::size_t>(o) * size + y) * size + x] = sum;
        }
      }
    }
    const int half = size / 2;
    activation.assign(static_cast<std::size_t>(out_channels) * half * half, 0.0);
    for (int o = 0; o < out_channels; ++o) {
      for (int i = 0; i < half; ++i) {
        for (int j = 0; j < half; ++j) {
          // The window's four values: rows 2i and 2i + 1, columns 2j and 2j + 1.
          const std::size_t top =
              (static_cast<std::size_t>(o) * size + static_cast<std::size_t>(2 * i)) * size +
              static_cast<std::size_t>(2 * j);
          const std::size_t bottom = top + size;
          activation[(static_cast<std::size_t>(o) * half + i) * half + j] = std::max(
              {convolved[top], convolved[top + 1], convolved[bottom], convolved[bottom + 1]});
        }
      }
    }
    channels = out_channels;
    size = half;
  }
  for (int f = 0; f < CnnSpec::kLinearLayers; ++f) {
    const int layer = CnnSpec::kConvLayers + f;
    const gpubench::LinearShape& shape = spec.linear[f];
    std::vector<double> next(shape.out_features);
    for (int j = 0; j < shape.out_features; ++j) {
      double sum = parameters[spec.bias_offset(layer) + j];
      for (int i = 0; i < shape.in_features; ++i) {
        sum += parameters[spec.weight_offset(layer) +
                          static_cast<std::size_t>(j) * shape.in_features + i] *
               activation[i];
      }
      next[j] = sum;
    }
    activation = next;
  }
  return activation;
}

double reference_loss(const CnnSpec& spec, const std::vector<double>& parameters,
                      const Batch& data) {
  const int batch = static_cast<int>(data.labels.size());
  double total = 0;
  for (int n = 0; n < batch; ++n) {
    const std::vector<double> z = reference_logits(
        spec, parameters,
        data.images.data() + static_cast<std::size_t>(n) * CnnSpec::image_floats());
    const double largest = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double value : z) sum += std::exp(value - largest);
    total += std::log(sum) + largest - z[data.labels[n]];
  }
  return total / batch;
}

// Parameters to check: the first, the last and `random_count` random ones of every layer's
// weights and biases (conv1 .. fc2).
std::vector<std::size_t> sampled_parameters(const CnnSpec& spec, int random_count) {
  SeededRandom random(99);
  std::set<std::size_t> chosen;
  for (int layer = 0; layer < CnnSpec::kConvLayers + CnnSpec::kLinearLayers; ++layer) {
    const std::size_t ranges[2][2] = {{spec.weight_offset(layer), spec.bias_offset(layer)},
                                      {spec.bias_offset(layer), spec.weight_offset(layer + 1)}};
    for (const auto& range : ranges) {
      chosen.insert(range[0]);
      chosen.insert(range[1] - 1);
      for (int i = 0; i < random_count; ++i) {
        chosen.insert(range[0] + random.below(range[1] - range[0]));
      }
    }
  }
  return {chosen.begin(), chosen.end()};
}

// The trainer's loss and gradient against the reference's loss and central differences.
void check_gradient(const CnnSpec& spec, int batch, int random_per_tensor) {
  const Batch data = random_batch(batch, 7);
  const std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::CnnCpuTrainer trainer(spec, batch);
  std::vector<float> gradient(parameters.size(), std::nanf(""));
  const float loss = trainer.loss_and_gradient(parameters.data(), data.images.data(),
                                               data.labels.data(), gradient.data());
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gradient[i])) << "gradient entry " << i << " was not written";
  }
  const std::vector<double> point(parameters.begin(), parameters.end());
  EXPECT_NEAR(loss, reference_loss(spec, point, data), 1e-5);
  EXPECT_NEAR(trainer.loss(parameters.data(), data.images.data(), data.labels.data()), loss, 1e-6);

  // Central differences in double with step 1e-6: truncation error ~1e-12 and rounding ~1e-10,
  // far below the fp32 error of the analytic gradient. A step this small also keeps the
  // perturbation from moving a max-pool window's argmax (the loss is piecewise smooth). The
  // tolerance, 1e-6 absolute plus 1e-3 relative, is 20x the largest error seen and 100x smaller
  // than the typical gradient entry (1e-4 .. 1e-1).
  const double step = 1e-6;
  double largest_entry = 0;
  for (const std::size_t index : sampled_parameters(spec, random_per_tensor)) {
    std::vector<double> plus = point;
    std::vector<double> minus = point;
    plus[index] += step;
    minus[index] -= step;
    const double numeric =
        (reference_loss(spec, plus, data) - reference_loss(spec, minus, data)) / (2 * step);
    EXPECT_NEAR(gradient[index], numeric, 1e-6 + 1e-3 * std::fabs(numeric))
        << "parameter " << index << (spec.relu ? " (with ReLU)" : "");
    largest_entry = std::max(largest_entry, std::fabs(numeric));
  }
  EXPECT_GT(largest_entry, 1e-2);  // the check compared real gradients, not zeros
}

TEST(CnnCpu, GradientsMatchFiniteDifferences) {
  // Batch 5: conv1's chunks hold 3 images here, so a partial chunk is exercised too.
  for (const bool relu : {false, true}) check_gradient(narrow_spec(relu), 5, 6);
}

TEST(CnnCpu, FullNetworkGradientsMatchFiniteDifferences) {
  // The tutorial network itself: conv2 runs in chunks of one image, so three chunks here.
  check_gradient(CnnSpec{}, 3, 2);
}

NhwcLayout bordered(int channels, int size) { return {channels, size, 2}; }

std::vector<float> random_values(std::size_t count, std::uint64_t seed) {
  SeededRandom random(seed);
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(random.uniform(-1.0, 1.0));
  return values;
}

TEST(CnnCpu, Im2colFollowsItsDefinitionAndCol2imIsItsAdjoint) {
  // 70 channels: col2im sums a pixel in blocks of 64 channels.
  for (const int channels : {1, 3, 32, 70}) {
    for (const int size : {1, 6, 16}) {
      const int images = 2;
      const NhwcLayout layout = bordered(channels, size);
      // Random interior, zero border: what the trainer keeps.
      std::vector<float> input(images * layout.image_floats(), 0.0F);
      const std::vector<float> interior = random_values(input.size(), 5);
      for (int n = 0; n < images; ++n) {
        for (int y = 0; y < size; ++y) {
          for (int x = 0; x < size; ++x) {
            for (int c = 0; c < channels; ++c) {
              input[layout.offset(n, y, x) + c] = interior[layout.offset(n, y, x) + c];
            }
          }
        }
      }
      const int patch = 25 * channels;
      const std::size_t rows = static_cast<std::size_t>(images) * size * size;
      std::vector<float> columns(rows * patch, std::nanf(""));
      gpubench::cpu::im2col_5x5_nhwc(input.data(), layout, images, columns.data());
      for (int n = 0; n < images; ++n) {
        for (int y = 0; y < size; ++y) {
          for (int x = 0; x < size; ++x) {
            const float* row =
                columns.data() + ((static_cast<std::size_t>(n) * size + y) * size + x) * patch;
            for (int ky = 0; ky < 5; ++ky) {
              for (int kx = 0; kx < 5; ++kx) {
                for (int c = 0; c < channels; ++c) {
                  const int sy = y + ky - 2;
                  const int sx = x + kx - 2;
                  const bool inside = sy >= 0 && sy < size && sx >= 0 && sx < size;
                  const float expected = inside ? input[layout.offset(n, sy, sx) + c] : 0.0F;
                  ASSERT_EQ(row[(ky * 5 + kx) * channels + c], expected)
                      << "channels " << channels << " size " << size << " image " << n << " y " << y
                      << " x " << x << " ky " << ky << " kx " << kx << " c " << c;
                }
              }
            }
          }
        }
      }

      // <im2col(x), y> = <x, col2im(y)> over the interior, for random x and y.
      const std::vector<float> other = random_values(columns.size(), 6);
      std::vector<float> back(input.size(), std::nanf(""));
      gpubench::cpu::col2im_5x5_nhwc(other.data(), images, back.data(), layout);
      double forward_product = 0;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        forward_product += static_cast<double>(columns[i]) * other[i];
      }
      double adjoint_product = 0;
      double scale = 0;
      for (int n = 0; n < images; ++n) {
        for (int y = 0; y < size; ++y) {
          for (int x = 0; x < size; ++x) {
            for (int c = 0; c < channels; ++c) {
              const std::size_t at = layout.offset(n, y, x) + c;
              ASSERT_TRUE(std::isfinite(back[at]));
              adjoint_product += static_cast<double>(input[at]) * back[at];
              scale += std::fabs(static_cast<double>(input[at]) * back[at]);
            }
          }
        }
      }
      EXPECT_NEAR(adjoint_product, forward_product, 1e-5 * scale + 1e-6)
          << "channels " << channels << " size " << size;
    }
  }
  EXPECT_THROW(gpubench::cpu::im2col_5x5_nhwc(nullptr, {3, 8, 0}, 1, nullptr),
               std::invalid_argument);
}

TEST(CnnCpu, MaxPoolTakesTheFirstLargestAndRoutesBackToIt) {
  // One image of 4 x 4 pixels and 2 channels: four windows per channel, maxima chosen at known
  // places, with ties that PyTorch resolves to the first in row-major order.
  const int channels = 2;
  const int size = 4;
  std::vector<float> input(static_cast<std::size_t>(size) * size * channels);
  auto at = [&](int y, int x, int c) -> float& { return input[(y * size + x) * channels + c]; };
  const float window_values[2][4][4] = {
      // channel 0: windows (0,0) (0,1) (1,0) (1,1), each in row-major order a b c d
      {{1, 5, 2, 3}, {7, 1, 1, 1}, {-4, -3, -1, -2}, {0, 9, 9, 9}},
      // channel 1: ties: equal pair on top, all equal, bottom pair wins, top-right wins over tie
      {{6, 6, 1, 1}, {2, 2, 2, 2}, {0, 0, 3, 3}, {1, 8, 2, 8}}};
  for (int c = 0; c < channels; ++c) {
    for (int w = 0; w < 4; ++w) {
      const int wy = w / 2;
      const int wx = w % 2;
      for (int k = 0; k < 4; ++k) at(2 * wy + k / 2, 2 * wx + k % 2, c) = window_values[c][w][k];
    }
  }
  const int expected_argmax[2][4] = {{1, 0, 2, 1}, {0, 0, 2, 1}};
  const NhwcLayout output_layout{channels, size / 2, 2};  // with a border, as pool1's output
  std::vector<float> output(output_layout.image_floats(), -100.0F);
  std::vector<std::uint8_t> argmax(std::size_t{4} * channels, 255);
  gpubench::cpu::max_pool_2x2_nhwc(input.data(), 1, output.data(), output_layout, argmax.data());
  for (int c = 0; c < channels; ++c) {
    for (int w = 0; w < 4; ++w) {
      const float* values = window_values[c][w];
      EXPECT_EQ(output[output_layout.offset(0, w / 2, w % 2) + c],
                *std::max_element(values, values + 4));
      EXPECT_EQ(argmax[w * channels + c], expected_argmax[c][w])
          << "channel " << c << " window " << w;
    }
  }
  EXPECT_EQ(output[0], -100.0F);  // the border is left alone

  // Backward: each window's gradient lands on its argmax only.
  std::vector<float> output_gradient(output_layout.image_floats(), 0.0F);
  for (int c = 0; c < channels; ++c) {
    for (int w = 0; w < 4; ++w) {
      output_gradient[output_layout.offset(0, w / 2, w % 2) + c] = 10.0F * (c + 1) + w;
    }
  }
  std::vector<float> input_gradient(input.size(), std::nanf(""));
  gpubench::cpu::max_pool_2x2_nhwc_backward(output_gradient.data(), output_layout, argmax.data(), 1,
                                            input_gradient.data());
  for (int c = 0; c < channels; ++c) {
    for (int w = 0; w < 4; ++w) {
      for (int k = 0; k < 4; ++k) {
        const float expected = k == expected_argmax[c][w] ? 10.0F * (c + 1) + w : 0.0F;
        EXPECT_EQ(
            input_gradient[((2 * (w / 2) + k / 2) * size + 2 * (w % 2) + k % 2) * channels + c],
            expected)
            << "channel " << c << " window " << w << " position " << k;
      }
    }
  }
}

TEST(CnnCpu, LossFallsOnTheSyntheticSetAndStaysFinite) {
  const int batch = gpubench::kCnnTutorialBatch;
  const int batches = 8;
  const gpubench::ImageData data = gpubench::load_image_data("synthetic", batch * batches);
  const CnnSpec spec;
  std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  gpubench::cpu::set_blas_threads(1);
  const gpubench::cpu::CnnEvaluation before = gpubench::cpu::cnn_evaluate(
      spec, parameters.data(), data.test.pixels.data(), data.test.labels.data(), data.test.rows);
  gpubench::cpu::CnnCpuTrainer trainer(spec, batch);
  const int steps = 48;
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    const int first = (step % batches) * batch;
    losses.push_back(
        trainer.step(parameters.data(), data.train.image(first), data.train.labels.data() + first));
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
  }
  for (float value : parameters) ASSERT_TRUE(std::isfinite(value));
  const gpubench::cpu::CnnEvaluation after = gpubench::cpu::cnn_evaluate(
      spec, parameters.data(), data.test.pixels.data(), data.test.labels.data(), data.test.rows);
  // The first and the last pass over the 8 batches: the same images, later in training. The
  // tutorial network with plain SGD at lr 0.01 learns slowly at first (here 2.306 -> 2.291 on the
  // training batches and 2.305 -> 2.293 on the test images, with PyTorch's trajectory from the
  // same weights within 2e-6 of these), so the margins are a third of that: enough to fail for a
  // wrong sign, a missing update or a gradient of the wrong size.
  double first_pass = 0;
  double last_pass = 0;
  for (int i = 0; i < batches; ++i) {
    first_pass += losses[i];
    last_pass += losses[steps - batches + i];
  }
  EXPECT_LT(last_pass / batches, first_pass / batches - 0.005)
      << "mean loss " << first_pass / batches << " -> " << last_pass / batches;
  EXPECT_LT(after.loss, before.loss - 0.004);
  EXPECT_GT(after.loss, before.loss - 0.1);  // and not implausibly fast either
  std::printf("mean training loss %.4f -> %.4f; test loss %.4f -> %.4f, accuracy %.3f -> %.3f\n",
              first_pass / batches, last_pass / batches, before.loss, after.loss, before.accuracy,
              after.accuracy);
}

TEST(CnnCpu, EvaluationInPiecesMatchesTheTrainersLoss) {
  const CnnSpec spec = narrow_spec(true);
  const int rows = 300;  // two pieces of 256 and 44
  const Batch data = random_batch(rows, 8);
  const std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  gpubench::cpu::CnnCpuTrainer whole(spec, rows);
  const float loss = whole.loss(parameters.data(), data.images.data(), data.labels.data());
  const gpubench::cpu::CnnEvaluation evaluation = gpubench::cpu::cnn_evaluate(
      spec, parameters.data(), data.images.data(), data.labels.data(), rows);
  EXPECT_NEAR(evaluation.loss, loss, 1e-5);
  const float* logits = whole.logits(parameters.data(), data.images.data(), rows);
  int correct = 0;
  for (int n = 0; n < rows; ++n) {
    const float* z = logits + static_cast<std::ptrdiff_t>(n) * 10;
    if (std::max_element(z, z + 10) - z == data.labels[n]) ++correct;
  }
  EXPECT_DOUBLE_EQ(evaluation.accuracy, static_cast<double>(correct) / rows);
  EXPECT_DOUBLE_EQ(gpubench::cpu::cnn_accuracy(spec, parameters.data(), data.images.data(),
                                               data.labels.data(), rows),
                   evaluation.accuracy);
}

TEST(CnnCpu, SameResultOnOneAndAllCores) {
  const CnnSpec spec;
  const int batch = 16;
  const Batch data = random_batch(batch, 4);
  std::vector<float> one_thread = gpubench::initial_cnn_parameters(spec);
  std::vector<float> all_cores = one_thread;
  gpubench::cpu::CnnCpuTrainer trainer(spec, batch);
  gpubench::cpu::set_blas_threads(1);
  const float loss_one = trainer.step(one_thread.data(), data.images.data(), data.labels.data());
  gpubench::cpu::set_blas_threads(gpubench::cpu::blas_threads_for_all_cores());
  const float loss_all = trainer.step(all_cores.data(), data.images.data(), data.labels.data());
  gpubench::cpu::set_blas_threads(1);
  EXPECT_NEAR(loss_all, loss_one, 1e-6 * loss_one);
  for (std::size_t i = 0; i < one_thread.size(); ++i) {
    ASSERT_NEAR(all_cores[i], one_thread[i], 1e-6) << "parameter " << i;
  }
}

// The sharded step (kernels/common/worker_threads.hpp) against one worker: only the order of the
// sums over images differs (each shard sums its images, then the shard sums are added), so the
// trajectories agree to fp32 rounding. Tolerance: 1e-5 relative on the loss (about 80 fp32
// epsilons) and 1e-6 absolute on parameters (weights up to ~0.1); measured at most 1.2e-7 and
// 4.5e-8 over these 10 steps. A shard that lost an image, divided by its own size instead of the
// batch's, or was summed twice is off by percents.
TEST(CnnCpu, ShardedStepsFollowTheOneWorkerTrajectoryAndRepeatExactly) {
  CnnSpec spec;
  spec.relu = true;
  spec.learning_rate = 0.05F;  // larger steps than the tutorial's, so the trajectory moves
  constexpr int kSteps = 10;
  const auto train = [&](const Batch& data, int batch, int workers) {
    gpubench::cpu::set_blas_threads(1);
    gpubench::cpu::CnnCpuTrainer trainer(spec, batch, workers);
    EXPECT_EQ(trainer.workers(), std::min(workers, batch));
    std::pair<std::vector<float>, std::vector<float>> result;  // losses, final parameters
    result.second = gpubench::initial_cnn_parameters(spec);
    for (int step = 0; step < kSteps; ++step) {
      result.first.push_back(
          trainer.step(result.second.data(), data.images.data(), data.labels.data()));
    }
    return result;
  };
  // 7 images: divides evenly among none of 2, 3, 4 workers, and conv1's chunks of 3 split unevenly
  // inside the shards; 3 images: fewer than 4 workers.
  for (const int batch : {7, 3}) {
    const Batch data = random_batch(batch, 12);
    const auto one = train(data, batch, 1);
    EXPECT_LT(one.first.back(), 0.95F * one.first.front());  // it trained: the check compares
    for (const int workers : {2, 3, 4}) {
      const auto sharded = train(data, batch, workers);
      double loss_deviation = 0;
      for (int step = 0; step < kSteps; ++step) {
        ASSERT_NEAR(sharded.first[step], one.first[step], 1e-5 * one.first[step])
            << "batch " << batch << ", " << workers << " workers, step " << step;
        loss_deviation =
            std::max(loss_deviation, std::fabs(sharded.first[step] / one.first[step] - 1.0));
      }
      double parameter_deviation = 0;
      for (std::size_t i = 0; i < one.second.size(); ++i) {
        ASSERT_NEAR(sharded.second[i], one.second[i], 1e-6)
            << "batch " << batch << ", " << workers << " workers, parameter " << i;
        parameter_deviation =
            std::max<double>(parameter_deviation, std::fabs(sharded.second[i] - one.second[i]));
      }
      std::printf("batch %d, %d workers: loss within %.2g relative, parameters within %.2g\n",
                  batch, workers, loss_deviation, parameter_deviation);
      const auto again = train(data, batch, workers);
      EXPECT_EQ(again.first, sharded.first);
      EXPECT_EQ(again.second, sharded.second);
    }
  }
}

TEST(CnnCpu, ShardedGradientLossAndErrorsEqualTheWholeBatchs) {
  const CnnSpec spec = narrow_spec(true);
  const int batch = 9;
  Batch data = random_batch(batch, 6);
  const std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::CnnCpuTrainer one(spec, batch, 1);
  gpubench::cpu::CnnCpuTrainer four(spec, batch, 4);
  std::vector<float> expected(parameters.size());
  std::vector<float> sharded(parameters.size());
  const float loss_one = one.loss_and_gradient(parameters.data(), data.images.data(),
                                               data.labels.data(), expected.data());
  const float loss_four = four.loss_and_gradient(parameters.data(), data.images.data(),
                                                 data.labels.data(), sharded.data());
  EXPECT_NEAR(loss_four, loss_one, 1e-5 * loss_one);
  EXPECT_NEAR(four.loss(parameters.data(), data.images.data(), data.labels.data()), loss_one,
              1e-5 * loss_one);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(sharded[i], expected[i], 1e-7 + 1e-5 * std::fabs(expected[i])) << "parameter " << i;
  }
  // A bad label in the last shard is reported from its worker thread.
  data.labels[batch - 1] = 10;
  EXPECT_THROW(four.loss_and_gradient(parameters.data(), data.images.data(), data.labels.data(),
                                      sharded.data()),
               std::invalid_argument);
}

// The thread rule (cnn_cpu_thread_plan): a shard per image up to the core count, never OpenBLAS's
// own threads.
TEST(CnnCpu, ThreadRuleShardsUpToOneImagePerCore) {
  const CnnSpec spec;
  const auto plan = [&](int batch, int threads) {
    const gpubench::cpu::CpuThreadPlan result =
        gpubench::cpu::cnn_cpu_thread_plan(spec, batch, threads);
    return std::vector<int>{result.workers, result.blas_threads};
  };
  using Plan = std::vector<int>;  // workers, OpenBLAS threads
  EXPECT_EQ(plan(64, 2), (Plan{2, 1}));
  EXPECT_EQ(plan(64, 16), (Plan{16, 1}));
  EXPECT_EQ(plan(64, 128), (Plan{64, 1}));
  EXPECT_EQ(plan(3, 4), (Plan{3, 1}));
  EXPECT_EQ(plan(1, 16), (Plan{1, 1}));
  EXPECT_EQ(plan(256, 1), (Plan{1, 1}));
}

// Records begin/end pairs.
class RecordingObserver : public gpubench::StepObserver {
 public:
  void begin(const char* operation) override {
    EXPECT_TRUE(open_.empty()) << operation << " began inside " << open_;
    open_ = operation;
  }
  void end(const char* operation) noexcept override {
    EXPECT_EQ(open_, operation);
    open_.clear();
    if (names.empty() || names.back() != operation) names.emplace_back(operation);
  }
  std::vector<std::string> names;  // in order, consecutive repeats (chunks) merged

 private:
  std::string open_;
};

TEST(CnnCpu, ObserverSeesEveryOperationInOrder) {
  const CnnSpec spec;
  const int batch = 4;  // conv2 in chunks of one image: its operations repeat per chunk
  const Batch data = random_batch(batch, 2);
  std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  gpubench::cpu::CnnCpuTrainer trainer(spec, batch);
  RecordingObserver observer;
  trainer.set_observer(&observer);
  trainer.step(parameters.data(), data.images.data(), data.labels.data());
  // The weights' permutations first, counted with their layer's GEMM, then the forward pass.
  std::vector<std::string> expected = {"conv1.gemm", "conv2.gemm", "conv3.gemm"};
  for (int l = 1; l <= 3; ++l) {
    const std::string conv = "conv" + std::to_string(l);
    const std::string pool = "pool" + std::to_string(l);
    const int chunks =
        (batch + trainer.images_per_chunk(l - 1) - 1) / trainer.images_per_chunk(l - 1);
    for (int chunk = 0; chunk < chunks; ++chunk) {
      for (const std::string& name : {conv + ".im2col", conv + ".gemm", pool + ".forward"}) {
        expected.push_back(name);
      }
    }
    expected.push_back(conv + ".bias");
  }
  for (const char* name : {"fc1.forward", "fc2.forward", "loss", "fc2.backward", "fc1.backward"}) {
    expected.emplace_back(name);
  }
  for (int l = 3; l >= 1; --l) {
    const std::string conv = "conv" + std::to_string(l);
    expected.push_back(conv + ".bias_gradient");
    const int chunks =
        (batch + trainer.images_per_chunk(l - 1) - 1) / trainer.images_per_chunk(l - 1);
    for (int chunk = 0; chunk < chunks; ++chunk) {
      expected.push_back("pool" + std::to_string(l) + ".backward");
      expected.push_back(conv + ".im2col");
      expected.push_back(conv + ".weight_gradient");
      if (l > 1) expected.push_back(conv + ".input_gradient");
    }
  }
  expected.emplace_back("update");
  EXPECT_EQ(trainer.images_per_chunk(1), 1);
  EXPECT_EQ(observer.names, expected);

  // No observer, no calls.
  trainer.set_observer(nullptr);
  observer.names.clear();
  trainer.step(parameters.data(), data.images.data(), data.labels.data());
  EXPECT_TRUE(observer.names.empty());
}

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

TEST(CnnCpu, BadConfigurationsAreClearErrors) {
  EXPECT_EQ(message_of([] { gpubench::cpu::CnnCpuTrainer(CnnSpec{}, 0); }),
            "invalid CNN batch 0: must be >= 1");
  EXPECT_EQ(message_of([] { gpubench::validate_cnn_batch(65, 64); }),
            "CNN batch 65 is larger than the 64 training images available");
  EXPECT_EQ(message_of([] { gpubench::validate_cnn_batch(64, 64); }), "no error");
  CnnSpec broken;
  broken.conv[1].in_channels = 16;
  EXPECT_NE(message_of([&] {
              gpubench::cpu::CnnCpuTrainer(broken, 8);
            }).find("conv2 takes 16 x 16^2 but receives 32 x 16^2"),
            std::string::npos);
  CnnSpec no_rate;
  no_rate.learning_rate = 0.0F;
  EXPECT_NE(message_of([&] { gpubench::cpu::CnnCpuTrainer(no_rate, 8); }).find("learning rate"),
            std::string::npos);

  const CnnSpec spec = narrow_spec(false);
  gpubench::cpu::CnnCpuTrainer trainer(spec, 2);
  const Batch data = random_batch(2, 1);
  std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  EXPECT_EQ(message_of([&] { trainer.logits(parameters.data(), data.images.data(), 3); }),
            "CNN logits of 3 images: must be 1..2 (the trainer's batch)");
  const std::vector<int> bad_labels = {4, 10};
  EXPECT_EQ(
      message_of([&] { trainer.step(parameters.data(), data.images.data(), bad_labels.data()); }),
      "CNN label 10 of image 1 is outside 0..9");
  EXPECT_EQ(message_of([&] {
              gpubench::cpu::cnn_evaluate(spec, parameters.data(), data.images.data(),
                                          data.labels.data(), 0);
            }),
            "CNN evaluation of 0 images: must be >= 1");
}

TEST(CnnCpu, SoftmaxCrossEntropyIsNumericallyStable) {
  const float huge[3] = {1000.0F, 0.0F, -1000.0F};
  float probabilities[3];
  EXPECT_NEAR(gpubench::cpu::cnn_softmax_cross_entropy(huge, 3, 0, probabilities), 0.0F, 1e-6F);
  EXPECT_NEAR(gpubench::cpu::cnn_softmax_cross_entropy(huge, 3, 1, nullptr), 1000.0F, 1e-3F);
  EXPECT_FLOAT_EQ(probabilities[0], 1.0F);
  EXPECT_FLOAT_EQ(probabilities[2], 0.0F);
  const float equal[4] = {88.0F, 88.0F, 88.0F, 88.0F};  // exp(88) alone is 1.6e38, near FLT_MAX
  EXPECT_NEAR(gpubench::cpu::cnn_softmax_cross_entropy(equal, 4, 2, nullptr), std::log(4.0F),
              1e-6F);
}

}  // namespace
