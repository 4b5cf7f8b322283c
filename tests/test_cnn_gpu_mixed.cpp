// Mixed-precision training of the CNN on the GPU (kernels/cnn/cnn_cuda_trainer.hpp, bf16 and
// fp16): the losses stay within kMixedPrecisionLossTolerance of the fp32 CPU trainer's for 20 steps
// at the tutorial's batch; graph runs equal eager runs bit for bit; a forced fp16 overflow skips
// the step, leaves the weights exactly as they were and halves the scale, as the host LossScaler
// does; launches and device bytes are what the trainer and its memory model say; and a short run of
// every kernel for the sanitizers. Label `gpu`; skipped without a device.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/training_precision.hpp"
#include "tests/cnn_test_support.hpp"
#include "tests/gpu_test_main.hpp"
#include "tests/loss_scale_test_support.hpp"

namespace {

using gpubench::CnnSpec;
using gpubench::kMixedPrecisionLossTolerance;
using gpubench::LossScalerSettings;
using gpubench::LossScaleState;
using gpubench::TrainingPrecision;
using gpubench::cuda::CnnGpuTrainer;
using gpubench::cuda::TrainingExecution;
using gpubench::cuda::TrainingInput;
using Batch = gpubench::test::CnnBatch;
using gpubench::test::cnn_run_config;
using gpubench::test::cnn_trajectory;
using gpubench::test::random_cnn_batch;

constexpr TrainingPrecision kMixedPrecisions[] = {TrainingPrecision::bf16, TrainingPrecision::fp16};

std::string name_of(TrainingPrecision precision) {
  return gpubench::training_precision_name(precision);
}

// The tutorial's batch, 20 steps: every step's loss within 2^-5 relative of the fp32 CPU trainer's
// at the same step (each carries the previous steps' rounding, as the benchmarks' validation
// allows). bf16 and fp16 round differently, so their trajectories must differ somewhere: a mixed
// step that silently ran in one format (or in fp32) would not.
TEST(CnnGpuMixed, LossesTrackTheFp32CpuTrainerForTwentySteps) {
  constexpr int kBatch = gpubench::kCnnTutorialBatch;
  constexpr int kSteps = 20;
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const Batch batch = random_cnn_batch(kBatch, 31);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::CnnCpuTrainer cpu(spec, kBatch);
  std::vector<float> parameters = initial;
  std::vector<float> cpu_losses;
  for (int step = 0; step < kSteps; ++step) {
    cpu_losses.push_back(cpu.step(parameters.data(), batch.images.data(), batch.labels.data()));
  }

  std::vector<std::vector<float>> mixed_losses;
  for (TrainingPrecision precision : kMixedPrecisions) {
    CnnGpuTrainer gpu(spec, kBatch, batch.images.data(), batch.labels.data(), initial.data(),
                      precision);
    const std::vector<float> losses = cnn_trajectory(
        gpu, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), kSteps);
    ASSERT_EQ(losses.size(), static_cast<std::size_t>(kSteps)) << name_of(precision);
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_NEAR(losses[step], cpu_losses[step],
                  kMixedPrecisionLossTolerance * std::fabs(cpu_losses[step]))
          << name_of(precision) << " step " << step + 1;
    }
    // The training moved: the last loss is below the first (lr 0.01 on one batch).
    EXPECT_LT(losses.back(), losses.front()) << name_of(precision);
    const std::optional<LossScaleState> state = gpu.loss_scale_state();
    if (precision == TrainingPrecision::fp16) {
      ASSERT_TRUE(state.has_value());
      // The default scale 2^16 holds this gradient: nothing skipped, nothing grown yet.
      EXPECT_EQ(state->skipped_steps, 0);
      EXPECT_EQ(state->steps, kSteps);
      EXPECT_EQ(state->scale, LossScalerSettings{}.initial_scale);
    } else {
      EXPECT_FALSE(state.has_value()) << "bf16 trains without loss scaling";
    }
    mixed_losses.push_back(losses);
  }
  EXPECT_NE(mixed_losses[0], mixed_losses[1]) << "bf16 and fp16 gave the same bits";
}

