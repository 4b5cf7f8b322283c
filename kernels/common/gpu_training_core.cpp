#include "kernels/common/gpu_training_core.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/training_kernels.cuh"

namespace gpubench::cuda {

namespace {

// Bytes of one element of a mixed-precision step's 2-byte copies (bf16 and fp16 alike).
constexpr std::size_t kLowBytes = 2;

std::size_t floats(std::size_t count) { return count * sizeof(float); }

std::size_t input_floats(const GpuTrainingShape& shape) {
  return static_cast<std::size_t>(shape.batch) * shape.example_floats;
}

std::size_t label_bytes(const GpuTrainingShape& shape) {
  return static_cast<std::size_t>(shape.batch) * sizeof(int);
}

const GpuTrainingShape& validated(const GpuTrainingShape& shape) {
  validate(shape.loss_scaling);
  return shape;
}

}  // namespace

const char* training_input_name(TrainingInput input) {
  switch (input) {
    case TrainingInput::resident:
      return "resident";
    case TrainingInput::pageable:
      return "pageable";
    case TrainingInput::pinned:
      return "pinned";
  }
  return "unknown";
}

GpuTrainer::GpuTrainer(const GpuTrainingShape& shape, const float* inputs, const int* labels,
                       const float* initial_parameters)
    : shape_(validated(shape)),
      pageable_inputs_(floats(input_floats(shape)), HostMemory::pageable),
      pageable_labels_(label_bytes(shape), HostMemory::pageable),
      pinned_inputs_(floats(input_floats(shape)), HostMemory::pinned),
      pinned_labels_(label_bytes(shape), HostMemory::pinned),
      loss_host_(sizeof(float)) {
  const auto rows = static_cast<std::size_t>(shape_.batch);
  const std::size_t parameter_bytes = floats(shape_.parameter_count);
  parameters_ = allocate(parameter_bytes);
  initial_parameters_ = allocate(parameter_bytes);
  gradient_ = allocate(parameter_bytes);
  inputs_ = allocate(pageable_inputs_.bytes());
  labels_ = allocate(pageable_labels_.bytes());
  logits_ = allocate(floats(rows * shape_.classes));
  loss_ = allocate(sizeof(float));
  loss_partials_ = allocate(floats(softmax_cross_entropy_blocks(shape_.batch)));
  loss_counter_ = allocate(sizeof(unsigned));
  if (mixed()) {
    low_parameters_ = allocate(kLowBytes * shape_.parameter_count);
    low_logits_gradient_ = allocate(kLowBytes * rows * shape_.classes);
    if (shape_.precision == TrainingPrecision::fp16) {
      loss_scale_ = allocate(sizeof(DeviceLossScale));
    }
  }

  std::memcpy(pageable_inputs_.data(), inputs, pageable_inputs_.bytes());
  std::memcpy(pinned_inputs_.data(), inputs, pinned_inputs_.bytes());
  std::memcpy(pageable_labels_.data(), labels, pageable_labels_.bytes());
  std::memcpy(pinned_labels_.data(), labels, pinned_labels_.bytes());
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(loss_counter_.data(), 0, loss_counter_.bytes(), stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(inputs_.data(), pinned_inputs_.data(), inputs_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(labels_.data(), pinned_labels_.data(), labels_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(initial_parameters_.data(), initial_parameters,
                                      parameter_bytes, cudaMemcpyHostToDevice, stream));
  enqueue_reset();
  // The caller's initial parameters may go once the constructor returns.
  stream_.synchronize();
}

GpuTrainer::~GpuTrainer() { wait_for_queued_work(); }

void GpuTrainer::wait_for_queued_work() noexcept {
  // run() returns with work still queued; let it finish before the buffers, graphs and streams it
  // uses go. A failure here has nowhere to go (a destructor does not throw) and the context is
  // broken anyway.
  static_cast<void>(cudaStreamSynchronize(stream_.get()));
}

DeviceBuffer GpuTrainer::allocate(std::size_t bytes) {
  device_bytes_ += bytes;
  return DeviceBuffer(bytes);
}

std::size_t GpuTrainer::input_bytes_per_step() const {
  if (config_.input == TrainingInput::resident) return 0;
  return batch_input_bytes() + batch_label_bytes();
}

const void* GpuTrainer::weights_operand(std::size_t offset) {
  if (mixed()) return low_parameters_.as<char>() + kLowBytes * offset;
  return parameters_.as<float>() + offset;
}

const void* GpuTrainer::logits_gradient() {
  return mixed() ? low_logits_gradient_.data() : logits_.data();
}

DeviceLossScale* GpuTrainer::loss_scale() { return loss_scale_.as<DeviceLossScale>(); }

void GpuTrainer::enqueue_reset() {
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(parameters_.data(), initial_parameters_.data(),
                                      parameters_.bytes(), cudaMemcpyDeviceToDevice, stream));
  if (!mixed()) return;
  GPUBENCH_CUDA_CHECK(launch_convert(low_parameters_.data(), parameters_.as<float>(),
                                     shape_.parameter_count, shape_.precision, stream));
  if (shape_.precision == TrainingPrecision::fp16) {
    GPUBENCH_CUDA_CHECK(
        launch_loss_scale_reset(loss_scale(), shape_.loss_scaling.initial_scale, stream));
  }
}

void GpuTrainer::enqueue_loss() {
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(launch_softmax_cross_entropy(
      logits(), labels_.as<int>(), shape_.batch, shape_.classes, loss_.as<float>(),
      loss_partials_.as<float>(), loss_counter_.as<unsigned>(), stream));
  // The loss gradient times the loss scale (fp16), as every gradient below it then is.
  if (mixed()) {
    GPUBENCH_CUDA_CHECK(
        launch_scale_convert(low_logits_gradient_.data(), logits(),
                             static_cast<std::size_t>(shape_.batch) * shape_.classes, loss_scale(),
                             shape_.precision, stream));
  }
}

void GpuTrainer::enqueue_update() {
  const cudaStream_t stream = stream_.get();
  const std::size_t count = shape_.parameter_count;
  float* parameters = device_parameters();
  const float* gradient = device_gradient();
  if (!mixed()) {
    GPUBENCH_CUDA_CHECK(
        launch_sgd_update(parameters, gradient, count, shape_.learning_rate, stream));
    return;
  }
  // GradScaler's order, on the device: check the unscaled gradient, update only when it is clean
  // (and refresh the 2-byte weights), then advance the scale.
  DeviceLossScale* scale = loss_scale();
  if (scale != nullptr) GPUBENCH_CUDA_CHECK(launch_find_non_finite(gradient, count, scale, stream));
  GPUBENCH_CUDA_CHECK(launch_mixed_sgd_update(parameters, low_parameters_.data(), gradient, count,
                                              shape_.learning_rate, scale, shape_.precision,
                                              stream));
  if (scale != nullptr) {
    GPUBENCH_CUDA_CHECK(launch_loss_scale_update(scale, shape_.loss_scaling, stream));
  }
}

std::optional<LossScaleState> GpuTrainer::loss_scale_state() {
  if (shape_.precision != TrainingPrecision::fp16) return std::nullopt;
  DeviceLossScale device_state;
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(&device_state, loss_scale_.data(), sizeof device_state,
                                      cudaMemcpyDeviceToHost, stream_.get()));
  stream_.synchronize();
  return device_state.state;
}

void GpuTrainer::enqueue_input_copy(TrainingInput input) {
  if (input == TrainingInput::resident) return;
  const HostBuffer& host_inputs =
      input == TrainingInput::pinned ? pinned_inputs_ : pageable_inputs_;
  const HostBuffer& host_labels =
      input == TrainingInput::pinned ? pinned_labels_ : pageable_labels_;
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(inputs_.data(), host_inputs.data(), inputs_.bytes(),
                                      cudaMemcpyHostToDevice, stream_.get()));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(labels_.data(), host_labels.data(), labels_.bytes(),
                                      cudaMemcpyHostToDevice, stream_.get()));
}

