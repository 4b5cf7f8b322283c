// Every GPU MLP path (eager, graph, fused; every readback mode and input source) follows the CPU's
// loss trajectory from the same weights and ends at the same test accuracy; bad configurations are
// clear errors; the bench rows carry their counters. Label `gpu`; skipped without a device.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dataset.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cuda_fused_trainer.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"
#include "tests/bench_process.hpp"
#include "tests/gpu_test_main.hpp"
#include "tests/mlp_test_support.hpp"

namespace {

using gpubench::Dataset;
using gpubench::MlpSpec;
using gpubench::cuda::TrainingExecution;
using gpubench::cuda::TrainingInput;
using gpubench::testing::accuracy;
using gpubench::testing::cpu_losses;
using gpubench::testing::spec_for;

// The GPU sums the same terms as the CPU in other orders (cuBLAS, block reductions, expf); SGD
// carries each step's rounding on. Relative 1e-3 after 1000 (or 20000) epochs is ~100x what the
// CPU's own two paths differ by, and far below what a wrong gradient, a missed ReLU mask or a stale
// weight would produce (those change the loss in the first digits within tens of steps).
constexpr double kTolerance = 1e-3;

void expect_close(double value, double reference, const std::string& what) {
  EXPECT_NEAR(value, reference, kTolerance * std::fabs(reference) + 1e-6) << what;
}

struct Mode {
  TrainingExecution execution;
  int readback;
  TrainingInput input;
  std::string name() const {
    return std::string(execution == TrainingExecution::eager ? "eager" : "graph") +
           " readback:" + std::to_string(readback) +
           " input:" + gpubench::cuda::training_input_name(input);
  }
};

// Trains `spec.epochs` steps in `mode` and checks every readback and the final loss against the
// CPU trajectory; returns the final parameters.
std::vector<float> train_and_compare(const MlpSpec& spec, const Dataset& batch, const Mode& mode,
                                     const std::vector<float>& reference) {
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  gpubench::cuda::MlpGpuTrainer trainer(spec, batch.rows(), batch.inputs.data(),
                                        batch.labels.data(), initial.data());
  gpubench::cuda::TrainingRunConfig config;
  config.execution = mode.execution;
  config.readback_every = mode.readback;
  config.input = mode.input;
  config.graph_steps = 64;  // does not divide 1000: the remainder graph is exercised too
  trainer.prepare(config, spec.epochs);
  std::vector<float> losses;
  trainer.enqueue_reset();
  trainer.run(spec.epochs, &losses);
  const std::size_t expected_readbacks = mode.readback > 0 ? spec.epochs / mode.readback : 0;
  EXPECT_EQ(losses.size(), expected_readbacks) << mode.name();
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::size_t step = (i + 1) * mode.readback;
    expect_close(losses[i], reference[step - 1], mode.name() + " step " + std::to_string(step));
  }
  expect_close(trainer.last_loss(), reference.back(), mode.name() + " final loss");
  // A second run from the reset weights repeats the first exactly (deterministic reductions).
  const float first_final = trainer.last_loss();
  trainer.enqueue_reset();
  trainer.run(spec.epochs, nullptr);
  EXPECT_EQ(trainer.last_loss(), first_final) << mode.name() << ": runs differ";
  return trainer.parameters();
}

TEST(MlpGpu, EveryStepwisePathFollowsTheCpuTrajectoryOnIris) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 1000);
  const std::vector<float> reference = cpu_losses(spec, iris.batch, nullptr);
  std::vector<Mode> modes;
  for (int readback : {1, 200, 0}) {
    modes.push_back({TrainingExecution::eager, readback, TrainingInput::resident});
    modes.push_back({TrainingExecution::graph, readback, TrainingInput::resident});
  }
  modes.push_back({TrainingExecution::eager, 0, TrainingInput::pageable});
  modes.push_back({TrainingExecution::eager, 1, TrainingInput::pinned});
  modes.push_back({TrainingExecution::graph, 0, TrainingInput::pinned});
  modes.push_back({TrainingExecution::graph, 200, TrainingInput::pinned});
  for (const Mode& mode : modes) train_and_compare(spec, iris.batch, mode, reference);
}