// Eager and graph issue the same operations on one stream, loss scaling included: the same losses
// and parameters, bit for bit, whether a graph holds one step or several.
TEST(CnnGpuMixed, GraphRunsEqualEagerRunsBitForBit) {
  constexpr int kSteps = 4;
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const Batch batch = random_cnn_batch(16, 32);
  for (TrainingPrecision precision : kMixedPrecisions) {
    CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(),
                          initial.data(), precision);
    const std::vector<float> eager = cnn_trajectory(
        trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::resident), kSteps);
    const std::vector<float> eager_parameters = trainer.parameters();
    const std::optional<LossScaleState> eager_state = trainer.loss_scale_state();
    EXPECT_EQ(
        cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::pinned),
                       kSteps),
        eager)
        << name_of(precision) << " graph of one step";
    EXPECT_EQ(trainer.parameters(), eager_parameters) << name_of(precision);
    cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 0, TrainingInput::resident, 3),
                   kSteps);
    EXPECT_EQ(trainer.last_loss(), eager.back()) << name_of(precision) << " graphs of 3 + 1 steps";
    EXPECT_EQ(trainer.parameters(), eager_parameters) << name_of(precision);
    if (precision == TrainingPrecision::fp16) {
      const std::optional<LossScaleState> graph_state = trainer.loss_scale_state();
      ASSERT_TRUE(graph_state.has_value() && eager_state.has_value());
      EXPECT_EQ(graph_state->steps, eager_state->steps);
      EXPECT_EQ(graph_state->scale, eager_state->scale);
    }
  }
}

// A scale so large that the loss gradient overflows fp16 (|dlogits| up to 1/64, times 2^40 = 2^34
// > 65504): the step is skipped, the weights (fp32 master and the 2-byte copy the next step reads)
// stay exactly as they were, and the scale halves. Then, as the scale comes down, the device's
// state follows the host LossScaler fed the same outcomes, in eager steps and in a graph alike.
TEST(CnnGpuMixed, ForcedFp16OverflowSkipsTheStepKeepsTheWeightsAndHalvesTheScale) {
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const Batch batch = random_cnn_batch(gpubench::kCnnTutorialBatch, 33);
  LossScalerSettings settings;
  settings.initial_scale = 0x1p40F;
  CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data(),
                        TrainingPrecision::fp16, settings);

  const float first_loss = trainer.step_and_read_loss();
  EXPECT_EQ(trainer.parameters(), initial) << "the overflowing step changed the weights";
  std::optional<LossScaleState> state = trainer.loss_scale_state();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->scale, 0x1p39F);
  EXPECT_EQ(state->skipped_steps, 1);
  EXPECT_EQ(state->steps, 1);
  // The 2-byte weights were not touched either: the next step's forward pass is the same, bit for
  // bit (its loss is computed before its own update).
  EXPECT_EQ(trainer.step_and_read_loss(), first_loss);

  gpubench::LossScaler host(settings);
  host.update(/*found_non_finite=*/true);
  host.update(/*found_non_finite=*/true);  // the second step: 2^39 still overflows
  EXPECT_EQ(trainer.parameters(), initial);
  constexpr int kSteps = 30;
  const int applied = gpubench::testing::step_and_follow_on_host(trainer, host, 3, kSteps);
  state = trainer.loss_scale_state();
  EXPECT_GT(applied, 0) << "the scale never came down to where fp16 holds the gradient";
  EXPECT_GT(state->skipped_steps, 10);  // 2^40 down to below 2^30 takes more than 10 halvings
  gpubench::testing::expect_state_equals_host(state, host);
  EXPECT_EQ(state->steps, kSteps);

  // The same in a graph: a reset restores the initial scale, and one replayed step skips too.
  cnn_trajectory(trainer, cnn_run_config(TrainingExecution::graph, 1, TrainingInput::resident), 1);
  EXPECT_EQ(trainer.parameters(), initial);
  state = trainer.loss_scale_state();
  EXPECT_EQ(state->scale, 0x1p39F);
  EXPECT_EQ(state->skipped_steps, 1);
}

