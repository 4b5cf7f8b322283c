// The bf16 mixed-precision CPU MLP (kernels/mlp/mlp_cpu_bf16.hpp): bf16 rounding, the forward pass
// seeing exactly the bf16-rounded operands, gradients and loss trajectories within bf16's rounding
// of the fp32 path, Iris reaching the fp32 path's test accuracy, and loss scaling skipping bad
// steps.
//
// Every test runs with the widened product (the bf16 operands widened to fp32 and multiplied with
// cblas_sgemm: the same products and fp32 sums as sbgemm), which works with any OpenBLAS, and also
// with OpenBLAS's cblas_sbgemm where the loaded OpenBLAS exports it (Debian's 0.3.21 does not).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dataset.hpp"
#include "kernels/common/bfloat16.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_bf16.hpp"

namespace {

using gpubench::MlpSpec;
using gpubench::cpu::Bf16Product;
using gpubench::cpu::MlpBf16Trainer;

// bf16 keeps 8 significant bits: unit roundoff u = 2^-8. One product term a*w of two rounded
// operands is off by at most 2u = 2^-7 relative (the product itself is exact in fp32).
constexpr double kBf16UnitRoundoff = 0x1p-8;

// Tolerance of the bf16 path against the fp32 path for losses (relative, every step) and gradients
// (relative, 2-norm): four times the worst relative error of one product term, 4 x 2u = 2^-5
// (3.1%). Rounding errors of many terms mostly cancel, so the measured differences are far smaller
// (loss: 0.8% at most, at the end of the Iris run where the loss is 0.062, and 0.11% on synthetic
// data; gradient: under 1%), while a real fault (a stale bf16 weight copy, a wrong operand, a
// missing scale) moves the loss by far more than 3% within a few steps.
constexpr double kBf16Tolerance = 4 * 2 * kBf16UnitRoundoff;

std::vector<Bf16Product> available_products() {
  std::vector<Bf16Product> products = {Bf16Product::widened_sgemm};
  if (gpubench::cpu::openblas_has_sbgemm()) products.push_back(Bf16Product::openblas_sbgemm);
  return products;
}

const char* product_name(Bf16Product product) {
  return product == Bf16Product::openblas_sbgemm ? "cblas_sbgemm" : "widened cblas_sgemm";
}

MlpSpec spec_for(const gpubench::Dataset& data, std::vector<int> hidden) {
  MlpSpec spec;
  spec.inputs = data.features;
  spec.hidden = std::move(hidden);
  spec.classes = data.classes;
  return spec;
}

TEST(Bfloat16, RoundsToNearestEvenAndKeepsSpecialValues) {
  using gpubench::from_bfloat16;
  using gpubench::round_to_bfloat16;
  using gpubench::to_bfloat16;
  EXPECT_EQ(to_bfloat16(1.0F), 0x3F80);
  EXPECT_EQ(to_bfloat16(-2.0F), 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even neighbour, 1.
  EXPECT_EQ(round_to_bfloat16(1.0F + 0x1p-8F), 1.0F);
  // 1 + 3 x 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  EXPECT_EQ(round_to_bfloat16(1.0F + 3 * 0x1p-8F), 1.0F + 0x1p-6F);
  EXPECT_EQ(round_to_bfloat16(1.0F + 0x1p-8F + 0x1p-20F), 1.0F + 0x1p-7F);  // above half: up
  EXPECT_EQ(round_to_bfloat16(0.1F), 0.10009765625F);
  const float infinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(round_to_bfloat16(infinity), infinity);
  EXPECT_EQ(round_to_bfloat16(-infinity), -infinity);
  EXPECT_EQ(round_to_bfloat16(std::numeric_limits<float>::max()), infinity);  // beyond bf16's max
  EXPECT_TRUE(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_bfloat16(std::numeric_limits<float>::signaling_NaN())));
  for (std::uint32_t bits = 0; bits < 0x7F80; bits += 0x1F) {  // finite bf16 values survive exactly
    const auto value = static_cast<std::uint16_t>(bits);
    EXPECT_EQ(to_bfloat16(from_bfloat16(value)), value);
  }
}

// Mean loss in double with bf16 rounding exactly where the bf16 path rounds (`round`): inputs,
// weights and hidden activations; biases, sums and the loss exact. Without `round`, the fp32
// network's loss.
double reference_loss(const MlpSpec& spec, const std::vector<float>& parameters,
                      const gpubench::Dataset& data, bool round) {
  const auto round_to_bfloat16 = [round](float value) {
    return round ? gpubench::round_to_bfloat16(value) : value;
  };
  double total = 0;
  for (int row = 0; row < data.rows(); ++row) {
    std::vector<double> current(spec.inputs);
    for (int i = 0; i < spec.inputs; ++i) current[i] = round_to_bfloat16(data.row(row)[i]);
    for (int layer = 0; layer < spec.layer_count(); ++layer) {
      const int fan_in = spec.fan_in(layer);
      const int fan_out = spec.fan_out(layer);
      const bool last = layer + 1 == spec.layer_count();
      std::vector<double> next(fan_out);
      for (int j = 0; j < fan_out; ++j) {
        double z = parameters[spec.bias_offset(layer) + j];
        for (int i = 0; i < fan_in; ++i) {
          z +=
              current[i] * round_to_bfloat16(parameters[spec.weight_offset(layer) +
                                                        static_cast<std::size_t>(i) * fan_out + j]);
        }
        // The next product sees the fp32 ReLU output rounded to bf16.
        next[j] = last ? z : round_to_bfloat16(static_cast<float>(std::max(z, 0.0)));
      }
      current = next;
    }
    const double largest = *std::max_element(current.begin(), current.end());
    double sum = 0;
    for (double z : current) sum += std::exp(z - largest);
    total += std::log(sum) + largest - current[data.labels[row]];
  }
  return total / data.rows();
}

TEST(MlpCpuBf16, ForwardPassSeesExactlyTheBf16RoundedOperands) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(50, 12, 4, 3);
  const MlpSpec spec = spec_for(data, {16, 9});
  // Weights six times their initial size make the logits large, so the loss feels the rounding
  // of every operand (rounding errors of many terms mostly cancel in a small loss).
  std::vector<float> parameters = gpubench::initial_parameters(spec);
  for (float& parameter : parameters) parameter *= 6.0F;
  const double reference = reference_loss(spec, parameters, data, /*round=*/true);
  const double unrounded = reference_loss(spec, parameters, data, /*round=*/false);
  // Only the fp32 accumulation differs from the double reference (~1e-7 relative per sum).
  const double tolerance = 2e-6 * reference;
  // The check can tell: rounding the operands moves this loss by 2.3e-4 relative.
  ASSERT_GT(std::fabs(reference - unrounded), 50 * tolerance);
  std::vector<float> gradient(parameters.size());
  for (Bf16Product product : available_products()) {
    SCOPED_TRACE(product_name(product));
    MlpBf16Trainer trainer(spec, data.rows(), product);
    const float loss = trainer.loss_and_gradient(parameters.data(), data.inputs.data(),
                                                 data.labels.data(), gradient.data());
    EXPECT_NEAR(loss, reference, tolerance);
  }
}