TEST(MlpGpu, EveryPathReachesTheCpuTestAccuracyOnIrisAfter20000Epochs) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 20000);
  std::vector<float> cpu_parameters;
  const std::vector<float> reference = cpu_losses(spec, iris.batch, &cpu_parameters);
  const double cpu_accuracy = accuracy(spec, cpu_parameters, iris.test);
  EXPECT_GE(cpu_accuracy, 0.9);
  for (const Mode& mode : {Mode{TrainingExecution::eager, 0, TrainingInput::resident},
                           Mode{TrainingExecution::graph, 0, TrainingInput::resident}}) {
    const std::vector<float> parameters = train_and_compare(spec, iris.batch, mode, reference);
    EXPECT_DOUBLE_EQ(accuracy(spec, parameters, iris.test), cpu_accuracy) << mode.name();
  }

  const std::vector<float> initial = gpubench::initial_parameters(spec);
  gpubench::cuda::MlpFusedTrainer fused(spec, 120, iris.batch.inputs.data(),
                                        iris.batch.labels.data(), initial.data());
  EXPECT_TRUE(fused.plan().specialised);
  fused.launch(spec.epochs);
  const std::vector<float> history = fused.loss_history(spec.epochs);
  for (int epoch : {0, 1, 9, 99, 999, 9999, 19999}) {
    expect_close(history[epoch], reference[epoch], "fused epoch " + std::to_string(epoch + 1));
  }
  EXPECT_DOUBLE_EQ(accuracy(spec, fused.parameters(), iris.test), cpu_accuracy) << "fused";
  // Launching again from the reset weights gives the same history, bit for bit.
  fused.enqueue_reset();
  fused.launch(spec.epochs);
  EXPECT_EQ(fused.loss_history(spec.epochs), history);
}

// Compares the fused kernel's whole loss history with the CPU's.
void expect_fused_matches_cpu(const MlpSpec& spec, const Dataset& batch, bool specialised) {
  const std::vector<float> reference = cpu_losses(spec, batch, nullptr);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  gpubench::cuda::MlpFusedTrainer fused(spec, batch.rows(), batch.inputs.data(),
                                        batch.labels.data(), initial.data());
  EXPECT_EQ(fused.plan().specialised, specialised) << spec.describe();
  fused.launch(spec.epochs);
  const std::vector<float> history = fused.loss_history(spec.epochs);
  for (int epoch = 0; epoch < spec.epochs; ++epoch) {
    expect_close(history[epoch], reference[epoch],
                 spec.describe() + " fused epoch " + std::to_string(epoch + 1));
  }
}

TEST(MlpGpu, FusedKernelMatchesTheCpuOnOtherShapes) {
  // The compiled-in digits shape.
  const gpubench::TabularData digits = gpubench::load_tabular_data("digits", 64);
  expect_fused_matches_cpu(spec_for(digits.batch, {32}, 300), digits.batch, true);
  // Run-time widths, two hidden layers, an odd batch.
  const Dataset odd = gpubench::make_gaussian_clusters(37, 5, 4, 3);
  expect_fused_matches_cpu(spec_for(odd, {17, 9}, 300), odd, false);
  // Three hidden layers.
  expect_fused_matches_cpu(spec_for(odd, {8, 8, 8}, 100), odd, false);
  // More samples than threads: each thread trains several samples in phase A.
  const Dataset many = gpubench::make_gaussian_clusters(2000, 4, 3, 4);
  expect_fused_matches_cpu(spec_for(many, {6}, 100), many, false);
}

