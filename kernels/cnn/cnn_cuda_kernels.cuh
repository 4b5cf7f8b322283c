#pragma once
// The device operations of one CNN training step (network and parameter layout in
// kernels/cnn/cnn_spec.hpp), everything between the cuBLAS products, one launch each.
//
// Layouts. Activations and their gradients between layers are NCHW (batch x channels x size x
// size), as the spec's images and torch.flatten order are. A convolution's im2col matrix is
// batched over the whole batch, row-major K x (batch * pixels), K = in_channels * 25, row
// (channel, ky, kx), column (image, y, x):
//   columns[(c * 25 + ky * 5 + kx)][(n * size + y) * size + x] = input[n][c][y + ky - 2][x + kx -
//   2]
// (0 outside the image), so each layer's forward, weight-gradient and input-gradient products are
// one cuBLAS call each over the whole batch. Their output, the convolution's result and its
// gradient, is "channel-major": row-major out_channels x (batch * pixels), i.e. CNHW. The bias
// kernel turns the forward result into NCHW on the way (it reads and writes every element anyway),
// and the pool's backward writes the gradient in channel-major order directly, so no separate
// transpose is ever launched. Per-image strided-batched products would give NCHW without that, but
// the weight gradient is a sum over the images, which a strided-batched call cannot form: it would
// need batch partial gradients and a reduction, or batch calls.
//
// Every launcher enqueues on `stream`, returns the launch's status (cudaGetLastError(): a bad
// configuration shows here, an error inside the kernel only at the next synchronisation) for the
// caller to check, and is safe to call during stream capture. Element counts are 64-bit inside the
// kernels; the callers keep batch * pixels (a column count) within int. Every sum is formed in a
// fixed order, so a run repeats bit for bit.
//
// Mixed precision (kernels/common/training_precision.hpp): the buffers a product reads (the im2col
// columns, a convolution's output gradient) are stored in the step's precision, `precision` below
// (fp32: float; bf16, fp16: the 2-byte type), so im2col and the pool's backward write the products'
// 2-byte operands directly and the bias gradients sum them (in fp32), as other trainers' do.
// Everything else stays fp32.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda::cnn {

// columns (K x batch*size^2, row-major, K = channels * 25, in `precision`) = im2col of `images`
// (batch x channels x size x size) for a 5x5 kernel with padding 2 and stride 1 (output size =
// input size).
[[nodiscard]] cudaError_t launch_im2col(const float* images, int batch, int channels, int size,
                                        void* columns, TrainingPrecision precision,
                                        cudaStream_t stream);

// The adjoint of launch_im2col: images_gradient (batch x channels x size x size, overwritten) =
// for every input pixel, the sum of the column entries im2col copied it to. A gather (each thread
// sums the up to 25 entries of one pixel in (ky, kx) order), so no atomics and a fixed order.
[[nodiscard]] cudaError_t launch_col2im(const float* columns_gradient, int batch, int channels,
                                        int size, float* images_gradient, cudaStream_t stream);

// nchw[n][c][p] = channel_major[c][n * pixels + p] + bias[c], then max(., 0) if `relu` (a NaN
// stays NaN, as in torch.relu). channel_major is channels x (batch * pixels).
[[nodiscard]] cudaError_t launch_conv_bias_to_nchw(const float* channel_major, const float* bias,
                                                   int batch, int channels, int pixels, bool relu,
                                                   float* nchw, cudaStream_t stream);

// 2x2 max-pool with stride 2 of `input` (batch x channels x size x size, size even) into
// `pooled` (batch x channels x size/2 x size/2), and for each pooled value the position of its
// maximum in the window (0..3 = (0,0), (0,1), (1,0), (1,1)). The first maximum in that order
// wins a tie, a NaN wins over numbers (PyTorch's rule).
[[nodiscard]] cudaError_t launch_max_pool_forward(const float* input, int batch, int channels,
                                                  int size, float* pooled,
                                                  std::uint8_t* window_positions,
                                                  cudaStream_t stream);

// The pool's backward, in the layout the next products need: channel_major_gradient (channels x
// batch*size^2, in `precision`, overwritten) holds pooled_gradient at each window's maximum and 0
// elsewhere. With `relu`, a window whose pooled value is not positive passes nothing: the ReLU
// before the pool zeroed that maximum, so its backward does too (pooled is read only then).
[[nodiscard]] cudaError_t launch_max_pool_backward(
    const float* pooled_gradient, const std::uint8_t* window_positions, const float* pooled,
    bool relu, int batch, int channels, int size, void* channel_major_gradient,
    TrainingPrecision precision, cudaStream_t stream);

// z (rows x cols, row-major) += bias (broadcast over the rows): a linear layer's bias.
[[nodiscard]] cudaError_t launch_linear_bias(float* z, const float* bias, int rows, int cols,
                                             cudaStream_t stream);

// sums[c] = sum over e < count of values[c * channel_stride + e * element_stride] (values in
// `precision`, summed in fp32), for c <
// channels: the bias gradients, of a convolution (channel-major gradient: channel_stride = count
// = batch * pixels, element_stride = 1) or of a linear layer (batch x features gradient:
// channel_stride = 1, element_stride = features, count = batch). Blocks of 4096 elements of one
// channel sum in parallel; with more than one per channel, each leaves its sum in `partials`
// (channel_sum_partials(channels, count) floats) and the last block of the channel to finish adds
// them in block order, counted in `counters` (channel_sum_counters(channels) unsigneds, zero
// before the first launch, left at zero). channels <= 65535 (a grid dimension).
[[nodiscard]] cudaError_t launch_channel_sums(const void* values, TrainingPrecision precision,
                                              int channels, std::size_t channel_stride, int count,
                                              std::size_t element_stride, float* sums,
                                              float* partials, unsigned* counters,
                                              cudaStream_t stream);
std::size_t channel_sum_partials(int channels, std::size_t count);
std::size_t channel_sum_counters(int channels);

}  // namespace gpubench::cuda::cnn