void GpuTrainer::enqueue_readback() {
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(loss_host_.data(), loss_.data(), sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_.get()));
}

float GpuTrainer::read_loss() {
  enqueue_readback();
  stream_.synchronize();
  return *loss_host_.as<float>();
}

CudaGraph GpuTrainer::capture(int steps, TrainingInput input, bool readback_at_end,
                              bool concurrent) {
  const cudaStream_t stream = stream_.get();
  // Thread-local: only this thread's calls are checked against the capture, so another thread's
  // unrelated CUDA work does not invalidate it.
  GPUBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int step = 0; step < steps; ++step) {
      enqueue_input_copy(input);
      enqueue_step(/*observer=*/nullptr, concurrent);
    }
    if (readback_at_end) enqueue_readback();
  } catch (...) {
    // Leave the stream usable: end the broken capture and drop what it recorded.
    cudaGraph_t broken = nullptr;
    static_cast<void>(cudaStreamEndCapture(stream, &broken));
    if (broken != nullptr) static_cast<void>(cudaGraphDestroy(broken));
    throw;
  }
  return CudaGraph::end_capture(stream);
}

void GpuTrainer::prepare(const TrainingRunConfig& config, int steps) {
  if (steps < 1) throw std::invalid_argument("a training run needs at least one step");
  if (config.readback_every < 0) {
    throw std::invalid_argument("readback interval must be >= 0, not " +
                                std::to_string(config.readback_every));
  }
  if (config.execution == TrainingExecution::graph && config.input == TrainingInput::pageable) {
    throw std::invalid_argument(
        "a CUDA graph cannot capture copies from pageable host memory; use input pinned or "
        "resident");
  }
  config_ = config;
  prepared_steps_ = steps;
  graph_ = CudaGraph();
  remainder_graph_ = CudaGraph();
  graph_steps_ = 0;
  if (config.execution == TrainingExecution::eager) return;
  graph_steps_ =
      config.readback_every > 0 ? config.readback_every : std::clamp(config.graph_steps, 1, steps);
  const int full_graphs = steps / graph_steps_;
  const int remainder = steps % graph_steps_;
  if (full_graphs > 0) {
    graph_ = capture(graph_steps_, config.input, config.readback_every > 0, concurrent_graphs_);
  }
  if (remainder > 0) remainder_graph_ = capture(remainder, config.input, false, concurrent_graphs_);
  // The first launch of an executable graph uploads it to the device; do that here, not in a
  // timed run, then undo the training it did.
  if (full_graphs > 0) graph_.launch(stream_.get());
  if (remainder > 0) remainder_graph_.launch(stream_.get());
  enqueue_reset();
  stream_.synchronize();
}