// The trainer's counts against what it documents and what its memory model says, for every
// precision: 37 launches in fp32, 4 casts more in bf16, and fp16's check and scale update; device
// bytes exactly the model's, and the model's mixed-precision buffers there only when mixed.
TEST(CnnGpuMixed, LaunchesAndDeviceBytesFollowTheModel) {
  const CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  const Batch batch = random_cnn_batch(8, 34);
  const struct {
    TrainingPrecision precision;
    int launches;
  } cases[] = {
      {TrainingPrecision::fp32, 37}, {TrainingPrecision::bf16, 41}, {TrainingPrecision::fp16, 43}};
  for (const auto& expected : cases) {
    CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(),
                          initial.data(), expected.precision);
    EXPECT_EQ(trainer.launches_per_step(), expected.launches) << name_of(expected.precision);
    EXPECT_EQ(trainer.precision(), expected.precision);
    EXPECT_EQ(trainer.device_bytes(),
              gpubench::cuda::cnn_gpu_device_bytes(spec, batch.size, expected.precision))
        << name_of(expected.precision);
    const gpubench::cuda::CnnGpuBuffers buffers =
        gpubench::cuda::cnn_gpu_buffers(spec, batch.size, expected.precision);
    const bool mixed = expected.precision != TrainingPrecision::fp32;
    EXPECT_EQ(buffers.low_parameters, mixed ? 2 * spec.parameter_count() : 0U);
    EXPECT_EQ(buffers.loss_scale > 0, expected.precision == TrainingPrecision::fp16);
  }
}

// Every kernel and launch path of a mixed step, a few steps each on small batches: the case
// tools/gpu-check runs under compute-sanitizer (memcheck, racecheck, synccheck, initcheck).
TEST(CnnGpuMixed, ShortRunsOfEveryKernelForTheSanitizers) {
  CnnSpec spec;
  const std::vector<float> initial = gpubench::initial_cnn_parameters(spec);
  // Five images: conv1's bias sums span two blocks per channel (5 x 1024 > 4096 elements), so the
  // partial sums and the last-block finish run on the 2-byte gradients too.
  const Batch batch = random_cnn_batch(5, 35);
  for (TrainingPrecision precision : kMixedPrecisions) {
    CnnGpuTrainer trainer(spec, batch.size, batch.images.data(), batch.labels.data(),
                          initial.data(), precision);
    const std::vector<float> eager = cnn_trajectory(
        trainer, cnn_run_config(TrainingExecution::eager, 1, TrainingInput::pageable), 2);
    ASSERT_EQ(eager.size(), 2U);
    for (float loss : eager) EXPECT_TRUE(std::isfinite(loss)) << name_of(precision);
    EXPECT_EQ(cnn_trajectory(trainer,
                             cnn_run_config(TrainingExecution::graph, 1, TrainingInput::pinned), 2),
              eager)
        << name_of(precision);
    // The compute graph the benchmark times.
    trainer.enqueue_reset();
    trainer.capture_compute_graph(2).launch(trainer.stream());
    EXPECT_EQ(trainer.last_loss(), eager.back()) << name_of(precision);

    // The ReLU paths of the bias kernel and the pool's backward.
    spec.relu = true;
    CnnGpuTrainer relu(spec, batch.size, batch.images.data(), batch.labels.data(), initial.data(),
                       precision);
    EXPECT_TRUE(std::isfinite(relu.step_and_read_loss())) << name_of(precision);
    EXPECT_TRUE(std::isfinite(relu.step_and_read_loss())) << name_of(precision);
    spec.relu = false;
  }
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
