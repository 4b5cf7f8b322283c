// Dynamic loss scaling (kernels/common/loss_scaler.hpp) against torch.cuda.amp.GradScaler's rules:
// its defaults, a step with an overflowed or NaN gradient skipped with the parameters unchanged and
// the scale halved, the scale doubled after 2000 clean steps in a row, and clear errors for bad
// settings. The bf16 trainer's use of it is tested in test_mlp_cpu_bf16.cpp.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/common/loss_scaler.hpp"

namespace {

using gpubench::LossScaler;
using gpubench::LossScalerSettings;

// One SGD step as a mixed-precision trainer takes it: the gradient arrives multiplied by the
// scale (scaled loss, backward), is unscaled and checked, and is applied only when finite.
// Returns whether the step was applied.
bool scaled_sgd_step(LossScaler* scaler, const std::vector<float>& true_gradient,
                     std::vector<float>* parameters) {
  std::vector<float> gradient(true_gradient.size());
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    gradient[i] = true_gradient[i] * scaler->scale();  // fp32, as the backward pass computes it
  }
  const bool finite = scaler->unscale(gradient.data(), gradient.size());
  scaler->update(!finite);
  if (!finite) return false;
  for (std::size_t i = 0; i < gradient.size(); ++i) (*parameters)[i] -= 0.1F * gradient[i];
  return true;
}

TEST(LossScaler, DefaultsArePyTorchGradScalers) {
  const LossScalerSettings defaults;
  EXPECT_EQ(defaults.initial_scale, 65536.0F);
  EXPECT_EQ(defaults.growth_factor, 2.0F);
  EXPECT_EQ(defaults.backoff_factor, 0.5F);
  EXPECT_EQ(defaults.growth_interval, 2000);
  const LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0F);
  EXPECT_EQ(scaler.steps(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(LossScaler, ForcedOverflowSkipsTheStepAndHalvesTheScale) {
  LossScaler scaler;
  std::vector<float> parameters = {0.5F, -0.25F, 1.0F};
  const std::vector<float> before = parameters;
  // 1e35 is a finite fp32 gradient, but 1e35 x 65536 overflows fp32 to inf: the scale is too big.
  const std::vector<float> overflowing = {0.1F, 1e35F, -0.2F};
  EXPECT_FALSE(scaled_sgd_step(&scaler, overflowing, &parameters));
  EXPECT_EQ(parameters, before);
  EXPECT_EQ(scaler.scale(), 32768.0F);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.steps(), 1);
  EXPECT_EQ(scaler.clean_steps_in_a_row(), 0);

  // A clean step afterwards is applied with the exact unscaled gradient (the scale is a power of
  // two, so scaling and unscaling are exact).
  EXPECT_TRUE(scaled_sgd_step(&scaler, {0.5F, 0.25F, -1.0F}, &parameters));
  EXPECT_EQ(parameters, (std::vector<float>{0.5F - 0.05F, -0.25F - 0.025F, 1.0F + 0.1F}));
  EXPECT_EQ(scaler.scale(), 32768.0F);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.clean_steps_in_a_row(), 1);
}

TEST(LossScaler, NanSkipsTheStepToo) {
  LossScaler scaler;
  std::vector<float> parameters = {0.5F, -0.25F};
  const std::vector<float> before = parameters;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(scaled_sgd_step(&scaler, {nan, 0.1F}, &parameters));
  EXPECT_EQ(parameters, before);
  EXPECT_EQ(scaler.scale(), 32768.0F);
  EXPECT_FALSE(
      scaled_sgd_step(&scaler, {0.1F, -std::numeric_limits<float>::infinity()}, &parameters));
  EXPECT_EQ(parameters, before);
  EXPECT_EQ(scaler.scale(), 16384.0F);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, TwoThousandCleanStepsDoubleTheScale) {
  LossScaler scaler;
  for (int step = 0; step < 1999; ++step) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 65536.0F) << "after 1999 clean steps";
  EXPECT_EQ(scaler.clean_steps_in_a_row(), 1999);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 131072.0F) << "after 2000 clean steps";
  EXPECT_EQ(scaler.clean_steps_in_a_row(), 0);
  for (int step = 0; step < 2000; ++step) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 262144.0F) << "after 4000 clean steps";
  EXPECT_EQ(scaler.skipped_steps(), 0);
  EXPECT_EQ(scaler.steps(), 4000);
}

TEST(LossScaler, ASkippedStepRestartsTheCountOfCleanSteps) {
  LossScaler scaler;
  for (int step = 0; step < 1500; ++step) scaler.update(false);
  scaler.update(true);  // 32768, count back to zero
  for (int step = 0; step < 1999; ++step) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 32768.0F);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 65536.0F);
}

TEST(LossScaler, NeverGrowsPastFloatRange) {
  LossScalerSettings settings;
  settings.initial_scale = 0x1p127F;  // the largest power of two in fp32
  settings.growth_interval = 1;
  LossScaler scaler(settings);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 0x1p127F);
  EXPECT_TRUE(std::isfinite(scaler.scale()));
}

TEST(LossScaler, UnscaleDividesExactlyAndFindsNonFiniteValues) {
  LossScaler scaler;
  std::vector<float> gradient = {65536.0F, -32768.0F, 3.0F};
  EXPECT_TRUE(scaler.unscale(gradient.data(), gradient.size()));
  EXPECT_EQ(gradient, (std::vector<float>{1.0F, -0.5F, 3.0F / 65536.0F}));
  EXPECT_TRUE(gpubench::all_finite(gradient.data(), gradient.size()));
  gradient[1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(gpubench::all_finite(gradient.data(), gradient.size()));
  gradient[1] = -std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(gpubench::all_finite(gradient.data(), gradient.size()));
  gradient[1] = std::numeric_limits<float>::max();
  EXPECT_TRUE(gpubench::all_finite(gradient.data(), gradient.size()));
}

TEST(LossScaler, BadSettingsAreClearErrors) {
  const auto message = [](LossScalerSettings settings) -> std::string {
    try {
      LossScaler scaler(settings);
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "no error";
  };
  LossScalerSettings settings;
  settings.initial_scale = 0.0F;
  EXPECT_NE(message(settings).find("initial scale"), std::string::npos);
  settings = {};
  settings.growth_factor = 1.0F;
  EXPECT_NE(message(settings).find("growth factor"), std::string::npos);
  settings = {};
  settings.backoff_factor = 1.0F;
  EXPECT_NE(message(settings).find("backoff factor"), std::string::npos);
  settings = {};
  settings.growth_interval = 0;
  EXPECT_NE(message(settings).find("growth interval"), std::string::npos);
  EXPECT_EQ(message({}), "no error");
}

}  // namespace
