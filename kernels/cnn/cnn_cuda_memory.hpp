#pragma once
// The device memory of the GPU CNN trainer (kernels/cnn/cnn_cuda_trainer.hpp), from the network's
// shapes and the batch alone, before anything is allocated: the trainer allocates exactly these
// buffers (its device_bytes() is their sum), and a benchmark can ask what a batch would need, or
// which batch fits, without a device.

#include <array>
#include <cstddef>

#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

// cuBLAS's workspace, given explicitly so that captured products never allocate during capture
// (cuBLAS documentation, "CUDA Graphs Support"); 32 MiB is what it recommends for Hopper.
inline constexpr std::size_t kCnnCublasWorkspaceBytes = std::size_t{32} << 20;

// Bytes of each device buffer of CnnGpuTrainer (its members of the same names say what each
// holds). A buffer of 0 bytes is not allocated.
struct CnnGpuBuffers {
  std::size_t cublas_workspace = 0;
  // Parameters: the trained vector, the initial one (for resets) and the gradient.
  std::size_t parameters = 0;
  std::size_t initial_parameters = 0;
  std::size_t gradient = 0;
  // The batch: images (batch x 3 x 32 x 32 floats) and labels (one int each).
  std::size_t images = 0;
  std::size_t labels = 0;
  // Per convolution: its im2col matrix (in the step's precision: 4 or 2 bytes an element), its
  // pooled output and the pool's window positions.
  std::array<std::size_t, CnnSpec::kConvLayers> columns{};
  std::array<std::size_t, CnnSpec::kConvLayers> pooled{};
  std::array<std::size_t, CnnSpec::kConvLayers> window_positions{};
  // Shared by the layers: a convolution's channel-major product and its NCHW output (the largest
  // layer's), and the gradient of a pool's output (the largest).
  std::size_t channel_major = 0;
  std::size_t conv_output = 0;
  std::size_t pooled_gradient = 0;
  // fc1's output and its gradient, the logits (then their gradient).
  std::size_t hidden = 0;
  std::size_t hidden_gradient = 0;
  std::size_t logits = 0;
  // The loss, its per-block partial sums and the counter of blocks done.
  std::size_t loss = 0;
  std::size_t loss_partials = 0;
  std::size_t loss_counter = 0;
  // Bias-gradient sums: per-block partials and counters, shared by the layers (the largest).
  std::size_t sum_partials = 0;
  std::size_t sum_counters = 0;
  // Mixed precision only (bf16, fp16; 0 for fp32). The 2-byte operands of the products: the
  // weights' copy (the whole parameter vector), a convolution's output gradient (the largest
  // layer's; fp32 keeps it in channel_major), fc1's input, fc1's output and its gradient, and the
  // logits' gradient. The fp32 output of a convolution's input-gradient product (the largest of
  // conv2 and conv3), which fp32 writes over the columns. The device-side loss scale (fp16).
  std::size_t low_parameters = 0;
  std::size_t low_channel_major_gradient = 0;
  std::size_t low_features = 0;
  std::size_t low_hidden = 0;
  std::size_t low_hidden_gradient = 0;
  std::size_t low_logits_gradient = 0;
  std::size_t column_gradient = 0;
  std::size_t loss_scale = 0;

  // Every buffer's bytes added up.
  std::size_t total() const;
};

// The buffers for `spec` at `batch` images. Defined for every batch >= 1 up to INT_MAX, beyond
// what the trainer accepts (cnn_gpu_max_batch), in 64-bit sizes that do not overflow there: it is a
// model, for asking which batch would fit. Throws std::invalid_argument for an invalid spec or a
// batch below 1.
CnnGpuBuffers cnn_gpu_buffers(const CnnSpec& spec, int batch,
                              TrainingPrecision precision = TrainingPrecision::fp32);

// cnn_gpu_buffers(spec, batch, precision).total(): the device bytes CnnGpuTrainer(spec, batch, ...,
// precision) allocates. Non-decreasing in the batch.
std::size_t cnn_gpu_device_bytes(const CnnSpec& spec, int batch,
                                 TrainingPrecision precision = TrainingPrecision::fp32);

// Host memory the trainer keeps at `batch`: its pageable and its pinned copy of the images and
// labels (the input-transfer variants copy from them), and the pinned loss.
std::size_t cnn_gpu_host_bytes(int batch);

// The largest batch the trainer accepts for `spec` whatever the memory: cuBLAS takes int
// dimensions, so every im2col matrix (in_channels x 25 rows, batch x pixels columns) must hold at
// most INT_MAX elements. 10485 for the tutorial's network (conv2's matrix, 800 x 256 per image).
int cnn_gpu_max_batch(const CnnSpec& spec);

}  // namespace gpubench::cuda
