#pragma once
// What every GPU trainer does alike, whatever its layers: one stream; the parameters, their initial
// copy and the gradient; the batch on the device and its pageable and pinned host copies; the
// logits, the loss and the loss scale; the input copies, the loss readback and the reset before a
// run; eager runs and CUDA graphs (capture, upload, replay); the end of a step (the loss and the
// update, kernels/common/training_kernels.cuh and mixed_precision_kernels.cuh); and the ledger of
// the device bytes it allocates. A workload's trainer (kernels/<workload>/) derives from
// GpuTrainer and keeps only its own buffers and its step.
//
// Eager: a step's launches are issued from the host every step, one after the other on stream().
// Graph: `graph_steps` consecutive steps (with their input copies and the loss readback) are
// captured once and replayed, so a replay costs one launch however many operations it holds.
//
// Mixed precision (bf16, fp16; kernels/common/training_precision.hpp): the core keeps the 2-byte
// copy of the parameters the products read (refreshed by the update and by a reset), the 2-byte
// loss gradient (times the loss scale for fp16) and, for fp16, the loss scale on the device
// (GradScaler's order: kernels/common/mixed_precision_kernels.cuh).

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/loss_scaler.hpp"
#include "kernels/common/mixed_precision_kernels.cuh"
#include "kernels/common/step_observer.hpp"
#include "kernels/common/training_precision.hpp"

namespace gpubench::cuda {

// Where each step's batch comes from: already on the device (uploaded once), or copied from host
// memory before every step, like a data loader (pageable: an ordinary host array; pinned:
// page-locked).
enum class TrainingInput { resident, pageable, pinned };
const char* training_input_name(TrainingInput input);

enum class TrainingExecution { eager, graph };

struct TrainingRunConfig {
  TrainingExecution execution = TrainingExecution::eager;
  // Copy the loss to the host and wait for it (like loss.item()) after every `readback_every`-th
  // step; 0 = never.
  int readback_every = 0;
  TrainingInput input = TrainingInput::resident;
  // Graph only: steps captured per graph. With readbacks it is forced to readback_every, so the
  // readback ends each replay.
  int graph_steps = 1;
};

// What the core allocates for a trainer, from its workload's validated spec.
struct GpuTrainingShape {
  int batch = 0;                    // examples per step
  std::size_t example_floats = 0;   // fp32 inputs of one example (batch x this, row-major)
  int classes = 0;                  // logits per example; labels in 0..classes-1
  std::size_t parameter_count = 0;  // the spec's parameter vector, weights and biases
  float learning_rate = 0;
  TrainingPrecision precision = TrainingPrecision::fp32;
  // fp16's loss scaling (validated as LossScaler does); unused in fp32 and bf16.
  LossScalerSettings loss_scaling;
};

class GpuTrainer {
 public:
  virtual ~GpuTrainer();
  GpuTrainer(const GpuTrainer&) = delete;
  GpuTrainer& operator=(const GpuTrainer&) = delete;
  GpuTrainer(GpuTrainer&&) = delete;
  GpuTrainer& operator=(GpuTrainer&&) = delete;

  // Sets the mode for run(steps). For graphs it captures and instantiates them now, outside any
  // timing: one graph of graph_steps steps, and one for the remainder of `steps` if any, each
  // launched once (the upload) and the training that did undone. Throws std::invalid_argument,
  // changing nothing, for steps < 1, readback_every < 0, and a graph with pageable input (a copy
  // from pageable memory cannot be captured).
  void prepare(const TrainingRunConfig& config, int steps);

  // Enqueues a device-to-device copy of the initial parameters (and a new loss scale): every run
  // starts from them.
  void enqueue_reset();

  // Trains `steps` SGD steps in the prepared mode (steps must be what prepare() was given for
  // graphs). Returns once the last step is enqueued, or once its readback is on the host. Losses
  // read back are appended to `readback_losses` when it is non-null.
  void run(int steps, std::vector<float>* readback_losses);

  // One eager step on the resident batch followed by a synchronous readback of its loss
  // (validation and warm-up).
  float step_and_read_loss();

  // `steps` steps captured in a graph, for measuring the GPU time of a step with nothing else in
  // the way (no launch gaps; the caller times a replay): ordered as a graph run orders them when
  // `ordered_as` is graph, else one after the other as eager issues them. Each launch trains the
  // parameters; reset afterwards. Throws std::invalid_argument for steps < 1.
  CudaGraph capture_compute_graph(int steps,
                                  TrainingExecution ordered_as = TrainingExecution::eager);

  // Each operation of the following eager steps is reported to `observer` (nullptr: none) by a
  // trainer whose step names its operations, e.g. to record CUDA events on stream() around it.
  // Captured graphs never report (their operations are not issued one by one).
  void set_observer(StepObserver* observer) { observer_ = observer; }

  // Synchronous reads (they wait for the stream): the loss of the last step, the parameters, and
  // the gradient the last step computed (the spec's parameter layout). With fp16 the gradient is
  // the scaled one (times the loss scale of its step), as the update reads it.
  float last_loss();
  std::vector<float> parameters();
  std::vector<float> last_gradient();

