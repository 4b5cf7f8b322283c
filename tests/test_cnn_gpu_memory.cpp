// The GPU CNN trainer's memory model (kernels/cnn/cnn_cuda_memory.hpp) against a count by hand,
// without a device: each buffer of batch 1 from the network's shapes, the per-image formula for
// batches up to INT_MAX, the largest batch the trainer accepts, and the largest-batch search on
// the model. That the trainer allocates exactly the model is checked on a GPU (test_cnn_gpu.cpp).

#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device_memory.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"

namespace {

using gpubench::CnnSpec;
using gpubench::cuda::cnn_gpu_buffers;
using gpubench::cuda::cnn_gpu_device_bytes;
using gpubench::cuda::CnnGpuBuffers;
using Size = std::size_t;

constexpr Size kFloat = sizeof(float);

TEST(CnnGpuMemory, EveryBufferOfBatchOneByHand) {
  const CnnGpuBuffers buffers = cnn_gpu_buffers(CnnSpec{}, 1);
  EXPECT_EQ(buffers.cublas_workspace, Size{32} << 20);
  // conv 32x3x5x5 + 32, 32x32x5x5 + 32, 64x32x5x5 + 64; fc 64x1024 + 64, 10x64 + 10.
  const Size parameters = (2400 + 32) + (25600 + 32) + (51200 + 64) + (65536 + 64) + (640 + 10);
  EXPECT_EQ(parameters, 145578U);
  EXPECT_EQ(buffers.parameters, parameters * kFloat);
  EXPECT_EQ(buffers.initial_parameters, parameters * kFloat);
  EXPECT_EQ(buffers.gradient, parameters * kFloat);
  EXPECT_EQ(buffers.images, Size{3} * 32 * 32 * kFloat);
  EXPECT_EQ(buffers.labels, sizeof(int));
  // im2col: (in x 25) rows x (size x size) columns per image.
  EXPECT_EQ(buffers.columns[0], Size{75} * 1024 * kFloat);
  EXPECT_EQ(buffers.columns[1], Size{800} * 256 * kFloat);
  EXPECT_EQ(buffers.columns[2], Size{800} * 64 * kFloat);
  EXPECT_EQ(buffers.pooled[0], Size{32} * 16 * 16 * kFloat);
  EXPECT_EQ(buffers.pooled[1], Size{32} * 8 * 8 * kFloat);
  EXPECT_EQ(buffers.pooled[2], Size{64} * 4 * 4 * kFloat);
  EXPECT_EQ(buffers.window_positions[0], Size{32} * 16 * 16);  // one byte each
  EXPECT_EQ(buffers.window_positions[1], Size{32} * 8 * 8);
  EXPECT_EQ(buffers.window_positions[2], Size{64} * 4 * 4);
  // The largest convolution output, conv1's 32 x 32 x 32, twice (channel-major and NCHW).
  EXPECT_EQ(buffers.channel_major, Size{32} * 1024 * kFloat);
  EXPECT_EQ(buffers.conv_output, Size{32} * 1024 * kFloat);
  // The largest pool-output gradient: conv2's input, 32 x 16 x 16 (fc1's input is 1024).
  EXPECT_EQ(buffers.pooled_gradient, Size{32} * 256 * kFloat);
  EXPECT_EQ(buffers.hidden, 64 * kFloat);
  EXPECT_EQ(buffers.hidden_gradient, 64 * kFloat);
  EXPECT_EQ(buffers.logits, 10 * kFloat);
  EXPECT_EQ(buffers.loss, kFloat);
  EXPECT_EQ(buffers.loss_partials, kFloat);  // one block of rows
  EXPECT_EQ(buffers.loss_counter, sizeof(unsigned));
  // conv1's bias sums cover 1024 elements a channel: one 4096-element block, no partials.
  EXPECT_EQ(buffers.sum_partials, 0U);
  EXPECT_EQ(buffers.sum_counters, 64 * sizeof(unsigned));  // the most channels, conv3's and fc1's
  EXPECT_EQ(buffers.total(), 36996912U);
  EXPECT_EQ(cnn_gpu_device_bytes(CnnSpec{}, 1), 36996912U);
}

// Device bytes of the default network at any batch by hand (the trainer's members): 32 MiB of
// cuBLAS workspace, three parameter-sized vectors (parameters, initial, gradient), and per image:
// the image and label, the three im2col matrices, the shared channel-major and NCHW convolution
// outputs, the pooled activations and their window positions, the largest pooled gradient, fc1's
// output and its gradient, the logits; plus the loss and the bias-gradient scratch.
Size expected_device_bytes(int batch) {
  const auto b = static_cast<Size>(batch);
  constexpr Size kParameters = 145578;
  constexpr Size kImage = Size{3} * 32 * 32;
  constexpr Size kColumns = Size{75} * 1024 + Size{800} * 256 + Size{800} * 64;
  constexpr Size kConvOutput = Size{32} * 32 * 32;  // conv1's, the largest
  constexpr Size kPooled = Size{32} * 16 * 16 + Size{32} * 8 * 8 + Size{64} * 4 * 4;
  constexpr Size kPooledGradient = Size{32} * 16 * 16;  // conv2's input, the largest
  constexpr Size kLinear = 64 + 64 + 10;                // hidden, its gradient, logits
  Size floats = 3 * kParameters;
  floats += b * (kImage + kColumns + 2 * kConvOutput + kPooled + kPooledGradient + kLinear);
  floats += 1 + (b + 255) / 256;  // loss, loss partials
  // Bias-gradient partials: conv1's (32 channels of b x 1024 elements in 4096-element blocks)
  // outnumber every other layer's at every batch.
  const Size conv1_sum_blocks = (b * 1024 + 4095) / 4096;
  floats += conv1_sum_blocks > 1 ? 32 * conv1_sum_blocks : 0;
  Size bytes = floats * kFloat;
  bytes += b * (sizeof(int) + kPooled);               // labels, window positions (1 byte each)
  bytes += sizeof(unsigned) + 64 * sizeof(unsigned);  // loss and bias-sum counters
  return bytes + (Size{32} << 20);
}

TEST(CnnGpuMemory, MatchesTheCountByHandUpToIntMax) {
  // 5 images: conv1's bias sums span two blocks; 257: the loss two blocks of rows; 10485: the
  // trainer's largest; beyond: the model alone, for the largest-batch search.
  for (int batch : {1, 2, 4, 5, 64, 256, 257, 1024, 10485, 10486, 1 << 20, INT_MAX / 2, INT_MAX}) {
    EXPECT_EQ(cnn_gpu_device_bytes(CnnSpec{}, batch), expected_device_bytes(batch))
        << "batch " << batch;
  }
}

TEST(CnnGpuMemory, GrowsWithEveryImage) {
  const CnnSpec spec;
  Size previous = cnn_gpu_device_bytes(spec, 1);
  for (int batch = 2; batch <= 20000; ++batch) {
    const Size bytes = cnn_gpu_device_bytes(spec, batch);
    ASSERT_GT(bytes, previous) << "batch " << batch;
    previous = bytes;
  }
  EXPECT_GT(cnn_gpu_device_bytes(spec, INT_MAX), cnn_gpu_device_bytes(spec, INT_MAX - 1));
}

TEST(CnnGpuMemory, HostCopiesAndBadArguments) {
  // The trainer's pageable and pinned copies of the images and labels, and the pinned loss.
  EXPECT_EQ(gpubench::cuda::cnn_gpu_host_bytes(100), 2 * 100 * (Size{3072} * kFloat + 4) + 4);
  EXPECT_THROW(cnn_gpu_buffers(CnnSpec{}, 0), std::invalid_argument);
  CnnSpec broken;
  broken.linear[0].in_features = 1000;
  EXPECT_THROW(cnn_gpu_buffers(broken, 1), std::invalid_argument);
}

TEST(CnnGpuMemory, LargestBatchTheTrainerAccepts) {
  const CnnSpec spec;
  // conv2's im2col matrix, 800 x 256 elements per image, is the largest: INT_MAX / 204800.
  EXPECT_EQ(gpubench::cuda::cnn_gpu_max_batch(spec), 10485);
  // The trainer checks it first, before any CUDA call, so this runs without a device.
  const std::vector<float> images(CnnSpec::image_floats());
  const std::vector<int> labels(1);
  const std::vector<float> parameters(spec.parameter_count());
  try {
    gpubench::cuda::CnnGpuTrainer trainer(spec, 10486, images.data(), labels.data(),
                                          parameters.data());
    ADD_FAILURE() << "batch 10486 was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("at most 10485 images"), std::string::npos)
        << error.what();
  }
}

TEST(CnnGpuMemory, LargestFittingBatchOfTheModel) {
  const CnnSpec spec;
  const gpubench::BytesAtBatch bytes_at = [&](int batch) {
    return cnn_gpu_device_bytes(spec, batch);
  };
  EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(1000)), 1000);
  EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(1000) - 1), 999);
  EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, bytes_at(1) - 1), 0);
  // 16 GiB: compared with trying every batch up to one that surely does not fit.
  const Size budget = Size{16} << 30;
  int by_trial = 0;
  for (int batch = 1; batch <= 20000; ++batch) {
    if (bytes_at(batch) <= budget) by_trial = batch;
  }
  ASSERT_LT(by_trial, 20000);
  EXPECT_EQ(gpubench::largest_fitting_batch(bytes_at, budget), by_trial);
}

}  // namespace