TEST(MlpCpuBf16, GradientFollowsFp32WithinBf16Rounding) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(256, 64, 10, 5);
  for (const std::vector<int>& hidden : {std::vector<int>{64}, std::vector<int>{128, 32}}) {
    const MlpSpec spec = spec_for(data, hidden);
    const std::vector<float> parameters = gpubench::initial_parameters(spec);
    std::vector<float> fp32_gradient(parameters.size());
    gpubench::cpu::MlpBlasTrainer fp32(spec, data.rows());
    const float fp32_loss = fp32.loss_and_gradient(parameters.data(), data.inputs.data(),
                                                   data.labels.data(), fp32_gradient.data());
    for (Bf16Product product : available_products()) {
      SCOPED_TRACE(product_name(product));
      std::vector<float> bf16_gradient(parameters.size());
      MlpBf16Trainer bf16(spec, data.rows(), product);
      const float bf16_loss = bf16.loss_and_gradient(parameters.data(), data.inputs.data(),
                                                     data.labels.data(), bf16_gradient.data());
      EXPECT_NEAR(bf16_loss, fp32_loss, kBf16Tolerance * fp32_loss);
      double difference = 0;
      double norm = 0;
      for (std::size_t i = 0; i < parameters.size(); ++i) {
        difference += std::pow(double{bf16_gradient[i]} - fp32_gradient[i], 2);
        norm += std::pow(double{fp32_gradient[i]}, 2);
      }
      EXPECT_LE(std::sqrt(difference / norm), kBf16Tolerance);
      EXPECT_GT(std::sqrt(difference / norm), 0.0) << "bf16 rounding changed nothing";
    }
  }
}