  cudaStream_t stream() const { return stream_.get(); }
  int batch() const { return shape_.batch; }
  TrainingPrecision precision() const { return shape_.precision; }
  // Kernels and library calls of one eager step (a cuBLAS call counts as one).
  virtual int launches_per_step() const = 0;
  // fp16: where the loss scale stands after the steps run so far (a synchronous read); nothing for
  // fp32 and bf16, which train without loss scaling.
  std::optional<LossScaleState> loss_scale_state();
  // Host-to-device bytes of one step in the prepared mode: 0 for a resident batch.
  std::size_t input_bytes_per_step() const;
  // One batch on the device: its inputs and its labels.
  std::size_t batch_input_bytes() const { return inputs_.bytes(); }
  std::size_t batch_label_bytes() const { return labels_.bytes(); }
  // Every device byte the trainer allocated, the core's and its own (allocate()).
  std::size_t device_bytes() const { return device_bytes_; }
  int graph_steps() const { return graph_steps_; }

 protected:
  // Validates the loss scaling (std::invalid_argument naming the problem), allocates the core's
  // device buffers, uploads the batch (`inputs`: batch x example_floats; `labels`: one each, valid
  // for the workload) and the initial parameters, keeps host copies of the batch for the
  // input-transfer variants, and resets. The derived trainer then allocates its own buffers.
  GpuTrainer(const GpuTrainingShape& shape, const float* inputs, const int* labels,
             const float* initial_parameters);

  // Enqueues one step on stream(): forward, enqueue_loss(), backward, enqueue_update(). `observer`
  // (nullptr: none) is told each operation; `concurrent` is true only inside a graph capture of a
  // trainer that allow_concurrent_graphs(): the step may fork side streams from stream() and must
  // join them before it returns.
  virtual void enqueue_step(StepObserver* observer, bool concurrent) = 0;

  // A device buffer of `bytes` (none for 0), counted in device_bytes().
  DeviceBuffer allocate(std::size_t bytes);
  // Graph runs and graph-ordered compute graphs capture steps with `concurrent` set.
  void allow_concurrent_graphs(bool allowed) { concurrent_graphs_ = allowed; }
  // A derived trainer's destructor calls this first: its buffers are destroyed before the core's
  // destructor runs, and queued work may still use them (run() returns before the GPU is done).
  void wait_for_queued_work() noexcept;

  // The end of every step, on stream(). The loss: softmax cross-entropy of the logits with the
  // labels; the logits become their gradient, and in a mixed step its 2-byte copy (scaled for
  // fp16), logits_gradient(). The update: SGD of the parameters with the gradient (mixed: the
  // unscaled one, skipped when it is not finite, and the 2-byte copy refreshed), then fp16's scale.
  void enqueue_loss();
  void enqueue_update();

  bool mixed() const { return shape_.precision != TrainingPrecision::fp32; }
  float* device_parameters() { return parameters_.as<float>(); }
  float* device_gradient() { return gradient_.as<float>(); }
  // The weights a product reads from offset `offset` of the parameter layout: the fp32 parameters,
  // or in a mixed step their 2-byte copy at the same offset.
  const void* weights_operand(std::size_t offset);
  const float* device_inputs() { return inputs_.as<float>(); }
  const int* device_labels() { return labels_.as<int>(); }
  // batch x classes, fp32: the last layer's output, and after enqueue_loss() its gradient.
  float* logits() { return logits_.as<float>(); }
  // The logits' gradient as the products read it: logits() in fp32, the 2-byte copy when mixed.
  const void* logits_gradient();
  // fp16's loss scale on the device; nullptr for fp32 and bf16.
  DeviceLossScale* loss_scale();

 private:
  void enqueue_input_copy(TrainingInput input);
  void enqueue_readback();
  float read_loss();
  CudaGraph capture(int steps, TrainingInput input, bool readback_at_end, bool concurrent);

  GpuTrainingShape shape_;
  std::size_t device_bytes_ = 0;
  StepObserver* observer_ = nullptr;
  bool concurrent_graphs_ = false;
  Stream stream_;
  DeviceBuffer parameters_;
  DeviceBuffer initial_parameters_;
  DeviceBuffer gradient_;
  DeviceBuffer inputs_;
  DeviceBuffer labels_;
  DeviceBuffer logits_;
  DeviceBuffer loss_;
  DeviceBuffer loss_partials_;
  DeviceBuffer loss_counter_;
  // Mixed precision only (0 bytes, no allocation, otherwise): the parameters' 2-byte copy, the
  // logits' 2-byte gradient, and the loss scale (fp16).
  DeviceBuffer low_parameters_;
  DeviceBuffer low_logits_gradient_;
  DeviceBuffer loss_scale_;
  HostBuffer pageable_inputs_;
  HostBuffer pageable_labels_;
  HostBuffer pinned_inputs_;
  HostBuffer pinned_labels_;
  PinnedHostBuffer loss_host_;
  TrainingRunConfig config_;
  int prepared_steps_ = 0;
  int graph_steps_ = 0;
  CudaGraph graph_;            // graph_steps_ steps, when prepared_steps_ >= graph_steps_
  CudaGraph remainder_graph_;  // prepared_steps_ % graph_steps_ steps, when that is not 0
};

}  // namespace gpubench::cuda
