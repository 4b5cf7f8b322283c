// The GPU MLP trainer's arithmetic, so it runs without a device: its memory model
// (MlpGpuTrainer::planned_device_bytes) against a count by hand up to INT_MAX, and never
// decreasing over the whole int range the largest-batch search evaluates it on; and the operand
// alignments its cuBLASLt products are planned with (mlp_operand_alignment). That the trainer
// allocates exactly the model (its constructor checks) and trains right at those alignments is
// checked on a GPU (test_mlp_gpu.cpp, test_mlp_gpu_mixed.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device_memory.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace {

using gpubench::MlpPrecision;
using gpubench::MlpSpec;
using gpubench::cuda::mlp_operand_alignment;
using gpubench::cuda::MlpGpuTrainer;
using Size = std::size_t;

constexpr MlpPrecision kPrecisions[] = {MlpPrecision::fp32, MlpPrecision::bf16, MlpPrecision::fp16};

MlpSpec net(int inputs, std::vector<int> hidden, int classes) {
  MlpSpec spec;
  spec.inputs = inputs;
  spec.hidden = std::move(hidden);
  spec.classes = classes;
  spec.validate();
  return spec;
}

Size model(const MlpSpec& spec, int batch, MlpPrecision precision) {
  return MlpGpuTrainer::planned_device_bytes(spec, batch, precision);
}

// The fp32 trainer's device bytes by hand, in 64 bits (its members): two 32 MiB cuBLASLt
// workspaces; parameters, initial parameters and gradient; the batch and its labels; the logits;
// per hidden layer its activation and dZ; the loss, one partial sum per 256 rows and the loss's
// counter; the bias-gradient partials (per 1024-row block of the widest layer, none for one block)
// and one counter per 32 columns of the widest layer.
Size expected_fp32_bytes(const MlpSpec& spec, int batch) {
  const auto rows = static_cast<Size>(batch);
  Size floats = 3 * spec.parameter_count() + rows * static_cast<Size>(spec.inputs + spec.classes);
  for (int width : spec.hidden) floats += 2 * rows * static_cast<Size>(width);
  floats += 1 + (rows + 255) / 256;
  Size widest_out = static_cast<Size>(spec.classes);
  for (int width : spec.hidden) widest_out = std::max(widest_out, static_cast<Size>(width));
  const Size row_blocks = (rows + 1023) / 1024;
  floats += row_blocks > 1 ? row_blocks * widest_out : 0;
  const Size counters = 1 + (widest_out + 31) / 32;  // the loss's, the bias gradients'
  return (Size{64} << 20) + floats * sizeof(float) + rows * sizeof(int) +
         counters * sizeof(unsigned);
}

TEST(MlpGpuMemory, Fp32ModelMatchesTheCountByHandUpToIntMax) {
  // 257 and 1025 rows: the loss and the bias gradients take a second block; 67107840: the
  // trainer's largest batch; beyond it the model alone, for the largest-batch search.
  for (const MlpSpec& spec : {net(4, {10}, 3), net(6, {41, 19}, 4), net(64, {512}, 10)}) {
    for (int batch : {1, 256, 257, 1024, 1025, 120000, MlpGpuTrainer::max_batch(), 1 << 30,
                      INT_MAX - 2000, INT_MAX - 1023, INT_MAX - 1000, INT_MAX - 255, INT_MAX}) {
      EXPECT_EQ(model(spec, batch, MlpPrecision::fp32), expected_fp32_bytes(spec, batch))
          << spec.describe() << " batch " << batch;
    }
  }
}

// The reported case: 240.70 GB at INT_MAX - 2000 rows and 240.59 GB at INT_MAX - 1000, when the
// block counts wrapped negative in int.
TEST(MlpGpuMemory, IrisModelGrowsBetweenIntMaxMinus2000AndIntMaxMinus1000) {
  const MlpSpec iris = net(4, {10}, 3);
  for (MlpPrecision precision : kPrecisions) {
    EXPECT_GT(model(iris, INT_MAX - 1000, precision), model(iris, INT_MAX - 2000, precision))
        << gpubench::mlp_precision_name(precision);
  }
}

// Batches to check the model at: every batch up to 5000, every batch within 1100 of each power of
// two (a block count steps there) and of the trainer's largest batch, and every batch of the top
// 20000 below INT_MAX (where int block counts wrapped), in increasing order.
std::vector<int> sampled_batches() {
  std::vector<long long> batches;
  const auto add_range = [&](long long first, long long last) {
    for (long long batch = std::max(1LL, first); batch <= std::min<long long>(last, INT_MAX);
         ++batch) {
      batches.push_back(batch);
    }
  };
  add_range(1, 5000);
  for (int power = 12; power <= 31; ++power) {
    add_range((1LL << power) - 1100, (1LL << power) + 1100);
  }
  add_range(MlpGpuTrainer::max_batch() - 1100LL, MlpGpuTrainer::max_batch() + 1100LL);
  add_range(INT_MAX - 20000LL, INT_MAX);
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  return {batches.begin(), batches.end()};
}