TEST(MlpGpu, StepwisePathsMatchTheCpuOnTwoHiddenLayersAndOddBatch) {
  const Dataset odd = gpubench::make_gaussian_clusters(37, 5, 4, 3);
  const MlpSpec spec = spec_for(odd, {17, 9}, 200);
  const std::vector<float> reference = cpu_losses(spec, odd, nullptr);
  train_and_compare(spec, odd, {TrainingExecution::eager, 1, TrainingInput::resident}, reference);
  train_and_compare(spec, odd, {TrainingExecution::graph, 0, TrainingInput::pinned}, reference);
  // A wide layer, a large batch: cuBLAS picks other kernels.
  const gpubench::TabularData synthetic = gpubench::load_tabular_data("synthetic", 4096);
  const MlpSpec wide = spec_for(synthetic.batch, {512}, 20);
  const std::vector<float> wide_reference = cpu_losses(wide, synthetic.batch, nullptr);
  train_and_compare(wide, synthetic.batch, {TrainingExecution::eager, 1, TrainingInput::resident},
                    wide_reference);
  train_and_compare(wide, synthetic.batch, {TrainingExecution::graph, 1, TrainingInput::resident},
                    wide_reference);
}

// 6-41-19-4 in fp32: layers 1 and 2 start 287 and 1085 floats into the parameter vector, so their
// weights and weight gradients are only 4-byte aligned, and cuBLASLt must be told so (it assumes
// 256 and may otherwise choose kernels with 16-byte vector loads). Every step's loss follows the
// CPU's, and so does every final weight: within kTolerance of the largest weight, about what one
// step's update moves a weight by, so a product reading misaligned weights shows.
TEST(MlpGpu, Fp32StepWithFourByteAlignedWeightsFollowsTheCpu) {
  for (int rows : {2501, 37}) {  // more than 1024 rows; and a step with gradient branches
    const Dataset batch = gpubench::make_gaussian_clusters(rows, 6, 4, 5);
    const MlpSpec spec = spec_for(batch, {41, 19}, 40);
    for (int layer : {1, 2}) {
      const auto alignment =
          gpubench::cuda::mlp_operand_alignment(spec, layer, gpubench::MlpPrecision::fp32);
      ASSERT_EQ(alignment.weights, 4U) << "layer " << layer;
      ASSERT_EQ(alignment.weight_gradient, 4U) << "layer " << layer;
    }
    std::vector<float> cpu_parameters;
    const std::vector<float> reference = cpu_losses(spec, batch, &cpu_parameters);
    float largest_weight = 0;
    for (float value : cpu_parameters) largest_weight = std::max(largest_weight, std::fabs(value));
    for (const Mode& mode : {Mode{TrainingExecution::eager, 1, TrainingInput::resident},
                             Mode{TrainingExecution::graph, 1, TrainingInput::resident}}) {
      const std::string what = std::to_string(rows) + " rows " + mode.name();
      const std::vector<float> parameters = train_and_compare(spec, batch, mode, reference);
      ASSERT_EQ(parameters.size(), cpu_parameters.size()) << what;
      for (std::size_t i = 0; i < parameters.size(); ++i) {
        ASSERT_NEAR(parameters[i], cpu_parameters[i], kTolerance * largest_weight)
            << what << " parameter " << i;
      }
    }
  }
}

// Every MLP kernel and every launch path, a few steps each: the case tools/gpu-check runs under
// compute-sanitizer, whose racecheck makes each shared-memory access a checked event (the 20000-
// epoch fused Iris run does not finish under it in ten minutes).
TEST(MlpGpu, ShortRunsOfEveryKernelForTheSanitizers) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  const MlpSpec spec = spec_for(iris.batch, {10}, 5);
  const std::vector<float> reference = cpu_losses(spec, iris.batch, nullptr);
  // Eager with a copy and a readback every step; a graph whose gradient branches run on the side
  // stream (120 x 10 is a small step); a graph with pinned input copies.
  train_and_compare(spec, iris.batch, {TrainingExecution::eager, 1, TrainingInput::pageable},
                    reference);
  train_and_compare(spec, iris.batch, {TrainingExecution::graph, 0, TrainingInput::resident},
                    reference);
  train_and_compare(spec, iris.batch, {TrainingExecution::graph, 1, TrainingInput::pinned},
                    reference);
  // More than 1024 rows: the loss and the bias gradients finish in their last block.
  const Dataset tall = gpubench::make_gaussian_clusters(2500, 6, 4, 5);
  const MlpSpec tall_spec = spec_for(tall, {40, 20}, 3);
  train_and_compare(tall_spec, tall, {TrainingExecution::eager, 1, TrainingInput::resident},
                    cpu_losses(tall_spec, tall, nullptr));
  // The fused kernel: Iris compiled in (phase A in registers), and run-time widths.
  expect_fused_matches_cpu(spec, iris.batch, true);
  const Dataset odd = gpubench::make_gaussian_clusters(37, 5, 4, 3);
  expect_fused_matches_cpu(spec_for(odd, {17, 9}, 5), odd, false);
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

