// Mixed-precision MLP training on the GPU (bf16 and fp16, eager and graph): the losses stay within
// kMixedPrecisionLossTolerance of the fp32 CPU trajectory, Iris reaches the fp32 test accuracy,
// graphs repeat eager bit for bit, and fp16's loss scaling follows GradScaler's rules: a forced
// overflow skips the step (the weights stay exactly as they were) and halves the scale, clean steps
// grow it, and the device's scale matches the host LossScaler fed the same outcomes. Label `gpu`;
// skipped without a device.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dataset.hpp"
#include "harness/device_memory.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"
#include "kernels/mlp/mlp_spec.hpp"
#include "tests/bench_process.hpp"
#include "tests/gpu_test_main.hpp"
#include "tests/loss_scale_test_support.hpp"
#include "tests/mlp_test_support.hpp"

namespace {

using gpubench::Dataset;
using gpubench::kMixedPrecisionLossTolerance;
using gpubench::LossScalerSettings;
using gpubench::LossScaleState;
using gpubench::MlpPrecision;
using gpubench::MlpSpec;
using gpubench::cuda::MlpGpuTrainer;
using gpubench::cuda::TrainingExecution;
using gpubench::cuda::TrainingInput;
using gpubench::testing::accuracy;
using gpubench::testing::cpu_losses;
using gpubench::testing::spec_for;

constexpr MlpPrecision kMixed[] = {MlpPrecision::bf16, MlpPrecision::fp16};

std::string describe(MlpPrecision precision, TrainingExecution execution) {
  return std::string(gpubench::mlp_precision_name(precision)) +
         (execution == TrainingExecution::eager ? " eager" : " graph");
}

void expect_within_tolerance(double loss, double reference, const std::string& what) {
  EXPECT_NEAR(loss, reference, kMixedPrecisionLossTolerance * std::fabs(reference)) << what;
}

// Trains spec.epochs steps reading the loss back every `readback` steps; checks each against the
// fp32 CPU trajectory. Returns the losses read back.
std::vector<float> train_and_compare(MlpGpuTrainer& trainer, const MlpSpec& spec,
                                     TrainingExecution execution, int readback,
                                     const std::vector<float>& reference, const std::string& what) {
  gpubench::cuda::TrainingRunConfig config;
  config.execution = execution;
  config.readback_every = readback;
  config.input = TrainingInput::resident;
  trainer.prepare(config, spec.epochs);
  trainer.enqueue_reset();
  std::vector<float> losses;
  trainer.run(spec.epochs, &losses);
  EXPECT_EQ(losses.size(), static_cast<std::size_t>(spec.epochs / readback)) << what;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::size_t step = (i + 1) * static_cast<std::size_t>(readback);
    expect_within_tolerance(losses[i], reference[step - 1], what + " step " + std::to_string(step));
  }
  return losses;
}

TEST(MlpGpuMixed, IrisFollowsTheFp32TrajectoryAndReachesItsTestAccuracy) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 20000);
  std::vector<float> cpu_parameters;
  const std::vector<float> reference = cpu_losses(spec, iris.batch, &cpu_parameters);
  const double cpu_accuracy = accuracy(spec, cpu_parameters, iris.test);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  for (MlpPrecision precision : kMixed) {
    MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(), iris.batch.labels.data(),
                          initial.data(), precision);
    std::vector<float> eager_losses;
    for (TrainingExecution execution : {TrainingExecution::eager, TrainingExecution::graph}) {
      const std::string what = describe(precision, execution);
      const std::vector<float> losses =
          train_and_compare(trainer, spec, execution, 200, reference, what);
      EXPECT_DOUBLE_EQ(accuracy(spec, trainer.parameters(), iris.test), cpu_accuracy) << what;
      // The same kernels in the same order (the graph's side stream only overlaps independent
      // ones), with deterministic reductions: bit for bit.
      if (execution == TrainingExecution::eager) {
        eager_losses = losses;
      } else {
        EXPECT_EQ(losses, eager_losses) << what;
      }
      const std::optional<LossScaleState> scale = trainer.loss_scale_state();
      ASSERT_EQ(scale.has_value(), precision == MlpPrecision::fp16) << what;
      if (scale) {
        // The scale grows every 2000 clean steps until fp16 overflows, then backs off: a handful
        // of skipped steps in 20000, each costing the trajectory one step.
        EXPECT_EQ(scale->steps, 20000) << what;
        EXPECT_LT(scale->skipped_steps, 100) << what;
        EXPECT_GT(scale->scale, 1.0F) << what;
      }
    }
  }
}