// Trains `epochs` steps on the fp32 path and the bf16 path from the same initial weights and checks
// every step's loss against kBf16Tolerance. Returns the final parameters of both.
struct Trajectories {
  std::vector<float> fp32;
  std::vector<float> bf16;
};
Trajectories train_both(const MlpSpec& spec, const gpubench::Dataset& data, Bf16Product product) {
  Trajectories result{gpubench::initial_parameters(spec), gpubench::initial_parameters(spec)};
  gpubench::cpu::MlpBlasTrainer fp32(spec, data.rows());
  MlpBf16Trainer bf16(spec, data.rows(), product);
  double largest_relative = 0;
  for (int epoch = 0; epoch < spec.epochs; ++epoch) {
    const float fp32_loss = fp32.step(result.fp32.data(), data.inputs.data(), data.labels.data());
    const float bf16_loss = bf16.step(result.bf16.data(), data.inputs.data(), data.labels.data());
    largest_relative =
        std::max(largest_relative, std::fabs(double{bf16_loss} - fp32_loss) / fp32_loss);
    if (!(std::fabs(bf16_loss - fp32_loss) <= kBf16Tolerance * fp32_loss)) {
      ADD_FAILURE() << "step " << epoch << ": bf16 loss " << bf16_loss << ", fp32 loss "
                    << fp32_loss;
      break;
    }
  }
  std::printf("[ info     ] %s %s, %d steps: largest relative loss difference %.2e\n",
              spec.describe().c_str(), product_name(product), spec.epochs, largest_relative);
  return result;
}

TEST(MlpCpuBf16, IrisFollowsFp32AndReachesTheSameTestAccuracyAfter20000Epochs) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::DatasetSplit iris = gpubench::load_split_dataset("iris");
  MlpSpec spec = spec_for(iris.train, {10});
  spec.epochs = 20000;
  for (Bf16Product product : available_products()) {
    SCOPED_TRACE(product_name(product));
    const Trajectories trained = train_both(spec, iris.train, product);
    const auto accuracy = [&](const std::vector<float>& parameters) {
      return gpubench::cpu::mlp_accuracy(spec, parameters.data(), iris.test.inputs.data(),
                                         iris.test.labels.data(), iris.test.rows());
    };
    // The same accuracy on the 30 held-out rows, not merely within one sample: the final losses
    // differ by under 1%, and no test row sits that close to a decision boundary.
    EXPECT_DOUBLE_EQ(accuracy(trained.bf16), accuracy(trained.fp32));
    EXPECT_GE(accuracy(trained.bf16), 0.9);
  }
}

TEST(MlpCpuBf16, SyntheticDataFollowsFp32) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(
      256, gpubench::kSyntheticFeatures, gpubench::kSyntheticClasses, gpubench::kSyntheticSeed);
  for (const std::vector<int>& hidden : {std::vector<int>{256}, std::vector<int>{64, 64}}) {
    MlpSpec spec = spec_for(data, hidden);
    spec.epochs = 500;
    for (Bf16Product product : available_products()) {
      SCOPED_TRACE(product_name(product));
      train_both(spec, data, product);
    }
  }
}