TEST(MlpGpu, BadConfigurationsAreClearErrors) {
  const gpubench::TabularData iris = gpubench::load_tabular_data("iris", 120);
  MlpSpec zero_width = spec_for(iris.batch, {0}, 10);
  const std::vector<float> parameters(100, 0.1F);
  EXPECT_NE(error_of<std::invalid_argument>([&] {
              gpubench::cuda::MlpGpuTrainer(zero_width, 120, iris.batch.inputs.data(),
                                            iris.batch.labels.data(), parameters.data());
            }).find("hidden layer 0 has width 0"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] {
              gpubench::cuda::MlpFusedTrainer(zero_width, 120, iris.batch.inputs.data(),
                                              iris.batch.labels.data(), parameters.data());
            }).find("width 0"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] {
              gpubench::load_tabular_data("iris", 200);
            }).find("batch 200 is larger than the 120 training rows of iris"),
            std::string::npos);

  // Digits at full batch and a wide layer does not fit in one block's shared memory.
  const gpubench::TabularData digits = gpubench::load_tabular_data("digits", 1437);
  const MlpSpec big = spec_for(digits.batch, {256}, 10);
  const gpubench::cuda::MlpFusedPlan plan =
      gpubench::cuda::plan_mlp_fused_on_current_device(big, 1437);
  EXPECT_FALSE(plan.fits());
  EXPECT_GT(plan.available_bytes, 0U);
  const std::vector<float> big_parameters = gpubench::initial_parameters(big);
  const std::string message = error_of<std::runtime_error>([&] {
    gpubench::cuda::MlpFusedTrainer(big, 1437, digits.batch.inputs.data(),
                                    digits.batch.labels.data(), big_parameters.data());
  });
  EXPECT_NE(message.find("does not fit on chip: needs " + std::to_string(plan.shared_bytes) +
                         " bytes of shared memory, " + std::to_string(plan.available_bytes) +
                         " available"),
            std::string::npos)
      << message;

  // A graph cannot capture copies from pageable memory; the trainer says so and stays usable.
  const MlpSpec spec = spec_for(iris.batch, {10}, 10);
  const std::vector<float> initial = gpubench::initial_parameters(spec);
  gpubench::cuda::MlpGpuTrainer trainer(spec, 120, iris.batch.inputs.data(),
                                        iris.batch.labels.data(), initial.data());
  gpubench::cuda::TrainingRunConfig config;
  config.execution = TrainingExecution::graph;
  config.input = TrainingInput::pageable;
  EXPECT_NE(error_of<std::invalid_argument>([&] { trainer.prepare(config, 10); }).find("pageable"),
            std::string::npos);
  EXPECT_TRUE(std::isfinite(trainer.step_and_read_loss()));
  std::vector<int> bad_labels(iris.batch.labels);
  bad_labels[5] = 3;
  EXPECT_NE(error_of<std::invalid_argument>([&] {
              gpubench::cuda::MlpGpuTrainer(spec, 120, iris.batch.inputs.data(), bad_labels.data(),
                                            initial.data());
            }).find("label 3 of row 5"),
            std::string::npos);
}

std::map<std::string, nlohmann::json> rows_by_name(const nlohmann::json& json) {
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : json["benchmarks"]) rows[row["name"].get<std::string>()] = row;
  return rows;
}