void GpuTrainer::run(int steps, std::vector<float>* readback_losses) {
  const int every = config_.readback_every;
  const auto read = [&] {
    stream_.synchronize();
    if (readback_losses != nullptr) readback_losses->push_back(*loss_host_.as<float>());
  };
  if (config_.execution == TrainingExecution::eager) {
    for (int step = 1; step <= steps; ++step) {
      enqueue_input_copy(config_.input);
      enqueue_step(observer_, /*concurrent=*/false);
      if (every > 0 && step % every == 0) {
        enqueue_readback();
        read();
      }
    }
    return;
  }
  if (steps != prepared_steps_) {
    throw std::logic_error("GpuTrainer::run: graphs were prepared for " +
                           std::to_string(prepared_steps_) + " steps, not " +
                           std::to_string(steps));
  }
  const int full_graphs = steps / graph_steps_;
  for (int graph = 0; graph < full_graphs; ++graph) {
    graph_.launch(stream_.get());
    if (every > 0) read();  // graph_steps_ == every: each replay ends with the readback
  }
  if (steps % graph_steps_ > 0) remainder_graph_.launch(stream_.get());
}

float GpuTrainer::step_and_read_loss() {
  enqueue_step(observer_, /*concurrent=*/false);
  return read_loss();
}

CudaGraph GpuTrainer::capture_compute_graph(int steps, TrainingExecution ordered_as) {
  if (steps < 1) throw std::invalid_argument("a compute graph needs at least one step");
  return capture(steps, TrainingInput::resident, false,
                 ordered_as == TrainingExecution::graph && concurrent_graphs_);
}

float GpuTrainer::last_loss() { return read_loss(); }

std::vector<float> GpuTrainer::parameters() {
  return read_device_floats(parameters_, shape_.parameter_count, stream_.get());
}

std::vector<float> GpuTrainer::last_gradient() {
  return read_device_floats(gradient_, shape_.parameter_count, stream_.get());
}

}  // namespace gpubench::cuda