TEST(MlpCpuBf16, SbgemmEqualsTheWidenedProduct) {
  if (!gpubench::cpu::openblas_has_sbgemm()) {
    GTEST_SKIP() << "the loaded OpenBLAS (" << gpubench::cpu::blas_config()
                 << ") exports no cblas_sbgemm";
  }
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(300, 64, 10, 9);
  MlpSpec spec = spec_for(data, {96, 40});
  std::vector<float> sbgemm_parameters = gpubench::initial_parameters(spec);
  std::vector<float> widened_parameters = sbgemm_parameters;
  MlpBf16Trainer sbgemm(spec, data.rows(), Bf16Product::openblas_sbgemm);
  MlpBf16Trainer widened(spec, data.rows(), Bf16Product::widened_sgemm);
  for (int step = 0; step < 50; ++step) {
    const float a = sbgemm.step(sbgemm_parameters.data(), data.inputs.data(), data.labels.data());
    const float b = widened.step(widened_parameters.data(), data.inputs.data(), data.labels.data());
    // Same bf16 operands, same fp32 accumulator, sums in another order: fp32 rounding only, which
    // can flip a later bf16 rounding, hence 1e-4 rather than 1e-6.
    ASSERT_NEAR(a, b, 1e-4 * b) << "step " << step;
  }
}

// Shards (kernels/mlp/mlp_cpu.hpp) against one worker, with every product available here: the
// same bf16 operands row by row, the shard sums added in another order, so fp32 rounding only,
// which can flip a later bf16 rounding of a weight: 1e-4 relative on the loss, as between the two
// products above (measured: at most 1.2e-7 over these 30 steps). 37 rows divide evenly among none
// of 2, 3 and 4 workers; 3 rows are fewer than 4. The same worker count repeats itself bit for bit.
TEST(MlpCpuBf16, ShardedStepsFollowTheOneWorkerTrajectoryAndRepeatExactly) {
  gpubench::cpu::set_blas_threads(1);
  for (const int rows : {37, 3}) {
    const gpubench::Dataset data = gpubench::make_gaussian_clusters(rows, 32, 5, 4);
    MlpSpec spec = spec_for(data, {48, 24});
    spec.learning_rate = 0.1F;
    for (Bf16Product product : available_products()) {
      SCOPED_TRACE(product_name(product));
      const auto train = [&](int workers) {
        MlpBf16Trainer trainer(spec, rows, product, workers);
        std::vector<float> parameters = gpubench::initial_parameters(spec);
        std::vector<float> losses;
        losses.reserve(30 + parameters.size());
        for (int step = 0; step < 30; ++step) {
          losses.push_back(trainer.step(parameters.data(), data.inputs.data(), data.labels.data()));
        }
        losses.insert(losses.end(), parameters.begin(), parameters.end());
        return losses;  // the losses, then the final parameters
      };
      const std::vector<float> one = train(1);
      EXPECT_LT(one[29], 0.97F * one[0]);  // it trained: the comparison compares
      for (const int workers : {2, 3, 4}) {
        const std::vector<float> sharded = train(workers);
        double deviation = 0;
        for (int step = 0; step < 30; ++step) {
          ASSERT_NEAR(sharded[step], one[step], 1e-4 * one[step])
              << rows << " rows, " << workers << " workers, step " << step;
          deviation = std::max(deviation, std::fabs(sharded[step] / one[step] - 1.0));
        }
        std::printf("%d rows, %d workers: loss within %.2g relative\n", rows, workers, deviation);
        EXPECT_EQ(train(workers), sharded);
      }
    }
  }
}

