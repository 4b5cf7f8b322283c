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
// Eager: the 6L launches are issued from the host every step, one after the other on one stream.
// Graph: `graph_steps` consecutive steps (with their input copies and the loss readback) are
// captured once and replayed, so a replay costs one launch however many operations it holds; the
// capture also lets each layer's weight and bias gradients run beside the input-gradient chain
// (a second stream forked and joined inside the capture), which a graph replays as parallel
// branches: the same operations, a shorter critical path. Only for small steps (batch x widest
// layer <= 2^18), where each kernel leaves most of the GPU idle; larger kernels fill the GPU
// alone, and running two at once was measured slower (65536 x 64: 449 vs 381 us per step).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench::cuda {

// Where each step's batch comes from: already on the device (uploaded once), or copied from
// host memory before every step, like a data loader (pageable: an ordinary host array; pinned:
// page-locked).
enum class MlpInput { resident, pageable, pinned };
const char* mlp_input_name(MlpInput input);

enum class MlpExecution { eager, graph };

struct MlpRunConfig {
  MlpExecution execution = MlpExecution::eager;
  // Copy the loss to the host and wait for it (like loss.item()) after every `readback_every`-th
  // step; 0 = never.
  int readback_every = 0;
  MlpInput input = MlpInput::resident;
  // Graph only: steps captured per graph. With readbacks it is forced to readback_every, so the
  // readback ends each replay.
  int graph_steps = 1;
};

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

class MlpGpuTrainer {
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
  ~MlpGpuTrainer();
  MlpGpuTrainer(const MlpGpuTrainer&) = delete;
  MlpGpuTrainer& operator=(const MlpGpuTrainer&) = delete;
  MlpGpuTrainer(MlpGpuTrainer&&) = delete;
  MlpGpuTrainer& operator=(MlpGpuTrainer&&) = delete;

  // Sets the mode for run(steps). For graphs it captures and instantiates them now, outside any
  // timing: one graph of graph_steps steps, and one for the remainder of `steps` if any.
  void prepare(const MlpRunConfig& config, int steps);

  // Enqueues a device-to-device copy of the initial parameters: every run starts from them.
  void enqueue_reset();

  // Trains `steps` SGD steps in the prepared mode (steps must be what prepare() was given for
  // graphs). Returns once the last step is enqueued, or once its readback is on the host. Losses
  // read back are appended to `readback_losses` when it is non-null.
  void run(int steps, std::vector<float>* readback_losses);

  // One eager step followed by a synchronous readback of its loss (validation and warm-up).
  float step_and_read_loss();

  // `steps` steps captured in a graph, for measuring the GPU time of a step with nothing else in
  // the way (no launch gaps): ordered as the graph variant runs them when `as_graph`, else one
  // after the other as eager issues them. Each launch trains the parameters; reset afterwards.
  CudaGraph capture_compute_graph(int steps, bool as_graph);

  // Synchronous reads (they wait for the stream): the loss of the last step, the parameters.
  float last_loss();
  std::vector<float> parameters();

  cudaStream_t stream() const { return stream_.get(); }
  const MlpSpec& spec() const { return spec_; }
  int batch() const { return batch_; }
  // Operations per step (a cuBLAS product counts as one launch): 6 x layers in fp32, 2 more for
  // bf16 and 4 more for fp16 (see above).
  int launches_per_step() const;
  MlpPrecision precision() const { return precision_; }
  // fp16: where the loss scale stands after the steps run so far (a synchronous read); nothing for
  // fp32 and bf16, which train without loss scaling.
  std::optional<LossScaleState> loss_scale_state();
  std::size_t input_bytes_per_step() const;
  std::size_t device_bytes() const { return device_bytes_; }
  int graph_steps() const { return graph_steps_; }

 private:
  // `concurrent` (only while capturing): weight and bias gradients on the side stream.
  void enqueue_step(bool concurrent);
  void enqueue_fp32_step(bool concurrent);
  void enqueue_mixed_step(bool concurrent);
  void enqueue_input_copy(MlpInput input);
  void enqueue_readback();
  CudaGraph capture(int steps, MlpInput input, bool readback_at_end, bool concurrent);
  DeviceBuffer allocate(std::size_t bytes);

  MlpSpec spec_;
  int batch_;
  MlpPrecision precision_;
  LossScalerSettings loss_scaling_;
  std::size_t device_bytes_ = 0;
  Stream stream_;
  Stream side_stream_;    // gradient branches inside a graph capture
  Event gradient_ready_;  // fork: this layer's dZ is complete
  Event side_done_;       // join: every weight and bias gradient is complete
  struct Products;        // cuBLASLt handle and the planned products (mlp_cuda_trainer.cpp)
  std::unique_ptr<Products> products_;
  DeviceBuffer cublas_workspace_;       // for products on stream_
  DeviceBuffer side_cublas_workspace_;  // for products on side_stream_
  DeviceBuffer parameters_;
  DeviceBuffer initial_parameters_;
  DeviceBuffer gradient_;
  DeviceBuffer inputs_;
  DeviceBuffer labels_;
  // fp32 step: each hidden layer's activation and dZ (below), batch x width.
  std::vector<DeviceBuffer> activations_;
  DeviceBuffer logits_;  // batch x classes, becomes dZ of the last layer
  // dZ of each hidden layer, batch x width: one buffer per layer (not two reused in turn), so a
  // gradient branch still reading a layer's dZ never races with the chain writing a lower one.
  std::vector<DeviceBuffer> deltas_;
  DeviceBuffer loss_;
  DeviceBuffer loss_partials_;
  DeviceBuffer loss_counter_;
  // Bias-gradient scratch, shared by the layers: their bias gradients run one after the other on
  // one stream (the main one, or the side one inside a graph).
  DeviceBuffer bias_partials_;
  DeviceBuffer bias_counters_;
  // Mixed-precision step only: the 2-byte copies the products read (parameters, batch, each hidden
  // layer's activation and dZ, the last layer's dZ), one fp32 buffer for a product's output
  // (batch x widest hidden layer: every hidden product writes it, then one kernel reads it into a
  // 2-byte copy), and the loss scale (fp16).
  DeviceBuffer low_parameters_;
  DeviceBuffer low_inputs_;
  std::vector<DeviceBuffer> low_activations_;
  std::vector<DeviceBuffer> low_deltas_;
  DeviceBuffer low_logit_delta_;
  DeviceBuffer product_output_;
  DeviceBuffer loss_scale_;
  bool concurrent_gradients_ = false;  // graphs: gradient branches beside the chain
  HostBuffer pageable_inputs_;
  HostBuffer pageable_labels_;
  HostBuffer pinned_inputs_;
  HostBuffer pinned_labels_;
  PinnedHostBuffer loss_host_;
  MlpRunConfig config_;
  int prepared_steps_ = 0;
  int graph_steps_ = 0;
  CudaGraph graph_;            // graph_steps_ steps, when prepared_steps_ >= graph_steps_
  CudaGraph remainder_graph_;  // prepared_steps_ % graph_steps_ steps, when that is not 0
};

}  // namespace gpubench::cuda