TEST(MlpGpuMixed, TwoHiddenLayersAndTallOddBatchFollowFp32) {
  // More than 1024 rows (the bias gradients finish in their last block), odd widths (6 features:
  // the 2-byte weight copies of layers 1 and 2 start 287 and 1085 elements in, only 2-byte
  // aligned), and a step small enough for the graph's gradient branches on the side stream.
  const Dataset tall = gpubench::make_gaussian_clusters(2501, 6, 4, 5);
  const MlpSpec spec = spec_for(tall, {41, 19}, 40);
  const std::vector<float> reference = cpu_losses(spec, tall, nullptr);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  for (MlpPrecision precision : kMixed) {
    MlpGpuTrainer trainer(spec, tall.rows(), tall.inputs.data(), tall.labels.data(), initial.data(),
                          precision);
    const std::vector<float> eager =
        train_and_compare(trainer, spec, TrainingExecution::eager, 1, reference,
                          describe(precision, TrainingExecution::eager));
    const std::vector<float> graph =
        train_and_compare(trainer, spec, TrainingExecution::graph, 1, reference,
                          describe(precision, TrainingExecution::graph));
    EXPECT_EQ(graph, eager) << gpubench::mlp_precision_name(precision);
  }
}

TEST(MlpGpuMixed, LaunchesPerStepCountTheCasts) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 1);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  const std::map<MlpPrecision, int> expected = {
      {MlpPrecision::fp32, 12}, {MlpPrecision::bf16, 14}, {MlpPrecision::fp16, 16}};
  for (const auto& [precision, launches] : expected) {
    MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(), iris.batch.labels.data(),
                          initial.data(), precision);
    EXPECT_EQ(trainer.launches_per_step(), launches) << gpubench::mlp_precision_name(precision);
    EXPECT_EQ(trainer.device_bytes(), MlpGpuTrainer::planned_device_bytes(spec, 120, precision));
  }
}

// A scale so large that the loss gradient overflows fp16 (|dZ| up to 1/120, times 2^40): every
// step is skipped and halves the scale until the gradient fits; a skipped step leaves the weights
// exactly as they were. The device's scale and skip count match the host LossScaler fed the same
// outcomes.
TEST(MlpGpuMixed, ForcedOverflowSkipsTheStepAndHalvesTheScale) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 1);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  LossScalerSettings settings;
  settings.initial_scale = 0x1p40F;
  MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(), iris.batch.labels.data(),
                        initial.data(), MlpPrecision::fp16, settings);
  trainer.enqueue_reset();

  trainer.step_and_read_loss();
  EXPECT_EQ(trainer.parameters(), initial) << "the overflowing step changed the weights";
  std::optional<LossScaleState> state = trainer.loss_scale_state();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->scale, 0x1p39F);
  EXPECT_EQ(state->skipped_steps, 1);
  EXPECT_EQ(state->steps, 1);

  gpubench::LossScaler host(settings);
  host.update(/*found_non_finite=*/true);
  const int applied = gpubench::testing::step_and_follow_on_host(trainer, host, 2, 40);
  state = trainer.loss_scale_state();
  EXPECT_GT(applied, 0) << "the scale never came down to where fp16 holds the gradient";
  EXPECT_GT(state->skipped_steps, 10);  // 2^40 down to below 2^24 takes more than 16 halvings
  gpubench::testing::expect_state_equals_host(state, host);
  EXPECT_EQ(state->steps, 40);
}

TEST(MlpGpuMixed, CleanStepsGrowTheScaleAndResetRestartsIt) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 1);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  LossScalerSettings settings;
  settings.initial_scale = 256.0F;
  settings.growth_interval = 3;
  MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(), iris.batch.labels.data(),
                        initial.data(), MlpPrecision::fp16, settings);
  trainer.enqueue_reset();
  for (int step = 1; step <= 7; ++step) trainer.step_and_read_loss();
  std::optional<LossScaleState> state = trainer.loss_scale_state();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->scale, 1024.0F);  // grown after steps 3 and 6
  EXPECT_EQ(state->clean_steps_in_a_row, 1);
  EXPECT_EQ(state->skipped_steps, 0);
  trainer.enqueue_reset();
  state = trainer.loss_scale_state();
  EXPECT_EQ(state->scale, 256.0F);
  EXPECT_EQ(state->steps, 0);
  EXPECT_EQ(trainer.parameters(), initial);
}

TEST(MlpGpuMixed, BadLossScalingIsAClearError) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 1);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  LossScalerSettings settings;
  settings.growth_interval = 0;
  try {
    MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(), iris.batch.labels.data(),
                          initial.data(), MlpPrecision::fp16, settings);
    ADD_FAILURE() << "a growth interval of 0 was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("growth interval 0"), std::string::npos)
        << error.what();
  }
}