TEST(MlpCpuBf16, LossScalingChangesNothingWhileNothingOverflows) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(64, 16, 5, 4);
  const MlpSpec spec = spec_for(data, {24});
  std::vector<float> plain = gpubench::initial_parameters(spec);
  std::vector<float> scaled = plain;
  MlpBf16Trainer plain_trainer(spec, data.rows(), Bf16Product::widened_sgemm);
  MlpBf16Trainer scaled_trainer(spec, data.rows(), Bf16Product::widened_sgemm);
  scaled_trainer.enable_loss_scaling();
  for (int step = 0; step < 100; ++step) {
    plain_trainer.step(plain.data(), data.inputs.data(), data.labels.data());
    scaled_trainer.step(scaled.data(), data.inputs.data(), data.labels.data());
  }
  // A power-of-two scale shifts exponents only: every rounding happens at the same relative place,
  // so the scaled and unscaled runs are bit for bit the same.
  EXPECT_EQ(scaled, plain);
  ASSERT_NE(scaled_trainer.loss_scaler(), nullptr);
  EXPECT_EQ(scaled_trainer.loss_scaler()->skipped_steps(), 0);
  EXPECT_EQ(scaled_trainer.loss_scaler()->scale(), 65536.0F);
  EXPECT_EQ(plain_trainer.loss_scaler(), nullptr);
}

TEST(MlpCpuBf16, ScaledOverflowOrNanSkipsTheStepAndHalvesTheScale) {
  gpubench::cpu::set_blas_threads(1);
  const gpubench::Dataset data = gpubench::make_gaussian_clusters(8, 4, 3, 2);
  const MlpSpec spec = spec_for(data, {10});
  for (Bf16Product product : available_products()) {
    SCOPED_TRACE(product_name(product));
    MlpBf16Trainer trainer(spec, data.rows(), product);
    trainer.enable_loss_scaling();
    std::vector<float> parameters = gpubench::initial_parameters(spec);
    const std::vector<float> initial = parameters;

    // Inputs of 1e35 give activations and logits near 1e35: the loss is still finite, and so is
    // the true gradient, but the weight gradient times the scale 65536 overflows fp32.
    std::vector<float> huge = data.inputs;
    for (float& value : huge) value = value >= 0 ? 1e35F : -1e35F;
    const float overflow_loss = trainer.step(parameters.data(), huge.data(), data.labels.data());
    EXPECT_TRUE(std::isfinite(overflow_loss));
    EXPECT_EQ(parameters, initial);
    EXPECT_EQ(trainer.loss_scaler()->scale(), 32768.0F);
    EXPECT_EQ(trainer.loss_scaler()->skipped_steps(), 1);

    std::vector<float> with_nan = data.inputs;
    with_nan[5] = std::numeric_limits<float>::quiet_NaN();
    trainer.step(parameters.data(), with_nan.data(), data.labels.data());
    EXPECT_EQ(parameters, initial);
    EXPECT_EQ(trainer.loss_scaler()->scale(), 16384.0F);
    EXPECT_EQ(trainer.loss_scaler()->skipped_steps(), 2);

    // A clean batch afterwards trains again.
    trainer.step(parameters.data(), data.inputs.data(), data.labels.data());
    EXPECT_NE(parameters, initial);
    EXPECT_EQ(trainer.loss_scaler()->skipped_steps(), 2);
    EXPECT_EQ(trainer.loss_scaler()->clean_steps_in_a_row(), 1);
  }
}

TEST(MlpCpuBf16, MissingSbgemmOrAvx512Bf16IsAClearReason) {
  const std::string reason = gpubench::cpu::bf16_unavailable_reason();
  const bool available =
      gpubench::cpu::cpu_has_avx512_bf16() && gpubench::cpu::openblas_has_sbgemm();
  EXPECT_EQ(reason.empty(), available) << reason;
  if (!gpubench::cpu::openblas_has_sbgemm()) {
    MlpSpec spec;
    spec.inputs = 4;
    spec.hidden = {10};
    spec.classes = 3;
    try {
      MlpBf16Trainer trainer(spec, 8, Bf16Product::openblas_sbgemm);
      ADD_FAILURE() << "constructed an sbgemm trainer without cblas_sbgemm";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("exports no cblas_sbgemm"), std::string::npos);
    }
  }
  std::printf("[ info     ] native bf16 products here: %s\n",
              reason.empty() ? "yes" : reason.c_str());
}

}  // namespace