TEST(MlpGpu, BenchRowsCarryTheirCountersAndAgreeWithTheCpu) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^mlp/(gpu/(eager|graph|fused)|cpu/openblas)/data:iris/batch:120/"
      "hidden:10/readback:(0|1)(/threads:1|/manual_time)$' --benchmark_min_time=0.01");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto rows = rows_by_name(run.json);
  const std::string cpu_name =
      "mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:1";
  ASSERT_TRUE(rows.count(cpu_name)) << run.stdout_text;
  const double cpu_loss = rows.at(cpu_name)["final_loss"].get<double>();
  int gpu_rows = 0;
  for (const char* variant : {"eager", "graph", "fused"}) {
    const std::string name =
        std::string("mlp/gpu/") + variant + "/data:iris/batch:120/hidden:10/readback:0/manual_time";
    ASSERT_TRUE(rows.count(name)) << name;
    const auto& row = rows.at(name);
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    for (const char* counter : {"t_epoch",       "samples_per_s", "kernels",    "kernels_per_step",
                                "readbacks",     "bytes_h2d",     "final_loss", "test_accuracy",
                                "flop",          "FLOP/s",        "batch",      "hidden",
                                "hidden_layers", "readback",      "epochs",     "t_h2d",
                                "t_compute",     "t_d2h",         "t_wall",     "t_overhead"}) {
      EXPECT_TRUE(row.contains(counter)) << name << " lacks " << counter;
    }
    EXPECT_EQ(row["label"], std::string("workload=mlp backend=gpu variant=") + variant +
                                " data=iris input=resident");
    EXPECT_NEAR(row["final_loss"].get<double>(), cpu_loss, kTolerance * cpu_loss) << name;
    EXPECT_GE(row["test_accuracy"].get<double>(), 0.9) << name;
    EXPECT_DOUBLE_EQ(row["epochs"].get<double>(), 20000);
    EXPECT_DOUBLE_EQ(row["readbacks"].get<double>(), 0);
    // The step's work as the CPU row states it (4 -> 10 -> 3 at batch 120: 42,100 bytes a step
    // by the minimum-traffic model, docs/workloads.md).
    EXPECT_DOUBLE_EQ(row["bytes_moved"].get<double>(), 20000 * 42100.0) << name;
    EXPECT_DOUBLE_EQ(row["bytes_moved"].get<double>(),
                     rows.at(cpu_name)["bytes_moved"].get<double>())
        << name;
    EXPECT_DOUBLE_EQ(row["arithmetic_intensity"].get<double>(), 40800.0 / 42100.0) << name;
    ++gpu_rows;
  }
  EXPECT_EQ(gpu_rows, 3);
  const std::string eager = "mlp/gpu/eager/data:iris/batch:120/hidden:10/readback:";
  // `kernels` per iteration (20000 steps), `kernels_per_step` per step.
  const auto& eager_row = rows.at(eager + "0/manual_time");
  EXPECT_DOUBLE_EQ(eager_row["kernels_per_step"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(eager_row["kernels"].get<double>(), 12.0 * 20000);
  EXPECT_DOUBLE_EQ(rows.at(eager + "1/manual_time")["readbacks"].get<double>(), 20000);
  const auto& fused_row =
      rows.at("mlp/gpu/fused/data:iris/batch:120/hidden:10/readback:0/manual_time");
  EXPECT_NEAR(fused_row["kernels"].get<double>(), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(fused_row["kernels_per_step"].get<double>(), 1.0 / 20000);
}

TEST(MlpGpu, FusedBenchmarkSkipsWhatDoesNotFitWithTheReason) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^mlp/gpu/fused/data:synthetic/batch:256/hidden:64x2/' "
      "--benchmark_min_time=0.01");
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  ASSERT_EQ(run.json["benchmarks"].size(), 1U) << run.stdout_text;
  const auto& row = run.json["benchmarks"][0];
  EXPECT_TRUE(row.value("error_occurred", false));
  EXPECT_NE(row.value("error_message", "").find("does not fit on chip: needs"), std::string::npos)
      << row.value("error_message", "");
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