// Every mixed-precision kernel, a few steps each, for tools/gpu-check's compute-sanitizer runs.
TEST(MlpGpuMixed, ShortRunsOfEveryKernelForTheSanitizers) {
  const Dataset tall = gpubench::make_gaussian_clusters(1500, 6, 4, 5);
  const MlpSpec spec = spec_for(tall, {24, 12}, 3);
  const std::vector<float> reference = cpu_losses(spec, tall, nullptr);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  for (MlpPrecision precision : kMixed) {
    MlpGpuTrainer trainer(spec, tall.rows(), tall.inputs.data(), tall.labels.data(), initial.data(),
                          precision);
    for (TrainingExecution execution : {TrainingExecution::eager, TrainingExecution::graph}) {
      train_and_compare(trainer, spec, execution, 1, reference, describe(precision, execution));
    }
  }
}

TEST(MlpGpuMixed, BenchRowsCarryPrecisionAndLossScaling) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^mlp/gpu/(eager|graph)/data:iris/batch:120/hidden:10/readback:0"
      "(/precision:(bf16|fp16))?/manual_time$' --benchmark_min_time=0.01");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : run.json["benchmarks"]) rows[row["name"].get<std::string>()] = row;
  ASSERT_EQ(rows.size(), 6U) << run.stdout_text;
  for (const char* variant : {"eager", "graph"}) {
    const std::string stem =
        std::string("mlp/gpu/") + variant + "/data:iris/batch:120/hidden:10/readback:0";
    const double fp32_loss = rows.at(stem + "/manual_time")["final_loss"].get<double>();
    for (const char* precision : {"bf16", "fp16"}) {
      const std::string name = stem + "/precision:" + precision + "/manual_time";
      ASSERT_TRUE(rows.count(name)) << name;
      const auto& row = rows.at(name);
      ASSERT_FALSE(row.contains("error_occurred"))
          << name << ": " << row.value("error_message", "");
      EXPECT_EQ(row["label"], std::string("workload=mlp backend=gpu variant=") + variant +
                                  " data=iris precision=" + precision + " input=resident");
      EXPECT_NEAR(row["final_loss"].get<double>(), fp32_loss,
                  kMixedPrecisionLossTolerance * fp32_loss)
          << name;
      EXPECT_GE(row["test_accuracy"].get<double>(), 0.9) << name;
      EXPECT_TRUE(row.contains("device_bytes_model")) << name;
      const bool fp16 = std::string(precision) == "fp16";
      EXPECT_EQ(row.contains("loss_scale"), fp16) << name;
      EXPECT_EQ(row.contains("skipped_steps"), fp16) << name;
      EXPECT_DOUBLE_EQ(row["kernels_per_step"].get<double>(), fp16 ? 16 : 14) << name;
    }
  }
}

// The 4096 x 4096 MLP's largest-batch rows: each runs near the largest batch its model allows,
// the model matches what ran, the peak stays within the margin the search left, and bf16 (2-byte
// activations) fits a larger batch than fp32.
TEST(MlpGpuMixed, LargestBatchRowsRunNearTheModelsLargestAndBf16FitsMore) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^memory/gpu/largest_batch/net:mlp/data:synthetic/hidden:4096x2/'");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  std::map<std::string, double> largest_by_precision;
  MlpSpec spec;
  spec.inputs = gpubench::kSyntheticFeatures;
  spec.hidden = {4096, 4096};
  spec.classes = gpubench::kSyntheticClasses;
  for (const auto& row : run.json["benchmarks"]) {
    const std::string name = row["name"];
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    const bool bf16 = name.find("/precision:bf16/") != std::string::npos;
    const MlpPrecision precision = bf16 ? MlpPrecision::bf16 : MlpPrecision::fp32;
    const auto bytes_at = [&](double batch) {
      return MlpGpuTrainer::planned_device_bytes(spec, static_cast<int>(batch), precision);
    };
    const auto free_bytes = static_cast<std::size_t>(row["device_bytes_free"].get<double>());
    const std::size_t usable = gpubench::usable_device_bytes(free_bytes);
    const double largest = row["batch_largest"];
    EXPECT_LE(bytes_at(largest), usable) << name;
    EXPECT_GT(bytes_at(largest + 1), usable) << name;
    const double batch = row["batch"];
    EXPECT_EQ(batch, std::max(1, static_cast<int>(0.9 * largest))) << name;
    const std::size_t model = bytes_at(batch);
    EXPECT_DOUBLE_EQ(row["device_bytes_model"].get<double>(), static_cast<double>(model)) << name;
    const double peak = row["device_bytes_peak"];
    EXPECT_GE(peak, 0.99 * static_cast<double>(model)) << name;
    EXPECT_LE(peak, static_cast<double>(model + (free_bytes - usable))) << name;
    EXPECT_TRUE(std::isfinite(row["final_loss"].get<double>())) << name;
    largest_by_precision[gpubench::mlp_precision_name(precision)] = largest;
  }
  ASSERT_EQ(largest_by_precision.size(), 2U) << run.stdout_text;
  EXPECT_GT(largest_by_precision["bf16"], largest_by_precision["fp32"]);
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
