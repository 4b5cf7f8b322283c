#pragma once
// The CIFAR-10 tutorial CNN (kernels/cnn/cnn_spec.hpp) trained on the GPU the way a framework runs
// it: every operation its own launch on one stream, the convolutions as im2col + one cuBLAS
// product over the whole batch (layouts in kernels/cnn/cnn_cuda_kernels.cuh), and the same step
// captured in a CUDA graph.
//
// One SGD step, with the operation names a StepObserver sees (the CPU trainer's, cnn_cpu.hpp) and
// the launches each makes (a cuBLAS product counts as one):
//   forward, l = 1..3   "convL.im2col" 1, "convL.gemm" 1, "convL.bias" 1 (+ ReLU, into NCHW),
//                       "poolL.forward" 1                                              3 x 4 = 12
//   "fc1.forward", "fc2.forward": product, bias                                        2 x 2 =  4
//   "loss": softmax cross-entropy, dlogits and the mean loss                                    1
//   "fc2.backward", "fc1.backward": weight product, bias sums, input product           2 x 3 =  6
//   backward, l = 3..1  "poolL.backward" 1 (+ the ReLU mask),
//                       "convL.weight_gradient": product, bias sums 2                  3 x 3 =  9
//                       "convL.input_gradient" (not conv1): product, col2im 2          2 x 2 =  4
//   "update": parameters -= lr * gradient, every layer at once                                  1
//   total                                                                                      37
// Every step trains on the same batch; the loss stays on the device unless a readback copies it
// to the host. The products run in plain fp32 (CUBLAS_COMPUTE_32F, no TF32) so the losses can be
// compared with the CPU's within fp32 rounding.
//
// Mixed precision (bf16, fp16; kernels/common/training_precision.hpp), as every mixed-precision
// trainer does it (kernels/common/mixed_precision_kernels.cuh): every product reads 2-byte operands
// (the im2col columns, the linear layers' inputs, the gradients, and a 2-byte copy of the weights)
// with fp32 accumulation and fp32 output, through the same cublasGemmEx calls (cuBLAS picks
// tensor-core kernels from the pointers it is given, so a weight copy inside the parameter vector
// needs no alignment hint); bias, pooling, loss, gradients, master weights and the update stay
// fp32. im2col and the pool's backward write the 2-byte operands directly and the bias gradients
// sum them, so the casts add only 4 launches: fc1's input and output ("fc1.forward"), the loss
// gradient, multiplied by the loss scale for fp16 ("loss"), and fc2's input gradient
// ("fc2.backward"). fp16 adds 2 more to "update": the inf/NaN check of the unscaled gradient and
// the scale update, both on the device (kernels/common/mixed_precision_kernels.cuh), so a skipped
// step never waits for the host and eager and graph run the same way. 37 launches per step in fp32,
// 41 in bf16, 43 in fp16.
//
// Eager and graph runs, the input copies, the readbacks, the loss ("loss") and the update
// ("update") are the GPU training core's (kernels/common/gpu_training_core.hpp); every operation
// runs on its one stream.

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/gpu_training_core.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/step_observer.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

class CnnGpuTrainer final : public GpuTrainer {
 public:
  // Validates the network and the batch (std::invalid_argument naming the problem: a spec that
  // does not chain, batch < 1, a label outside 0..9, a batch above cnn_gpu_max_batch(spec)),
  // allocates every device buffer once, as cnn_gpu_buffers(spec, batch) sizes them
  // (device_bytes() == cnn_gpu_device_bytes(spec, batch)), uploads the batch (batch x 3
  // x 32 x 32 floats, NCHW; one label per image) and the initial parameters (spec layout), and
  // keeps host copies of the batch for the input-transfer variants. Runs one warm-up step and
  // resets the parameters, so the trainer starts at the initial parameters with their loss and
  // gradient in place (last_loss(), last_gradient() before any step). `precision` is the products'
  // format (the buffers are cnn_gpu_buffers(spec, batch, precision)); fp16 scales the loss with
  // `loss_scaling` (GradScaler's defaults unless a test asks for others; validated as LossScaler
  // does).
  CnnGpuTrainer(const CnnSpec& spec, int batch, const float* images, const int* labels,
                const float* initial_parameters,
                TrainingPrecision precision = TrainingPrecision::fp32,
                LossScalerSettings loss_scaling = {});
  ~CnnGpuTrainer() override;
  CnnGpuTrainer(const CnnGpuTrainer&) = delete;
  CnnGpuTrainer& operator=(const CnnGpuTrainer&) = delete;
  CnnGpuTrainer(CnnGpuTrainer&&) = delete;
  CnnGpuTrainer& operator=(CnnGpuTrainer&&) = delete;

  const CnnSpec& spec() const { return spec_; }
  // Kernels and cuBLAS calls of one eager step (a cuBLAS call counts as one): 37 in fp32, 41 in
  // bf16, 43 in fp16 (see above).
  int launches_per_step() const override;

 private:
  // Every operation is named to `observer`; one stream, so `concurrent` changes nothing.
  void enqueue_step(StepObserver* observer, bool concurrent) override;

  CnnSpec spec_;
  CnnGpuBuffers buffers_;  // the size of every buffer below and of the core's
  // Declared before the handle that uses it, so the handle is destroyed first.
  DeviceBuffer cublas_workspace_;
  struct Products;  // cuBLAS handle and the products' shapes (cnn_cuda_trainer.cpp)
  std::unique_ptr<Products> products_;
  // Per convolution: its im2col matrix (K x batch*pixels, in the step's precision), kept from the
  // forward pass for the weight gradient; in fp32 then overwritten by the input gradient's columns
  // (column_gradient_ holds those in a mixed step, whose columns are 2-byte).
  std::array<DeviceBuffer, CnnSpec::kConvLayers> columns_;
  // A convolution's product output (forward) or gradient (backward), channel-major; shared by the
  // layers, each uses it only between two of its own operations.
  DeviceBuffer channel_major_;
  // A convolution's output in NCHW, read only by its pool: shared by the layers.
  DeviceBuffer conv_output_;
  // Per pool: the pooled activations (the next layer's input, and the ReLU mask's source) and the
  // position of each window's maximum.
  std::array<DeviceBuffer, CnnSpec::kConvLayers> pooled_;
  std::array<DeviceBuffer, CnnSpec::kConvLayers> window_positions_;
  // The gradient with respect to a pool's output (NCHW): fc1's input gradient for pool3, col2im's
  // result for pool2 and pool1. Shared: each is consumed by its pool's backward before the next
  // is written.
  DeviceBuffer pooled_gradient_;
  DeviceBuffer hidden_;           // fc1's output, batch x 64
  DeviceBuffer hidden_gradient_;  // fc2's input gradient, batch x 64
  // Bias-gradient scratch, shared by the layers (their sums run one after the other).
  DeviceBuffer sum_partials_;
  DeviceBuffer sum_counters_;
  // Mixed-precision step only (CnnGpuBuffers says what each holds).
  DeviceBuffer low_channel_major_gradient_;
  DeviceBuffer low_features_;
  DeviceBuffer low_hidden_;
  DeviceBuffer low_hidden_gradient_;
  DeviceBuffer column_gradient_;
};

}  // namespace gpubench::cuda
