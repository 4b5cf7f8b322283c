#pragma once
// The tiny MLP trained on the GPU the way a framework does it, and the same step captured in a CUDA
// graph.
//
// One SGD step (network and parameter layout as in kernels/mlp/mlp_spec.hpp; L = layers) is 6L
// operations, each its own launch:
//   forward, per layer:   Z = A W (cuBLAS), Z += b and ReLU (kernel)                     2L
//   loss:                 softmax cross-entropy, dZ and the mean loss (kernel)            1
//   backward, per layer:  dW = A^T dZ (cuBLAS), db = column sums of dZ (kernel)           2L
//                         below the first layer: dA = dZ W^T (cuBLAS), ReLU mask (kernel) 2(L-1)
//   update:               parameters -= lr * gradient, all layers at once (kernel)        1
// Row-major products through column-major cuBLAS(Lt) as kernels/gemm/gemm_cuda.hpp explains; the
// backward products use transpose flags instead of copies (see mlp_cuda_trainer.cpp). Every step
// trains on the same batch; the loss stays on the device unless a readback copies it to the host.
// The products go through cuBLASLt with the algorithm chosen once per shape: its heuristic's
// first choice, except that a product with a short reduction (k <= 256) takes the best algorithm
// without split-K. cuBLAS's own choice for Iris's tiny products splits K and adds a reduction
// kernel to every product (10 kernels instead of 5 per step, measured with Nsight Compute on an
// H100), which costs more than the parallelism it buys when k is a few hundred at most.
//
// Mixed precision (bf16, fp16; kernels/mlp/mlp_spec.hpp, MlpPrecision): the products read 2-byte
// copies of the weights and activations (tensor cores, fp32 accumulation and fp32 output); the
// bias, loss, gradients and master weights stay fp32 (kernels/mlp/mlp_cuda_mixed_kernels.cuh). The
// casts add launches: 6L + 2 per step for bf16 (the batch's cast, the loss gradient's cast), and
// two more for fp16's loss scaling (the inf/NaN check, the scale update), all on the device, so
// eager and graph run the same way. Only the 2-byte activations and dZ are kept (plus one fp32
// buffer for a product's output), so a mixed-precision step also needs less device memory.
//
// Eager and graph runs, the input copies, the readbacks, the loss and the update are the GPU
// training core's (kernels/common/gpu_training_core.hpp). A graph capture also lets each layer's
// weight and bias gradients run beside the input-gradient chain (a second stream forked and joined
// inside the capture), which a graph replays as parallel branches: the same operations, a shorter
// critical path. Only for small steps (batch x widest
// layer <= 2^18), where each kernel leaves most of the GPU idle; larger kernels fill the GPU
// alone, and running two at once was measured slower (65536 x 64: 449 vs 381 us per step).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/gpu_training_core.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// The byte alignment cuBLASLt is told for the two operands of a layer's products that do not start
// an allocation: the weights, read from inside the parameter vector (fp32, or its 2-byte copy in
// mixed precision), and the weight gradient, written inside the fp32 gradient vector. Each is the
// largest power of two dividing its byte offset, at most 256 (cudaMalloc's alignment, which the
// heuristic assumes unless told otherwise). Odd widths leave a weight only 4-byte aligned in fp32
// (6-41-19-4's second layer starts 287 floats in, at byte 1148), 2-byte in bf16 and fp16; a kernel
// chosen for 16-byte vector loads would then read misaligned.
struct MlpOperandAlignment {
  std::uint32_t weights = 256;
  std::uint32_t weight_gradient = 256;
};
// Throws std::invalid_argument for an invalid spec or a layer outside 0..layer_count()-1.
MlpOperandAlignment mlp_operand_alignment(const MlpSpec& spec, int layer, MlpPrecision precision);

class MlpGpuTrainer final : public GpuTrainer {
 public:
  // Validates the network (std::invalid_argument naming the problem), allocates every device
  // buffer once, uploads the batch (batch x spec.inputs, row-major; labels in 0..classes-1) and the
  // initial parameters, and keeps host copies of the batch for the input-transfer variants.
  // `precision` is the products' format; fp16 scales the loss with `loss_scaling` (GradScaler's
  // defaults unless a test asks for others; validated as LossScaler does).
  MlpGpuTrainer(const MlpSpec& spec, int batch, const float* inputs, const int* labels,
                const float* initial_parameters, MlpPrecision precision = MlpPrecision::fp32,
                LossScalerSettings loss_scaling = {});

  // The device bytes the constructor allocates for this network, batch and precision, computed
  // from the shapes alone (before allocating anything): parameters, initial parameters and
  // gradient (fp32), the batch, activations and dZ, the 2-byte copies of a mixed-precision step,
  // the reduction scratch, and two 32 MiB cuBLASLt workspaces. The constructor checks that it
  // allocated exactly this.
  static std::size_t planned_device_bytes(const MlpSpec& spec, int batch, MlpPrecision precision);
  // The largest batch the trainer accepts, whatever the memory (its bias-gradient kernel's grid);
  // the constructor throws std::invalid_argument above it.
  static int max_batch();
  ~MlpGpuTrainer() override;
  MlpGpuTrainer(const MlpGpuTrainer&) = delete;
  MlpGpuTrainer& operator=(const MlpGpuTrainer&) = delete;
  MlpGpuTrainer(MlpGpuTrainer&&) = delete;
  MlpGpuTrainer& operator=(MlpGpuTrainer&&) = delete;

  const MlpSpec& spec() const { return spec_; }
  // Operations per step (a cuBLAS product counts as one launch): 6 x layers in fp32, 2 more for
  // bf16 and 4 more for fp16 (see above).
  int launches_per_step() const override;

 private:
  // The step names no operations to an observer; `concurrent` (only while capturing): weight and
  // bias gradients on the side stream.
  void enqueue_step(StepObserver* observer, bool concurrent) override;
  void enqueue_fp32_step(bool concurrent);
  void enqueue_mixed_step(bool concurrent);

  MlpSpec spec_;
  Stream side_stream_;    // gradient branches inside a graph capture
  Event gradient_ready_;  // fork: this layer's dZ is complete
  Event side_done_;       // join: every weight and bias gradient is complete
  struct Products;        // cuBLASLt handle and the planned products (mlp_cuda_trainer.cpp)
  std::unique_ptr<Products> products_;
  DeviceBuffer cublas_workspace_;       // for products on stream()
  DeviceBuffer side_cublas_workspace_;  // for products on side_stream_
  // fp32 step: each hidden layer's activation and dZ (below), batch x width.
  std::vector<DeviceBuffer> activations_;
  // dZ of each hidden layer, batch x width: one buffer per layer (not two reused in turn), so a
  // gradient branch still reading a layer's dZ never races with the chain writing a lower one.
  std::vector<DeviceBuffer> deltas_;
  // Bias-gradient scratch, shared by the layers: their bias gradients run one after the other on
  // one stream (the main one, or the side one inside a graph).
  DeviceBuffer bias_partials_;
  DeviceBuffer bias_counters_;
  // Mixed-precision step only: the 2-byte copies the products read (the batch, each hidden layer's
  // activation and dZ; the core keeps the parameters' and the logits' gradient's), and one fp32
  // buffer for a product's output (batch x widest hidden layer: every hidden product writes it,
  // then one kernel reads it into a 2-byte copy).
  DeviceBuffer low_inputs_;
  std::vector<DeviceBuffer> low_activations_;
  std::vector<DeviceBuffer> low_deltas_;
  DeviceBuffer product_output_;
};

}  // namespace gpubench::cuda