// largest_fitting_batch (benchmarks/largest_batch.cpp) bisects on the model over the whole int
// range, not only up to the trainer's largest batch: it is only right for a model that never
// decreases.
TEST(MlpGpuMemory, ModelNeverDecreasesUpToIntMax) {
  const std::vector<int> batches = sampled_batches();
  ASSERT_EQ(batches.back(), INT_MAX);
  for (const MlpSpec& spec : {net(4, {10}, 3), net(6, {41, 19}, 4), net(64, {512}, 10),
                              net(64, {4096, 4096}, 10), net(1, {1}, 2)}) {
    for (MlpPrecision precision : kPrecisions) {
      Size previous = model(spec, batches.front(), precision);
      for (std::size_t i = 1; i < batches.size(); ++i) {
        const Size bytes = model(spec, batches[i], precision);
        ASSERT_GE(bytes, previous)
            << spec.describe() << " " << gpubench::mlp_precision_name(precision) << ": batch "
            << batches[i] << " after " << batches[i - 1];
        previous = bytes;
      }
    }
  }
}

TEST(MlpGpuMemory, LargestFittingBatchOfTheModelReachesIntMax) {
  const MlpSpec iris = net(4, {10}, 3);
  for (MlpPrecision precision : kPrecisions) {
    const gpubench::BytesAtBatch bytes_at = [&](int batch) {
      return model(iris, batch, precision);
    };
    const std::string what = gpubench::mlp_precision_name(precision);
    EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(INT_MAX)), INT_MAX) << what;
    EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(INT_MAX - 1000)), INT_MAX - 1000)
        << what;
    EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(MlpGpuTrainer::max_batch())),
              MlpGpuTrainer::max_batch())
        << what;
  }
}

TEST(MlpGpuMemory, OperandAlignmentIsTheLargestPowerOfTwoOfTheOffsetUpTo256) {
  // 6-41-19-4: layer 1's weights start 6 x 41 + 41 = 287 floats in, layer 2's 287 + 41 x 19 + 19
  // = 1085: both odd, so fp32 weights are 4-byte aligned (bytes 1148 and 4340) and 2-byte copies
  // 2-byte aligned; the fp32 weight gradients are at the fp32 offsets in every precision.
  const MlpSpec odd = net(6, {41, 19}, 4);
  ASSERT_EQ(odd.weight_offset(1), 287U);
  ASSERT_EQ(odd.weight_offset(2), 1085U);
  for (MlpPrecision precision : kPrecisions) {
    const auto first = mlp_operand_alignment(odd, 0, precision);
    EXPECT_EQ(first.weights, 256U);  // offset 0: the allocation's own alignment
    EXPECT_EQ(first.weight_gradient, 256U);
    const std::uint32_t low = precision == MlpPrecision::fp32 ? 4 : 2;
    for (int layer : {1, 2}) {
      EXPECT_EQ(mlp_operand_alignment(odd, layer, precision).weights, low) << layer;
      EXPECT_EQ(mlp_operand_alignment(odd, layer, precision).weight_gradient, 4U) << layer;
    }
  }
  // Iris, 4-10-3: layer 1 starts 50 floats in, at byte 200 (8-byte aligned), 100 in bf16 (4).
  const MlpSpec iris = net(4, {10}, 3);
  EXPECT_EQ(mlp_operand_alignment(iris, 1, MlpPrecision::fp32).weights, 8U);
  EXPECT_EQ(mlp_operand_alignment(iris, 1, MlpPrecision::bf16).weights, 4U);
  EXPECT_EQ(mlp_operand_alignment(iris, 1, MlpPrecision::fp16).weight_gradient, 8U);
  // 64-512-10: layer 1 starts 64 x 512 + 512 = 33280 floats in, 133120 bytes = 2^10 x 130: the
  // alignment stops at 256.
  const MlpSpec wide = net(64, {512}, 10);
  EXPECT_EQ(mlp_operand_alignment(wide, 1, MlpPrecision::fp32).weights, 256U);
  EXPECT_EQ(mlp_operand_alignment(wide, 1, MlpPrecision::bf16).weights, 256U);
  // 8-24-2: layer 1 at 216 floats, 864 bytes = 32 x 27.
  EXPECT_EQ(mlp_operand_alignment(net(8, {24}, 2), 1, MlpPrecision::fp32).weights, 32U);
  EXPECT_EQ(mlp_operand_alignment(net(8, {24}, 2), 1, MlpPrecision::fp16).weights, 16U);

  EXPECT_THROW(mlp_operand_alignment(odd, 3, MlpPrecision::fp32), std::invalid_argument);
  EXPECT_THROW(mlp_operand_alignment(odd, -1, MlpPrecision::fp32), std::invalid_argument);
}

}  // namespace
