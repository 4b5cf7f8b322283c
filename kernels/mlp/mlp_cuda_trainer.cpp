#include "kernels/mlp/mlp_cuda_trainer.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/common/cuda_check.hpp"
#include "kernels/mlp/mlp_cuda_kernels.cuh"
#include "kernels/mlp/mlp_cuda_mixed_kernels.cuh"

namespace gpubench::cuda {

namespace {

// cuBLAS's workspace, given explicitly so that captured GEMMs never allocate during capture
// (cuBLAS documentation, "CUDA Graphs Support"); 32 MiB is what it recommends for Hopper.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;
// Products whose reduction is at most this long never split K (see mlp_cuda_trainer.hpp).
constexpr int kShortReduction = 256;

class LtHandle {
 public:
  LtHandle() { GPUBENCH_CUBLAS_CHECK(cublasLtCreate(&handle_)); }
  ~LtHandle() {
    if (handle_ != nullptr) cublasLtDestroy(handle_);
  }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  LtHandle(LtHandle&&) = delete;
  LtHandle& operator=(LtHandle&&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

// Bytes of one element of a mixed-precision step's copies (bf16 and fp16 alike).
constexpr std::size_t kLowBytes = 2;
// cudaMalloc returns 256-byte aligned memory, which cuBLASLt's heuristic assumes by default.
constexpr std::uint32_t kAllocationAlignment = 256;

// The alignment of a pointer `offset_bytes` past the start of an allocation: the largest power of
// two dividing the offset, at most the allocation's.
std::uint32_t alignment_at(std::size_t offset_bytes) {
  if (offset_bytes == 0) return kAllocationAlignment;
  const std::size_t lowest_bit = offset_bytes & (~offset_bytes + 1);
  return static_cast<std::uint32_t>(std::min<std::size_t>(lowest_bit, kAllocationAlignment));
}

// The operands of a product: fp32 (the fp32 step), or 2-byte A and B with an fp32 C (the mixed
// step), and the byte alignment of the pointers it will be given (mlp_operand_alignment): telling
// the heuristic keeps it from choosing a kernel whose vector loads need more.
struct LtOperands {
  cudaDataType_t ab_type = CUDA_R_32F;
  std::uint32_t a_alignment = kAllocationAlignment;
  std::uint32_t b_alignment = kAllocationAlignment;
  std::uint32_t c_alignment = kAllocationAlignment;
};

// Owners of cuBLASLt's descriptors. Members, not raw handles released in ~LtProduct: when a
// constructor throws after creating some of them (an unsupported layout, no algorithm), the members
// already built are destroyed, where a destructor would never run.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
struct LtDestroy {
  void operator()(Handle handle) const { static_cast<void>(Destroy(handle)); }
};
using LtDescription = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                      LtDestroy<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using LtLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                                 LtDestroy<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;

// A column-major matrix layout: `rows` x `columns` with leading dimension `leading`.
LtLayout make_layout(cudaDataType_t type, int rows, int columns, int leading) {
  cublasLtMatrixLayout_t layout = nullptr;
  GPUBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, columns, leading));
  return LtLayout(layout);
}

// One product with fp32 accumulation, column-major C (m x n) = op(A) op(B), described as for
// cublasSgemm, with its algorithm chosen once. Owns its cuBLASLt descriptors.
class LtProduct {
 public:
  LtProduct(cublasLtHandle_t lt, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
            int k, int lda, int ldb, int ldc, const LtOperands& operands = {})
      : operands_(operands) {
    cublasLtMatmulDesc_t description = nullptr;
    GPUBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(&description, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    description_.reset(description);
    GPUBENCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        description_.get(), CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
    GPUBENCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        description_.get(), CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
    const bool a_plain = transa == CUBLAS_OP_N;
    const bool b_plain = transb == CUBLAS_OP_N;
    a_ = make_layout(operands.ab_type, a_plain ? m : k, a_plain ? k : m, lda);
    b_ = make_layout(operands.ab_type, b_plain ? k : n, b_plain ? n : k, ldb);
    c_ = make_layout(CUDA_R_32F, m, n, ldc);
    choose_algorithm(lt, k);
  }

  void run(cublasLtHandle_t lt, const void* a, const void* b, float* c,
           const DeviceBuffer& workspace, cudaStream_t stream) const {
    const float one = 1.0F;
    const float zero = 0.0F;
    GPUBENCH_CUBLAS_CHECK(cublasLtMatmul(lt, description_.get(), &one, a, a_.get(), b, b_.get(),
                                         &zero, c, c_.get(), c, c_.get(), &algorithm_,
                                         workspace.data(), workspace.bytes(), stream));
  }

 private:
  static std::int32_t split_k(const cublasLtMatmulAlgo_t& algorithm) {
    std::int32_t splits = 1;
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algorithm, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof splits, &written) != CUBLAS_STATUS_SUCCESS) {
      return 1;
    }
    return splits;
  }

  void choose_algorithm(cublasLtHandle_t lt, int k) {
    cublasLtMatmulPreference_t preference = nullptr;
    GPUBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const std::size_t workspace_bytes = kCublasWorkspaceBytes;
    cublasStatus_t status =
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes);
    // Only where a pointer is less aligned than an allocation: an operand that starts one keeps
    // the heuristic's default.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, operands_.a_alignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, operands_.b_alignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, operands_.c_alignment},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, operands_.c_alignment}};
    for (const auto& [attribute, bytes] : alignments) {
      if (status == CUBLAS_STATUS_SUCCESS && bytes < kAllocationAlignment) {
        status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof bytes);
      }
    }
    constexpr int kCandidates = 16;
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int count = 0;
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasLtMatmulAlgoGetHeuristic(lt, description_.get(), a_.get(), b_.get(), c_.get(),
                                              c_.get(), preference, kCandidates, results, &count);
    }
    cublasLtMatmulPreferenceDestroy(preference);
    GPUBENCH_CUBLAS_CHECK(status);
    if (count < 1) throw CudaError("cuBLASLt has no algorithm for an MLP product");
    algorithm_ = results[0].algo;
    if (k > kShortReduction || split_k(algorithm_) <= 1) return;
    for (int i = 1; i < count; ++i) {
      if (split_k(results[i].algo) <= 1) {
        algorithm_ = results[i].algo;
        return;
      }
    }
    // Every candidate splits K: take the first with split-K turned off, if cuBLASLt accepts it.
    cublasLtMatmulAlgo_t unsplit = results[0].algo;
    const std::int32_t one_split = 1;
    cublasLtMatmulHeuristicResult_t check = {};
    if (cublasLtMatmulAlgoConfigSetAttribute(&unsplit, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one_split,
                                             sizeof one_split) == CUBLAS_STATUS_SUCCESS &&
        cublasLtMatmulAlgoCheck(lt, description_.get(), a_.get(), b_.get(), c_.get(), c_.get(),
                                &unsplit, &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= kCublasWorkspaceBytes) {
      algorithm_ = unsplit;
    }
  }

  LtOperands operands_;
  LtDescription description_;
  LtLayout a_;
  LtLayout b_;
  LtLayout c_;
  cublasLtMatmulAlgo_t algorithm_ = {};
};

const MlpSpec& checked(const MlpSpec& spec, int batch) {
  spec.validate();
  validate_batch(spec, batch, /*rows_available=*/batch);  // only the lower bound applies here
  if (batch > MlpGpuTrainer::max_batch()) {
    throw std::invalid_argument("batch " + std::to_string(batch) +
                                " is larger than the GPU MLP trainer's largest, " +
                                std::to_string(MlpGpuTrainer::max_batch()));
  }
  return spec;
}

std::size_t floats(std::size_t count) { return count * sizeof(float); }

cudaDataType_t low_type(MlpPrecision precision) {
  return precision == MlpPrecision::bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

int widest_hidden(const MlpSpec& spec) {
  return spec.hidden.empty() ? 0 : *std::max_element(spec.hidden.begin(), spec.hidden.end());
}

std::size_t bias_partial_floats(const MlpSpec& spec, int batch) {
  std::size_t partials = 0;
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    partials = std::max(partials, bias_gradient_partials(batch, spec.fan_out(layer)));
  }
  return partials;
}

std::size_t bias_counter_count(const MlpSpec& spec) {
  std::size_t counters = 0;
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    counters = std::max(counters, bias_gradient_counters(spec.fan_out(layer)));
  }
  return counters;
}

}  // namespace

struct MlpGpuTrainer::Products {
  LtHandle lt;
  // Per layer: Z = A W, dW = A^T dZ, dA = dZ W^T (none for the first layer).
  std::vector<std::unique_ptr<LtProduct>> forward;
  std::vector<std::unique_ptr<LtProduct>> weight_gradient;
  std::vector<std::unique_ptr<LtProduct>> input_gradient;
};

MlpOperandAlignment mlp_operand_alignment(const MlpSpec& spec, int layer, MlpPrecision precision) {
  spec.validate();
  if (layer < 0 || layer >= spec.layer_count()) {
    throw std::invalid_argument("layer " + std::to_string(layer) + " of the " + spec.describe() +
                                " net, which has layers 0.." +
                                std::to_string(spec.layer_count() - 1));
  }
  const std::size_t weight_element_bytes =
      precision == MlpPrecision::fp32 ? sizeof(float) : kLowBytes;
  return {alignment_at(weight_element_bytes * spec.weight_offset(layer)),
          alignment_at(floats(spec.weight_offset(layer)))};
}

const char* mlp_input_name(MlpInput input) {
  switch (input) {
    case MlpInput::resident:
      return "resident";
    case MlpInput::pageable:
      return "pageable";
    case MlpInput::pinned:
      return "pinned";
  }
  return "unknown";
}

std::size_t MlpGpuTrainer::planned_device_bytes(const MlpSpec& spec, int batch,
                                                MlpPrecision precision) {
  const auto rows = static_cast<std::size_t>(batch);
  std::size_t bytes = 2 * kCublasWorkspaceBytes;
  bytes += 3 * floats(spec.parameter_count());  // parameters, initial parameters, gradient
  bytes += floats(rows * spec.inputs) + rows * sizeof(int);
  bytes += floats(rows * spec.classes);  // logits, then their dZ
  bytes += floats(1 + softmax_cross_entropy_blocks(batch)) + sizeof(unsigned);
  bytes += floats(bias_partial_floats(spec, batch)) + bias_counter_count(spec) * sizeof(unsigned);
  if (precision == MlpPrecision::fp32) {
    for (int width : spec.hidden) bytes += 2 * floats(rows * width);  // activation and dZ
    return bytes;
  }
  bytes += kLowBytes * (spec.parameter_count() + rows * spec.inputs + rows * spec.classes);
  for (int width : spec.hidden) bytes += 2 * kLowBytes * rows * width;  // activation and dZ
  bytes += floats(rows * widest_hidden(spec));                          // a product's output
  if (precision == MlpPrecision::fp16) bytes += sizeof(DeviceLossScale);
  return bytes;
}

int MlpGpuTrainer::max_batch() { return bias_gradient_max_rows(); }

int MlpGpuTrainer::launches_per_step() const {
  const int fp32_launches = 6 * spec_.layer_count();
  switch (precision_) {
    case MlpPrecision::fp32:
      return fp32_launches;
    case MlpPrecision::bf16:
      return fp32_launches + 2;
    case MlpPrecision::fp16:
      return fp32_launches + 4;
  }
  return fp32_launches;
}

MlpGpuTrainer::MlpGpuTrainer(const MlpSpec& spec, int batch, const float* inputs, const int* labels,
                             const float* initial_parameters, MlpPrecision precision,
                             LossScalerSettings loss_scaling)
    : spec_(checked(spec, batch)),
      batch_(batch),
      precision_(precision),
      loss_scaling_(loss_scaling),
      pageable_inputs_(floats(static_cast<std::size_t>(batch) * spec.inputs), HostMemory::pageable),
      pageable_labels_(static_cast<std::size_t>(batch) * sizeof(int), HostMemory::pageable),
      pinned_inputs_(floats(static_cast<std::size_t>(batch) * spec.inputs), HostMemory::pinned),
      pinned_labels_(static_cast<std::size_t>(batch) * sizeof(int), HostMemory::pinned),
      loss_host_(sizeof(float)) {
  validate_labels(spec_, labels, batch);
  validate(loss_scaling_);
  const auto rows = static_cast<std::size_t>(batch);
  const bool mixed = precision_ != MlpPrecision::fp32;
  const std::size_t parameter_bytes = floats(spec_.parameter_count());
  cublas_workspace_ = allocate(kCublasWorkspaceBytes);
  side_cublas_workspace_ = allocate(kCublasWorkspaceBytes);
  // The products, row-major through column-major cuBLASLt (kernels/gemm/gemm_cuda.hpp): plain fp32
  // (CUBLAS_COMPUTE_32F, no TF32), so the losses can be compared with the CPU's; or 2-byte
  // operands with fp32 accumulation and output (mixed precision). In the mixed step a weight
  // operand is the 2-byte copy at the weights' offset in the parameter vector, and a weight
  // gradient is written at its offset in the fp32 gradient: their pointers' alignments are those
  // offsets'; every other operand starts an allocation.
  products_ = std::make_unique<Products>();
  for (int layer = 0; layer < spec_.layer_count(); ++layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const cublasLtHandle_t lt = products_->lt.get();
    // In every precision: an fp32 weight inside the parameter vector is as misaligned as a 2-byte
    // copy's can be (6-41-19-4: 4 bytes), and the heuristic would otherwise assume 256.
    const MlpOperandAlignment alignment = mlp_operand_alignment(spec_, layer, precision_);
    LtOperands weight_times_activation;  // forward and input gradient: A is a weight matrix
    weight_times_activation.a_alignment = alignment.weights;
    LtOperands gradient_output;  // weight gradient: C is in the gradient vector
    gradient_output.c_alignment = alignment.weight_gradient;
    if (mixed) {
      weight_times_activation.ab_type = low_type(precision_);
      gradient_output.ab_type = low_type(precision_);
    }
    // Z (batch x fan_out) = A W: column-major Z^T = W^T A^T, both operands as stored.
    products_->forward.push_back(std::make_unique<LtProduct>(lt, CUBLAS_OP_N, CUBLAS_OP_N, fan_out,
                                                             batch, fan_in, fan_out, fan_in,
                                                             fan_out, weight_times_activation));
    // dW = A^T dZ, row-major fan_in x fan_out. Column-major (the bytes cuBLAS sees), that is
    // dW^T = dZ^T A: dZ's bytes are the column-major fan_out x batch dZ^T (no transpose) and A's
    // bytes the column-major fan_in x batch A^T (transposed back by CUBLAS_OP_T).
    products_->weight_gradient.push_back(
        std::make_unique<LtProduct>(lt, CUBLAS_OP_N, CUBLAS_OP_T, fan_out, fan_in, batch, fan_out,
                                    fan_in, fan_out, gradient_output));
    // dA = dZ W^T, row-major batch x fan_in; column-major dA^T = W dZ^T: W's bytes are the
    // column-major fan_out x fan_in W^T (transposed back), dZ's bytes are dZ^T.
    products_->input_gradient.push_back(
        layer == 0
            ? nullptr
            : std::make_unique<LtProduct>(lt, CUBLAS_OP_T, CUBLAS_OP_N, fan_in, batch, fan_out,
                                          fan_out, fan_out, fan_in, weight_times_activation));
  }
  parameters_ = allocate(parameter_bytes);
  initial_parameters_ = allocate(parameter_bytes);
  gradient_ = allocate(parameter_bytes);
  inputs_ = allocate(pageable_inputs_.bytes());
  labels_ = allocate(pageable_labels_.bytes());
  for (int width : spec_.hidden) {
    if (mixed) {
      low_activations_.push_back(allocate(kLowBytes * rows * width));
      low_deltas_.push_back(allocate(kLowBytes * rows * width));
    } else {
      activations_.push_back(allocate(floats(rows * width)));
      deltas_.push_back(allocate(floats(rows * width)));
    }
  }
  logits_ = allocate(floats(rows * spec_.classes));
  loss_ = allocate(sizeof(float));
  loss_partials_ = allocate(floats(softmax_cross_entropy_blocks(batch)));
  loss_counter_ = allocate(sizeof(unsigned));
  bias_partials_ = allocate(floats(bias_partial_floats(spec_, batch)));
  bias_counters_ = allocate(bias_counter_count(spec_) * sizeof(unsigned));
  if (mixed) {
    low_parameters_ = allocate(kLowBytes * spec_.parameter_count());
    low_inputs_ = allocate(kLowBytes * rows * spec_.inputs);
    low_logit_delta_ = allocate(kLowBytes * rows * spec_.classes);
    product_output_ = allocate(floats(rows * widest_hidden(spec_)));
    if (precision_ == MlpPrecision::fp16) loss_scale_ = allocate(sizeof(DeviceLossScale));
  }
  if (device_bytes_ != planned_device_bytes(spec_, batch, precision_)) {
    throw std::logic_error("MlpGpuTrainer allocated " + std::to_string(device_bytes_) +
                           " bytes, planned_device_bytes says " +
                           std::to_string(planned_device_bytes(spec_, batch, precision_)));
  }
  concurrent_gradients_ = static_cast<long long>(batch) * spec_.widest_layer() <= (1LL << 18);

  std::memcpy(pageable_inputs_.data(), inputs, pageable_inputs_.bytes());
  std::memcpy(pinned_inputs_.data(), inputs, pinned_inputs_.bytes());
  std::memcpy(pageable_labels_.data(), labels, pageable_labels_.bytes());
  std::memcpy(pinned_labels_.data(), labels, pinned_labels_.bytes());
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(loss_counter_.data(), 0, sizeof(unsigned), stream));
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(bias_counters_.data(), 0, bias_counters_.bytes(), stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(inputs_.data(), pinned_inputs_.data(), inputs_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(labels_.data(), pinned_labels_.data(), labels_.bytes(),
                                      cudaMemcpyHostToDevice, stream));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(initial_parameters_.data(), initial_parameters,
                                      parameter_bytes, cudaMemcpyHostToDevice, stream));
  enqueue_reset();
  stream_.synchronize();
}

MlpGpuTrainer::~MlpGpuTrainer() {
  // run() returns with work still queued (as other trainers' do); let it finish before its
  // buffers, graphs and side stream go. A failure here has nowhere to go (a destructor does not
  // throw) and the context is broken anyway.
  static_cast<void>(cudaStreamSynchronize(stream_.get()));
}

DeviceBuffer MlpGpuTrainer::allocate(std::size_t bytes) {
  device_bytes_ += bytes;
  return DeviceBuffer(bytes);
}

std::size_t MlpGpuTrainer::input_bytes_per_step() const {
  if (config_.input == MlpInput::resident) return 0;
  return inputs_.bytes() + labels_.bytes();
}

void MlpGpuTrainer::enqueue_reset() {
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(parameters_.data(), initial_parameters_.data(),
                                      parameters_.bytes(), cudaMemcpyDeviceToDevice, stream));
  if (precision_ == MlpPrecision::fp32) return;
  GPUBENCH_CUDA_CHECK(launch_convert(low_parameters_.data(), parameters_.as<float>(),
                                     spec_.parameter_count(), precision_, stream));
  if (precision_ == MlpPrecision::fp16) {
    GPUBENCH_CUDA_CHECK(launch_loss_scale_reset(loss_scale_.as<DeviceLossScale>(),
                                                loss_scaling_.initial_scale, stream));
  }
}

std::optional<LossScaleState> MlpGpuTrainer::loss_scale_state() {
  if (precision_ != MlpPrecision::fp16) return std::nullopt;
  DeviceLossScale device_state;
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(&device_state, loss_scale_.data(), sizeof device_state,
                                      cudaMemcpyDeviceToHost, stream_.get()));
  stream_.synchronize();
  return device_state.state;
}

void MlpGpuTrainer::enqueue_input_copy(MlpInput input) {
  if (input == MlpInput::resident) return;
  const HostBuffer& host_inputs = input == MlpInput::pinned ? pinned_inputs_ : pageable_inputs_;
  const HostBuffer& host_labels = input == MlpInput::pinned ? pinned_labels_ : pageable_labels_;
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(inputs_.data(), host_inputs.data(), inputs_.bytes(),
                                      cudaMemcpyHostToDevice, stream_.get()));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(labels_.data(), host_labels.data(), labels_.bytes(),
                                      cudaMemcpyHostToDevice, stream_.get()));
}

void MlpGpuTrainer::enqueue_readback() {
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(loss_host_.data(), loss_.data(), sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_.get()));
}

void MlpGpuTrainer::enqueue_step(bool concurrent) {
  if (precision_ == MlpPrecision::fp32) {
    enqueue_fp32_step(concurrent);
  } else {
    enqueue_mixed_step(concurrent);
  }
}

void MlpGpuTrainer::enqueue_fp32_step(bool concurrent) {
  const cudaStream_t stream = stream_.get();
  const cublasLtHandle_t lt = products_->lt.get();
  // Where the weight and bias gradients go: the main stream, or the side stream forked from it.
  const cudaStream_t gradient_stream = concurrent ? side_stream_.get() : stream;
  const DeviceBuffer& gradient_workspace = concurrent ? side_cublas_workspace_ : cublas_workspace_;
  const int layers = spec_.layer_count();
  const int batch = batch_;
  float* parameters = parameters_.as<float>();
  float* gradient = gradient_.as<float>();
  const float* inputs = inputs_.as<float>();

  const float* previous = inputs;
  for (int layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    const int fan_out = spec_.fan_out(layer);
    float* output = last ? logits_.as<float>() : activations_[layer].as<float>();
    products_->forward[layer]->run(lt, parameters + spec_.weight_offset(layer), previous, output,
                                   cublas_workspace_, stream);
    GPUBENCH_CUDA_CHECK(launch_bias_activation(output, parameters + spec_.bias_offset(layer), batch,
                                               fan_out,
                                               /*relu=*/!last, stream));
    previous = output;
  }
  GPUBENCH_CUDA_CHECK(launch_softmax_cross_entropy(
      logits_.as<float>(), labels_.as<int>(), batch, spec_.classes, loss_.as<float>(),
      loss_partials_.as<float>(), loss_counter_.as<unsigned>(), stream));

  float* delta = logits_.as<float>();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const float* input = layer == 0 ? inputs : activations_[layer - 1].as<float>();
    if (concurrent) {
      gradient_ready_.record(stream);
      GPUBENCH_CUDA_CHECK(cudaStreamWaitEvent(gradient_stream, gradient_ready_.get(), 0));
    }
    products_->weight_gradient[layer]->run(lt, delta, input, gradient + spec_.weight_offset(layer),
                                           gradient_workspace, gradient_stream);
    GPUBENCH_CUDA_CHECK(launch_bias_gradient(
        delta, batch, fan_out, gradient + spec_.bias_offset(layer), bias_partials_.as<float>(),
        bias_counters_.as<unsigned>(), gradient_stream));
    if (layer == 0) break;
    float* below = deltas_[layer - 1].as<float>();
    products_->input_gradient[layer]->run(lt, parameters + spec_.weight_offset(layer), delta, below,
                                          cublas_workspace_, stream);
    GPUBENCH_CUDA_CHECK(
        launch_relu_backward(below, input, static_cast<std::size_t>(batch) * fan_in, stream));
    delta = below;
  }
  if (concurrent) {  // join: the update needs every gradient
    side_done_.record(gradient_stream);
    GPUBENCH_CUDA_CHECK(cudaStreamWaitEvent(stream, side_done_.get(), 0));
  }
  GPUBENCH_CUDA_CHECK(launch_sgd_update(parameters, gradient, spec_.parameter_count(),
                                        spec_.learning_rate, stream));
}

// The fp32 step's operations in the same order, with the casts of
// kernels/mlp/mlp_cuda_mixed_kernels.cuh around the 2-byte products.
void MlpGpuTrainer::enqueue_mixed_step(bool concurrent) {
  const cudaStream_t stream = stream_.get();
  const cublasLtHandle_t lt = products_->lt.get();
  const cudaStream_t gradient_stream = concurrent ? side_stream_.get() : stream;
  const DeviceBuffer& gradient_workspace = concurrent ? side_cublas_workspace_ : cublas_workspace_;
  const MlpPrecision precision = precision_;
  const int layers = spec_.layer_count();
  const int batch = batch_;
  const auto rows = static_cast<std::size_t>(batch);
  float* parameters = parameters_.as<float>();
  float* gradient = gradient_.as<float>();
  const auto low_weights = [&](int layer) {
    return low_parameters_.as<char>() + kLowBytes * spec_.weight_offset(layer);
  };
  DeviceLossScale* loss_scale =
      precision == MlpPrecision::fp16 ? loss_scale_.as<DeviceLossScale>() : nullptr;

  GPUBENCH_CUDA_CHECK(launch_convert(low_inputs_.data(), inputs_.as<float>(), rows * spec_.inputs,
                                     precision, stream));
  const void* previous = low_inputs_.data();
  for (int layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    const int fan_out = spec_.fan_out(layer);
    const float* bias = parameters + spec_.bias_offset(layer);
    float* output = last ? logits_.as<float>() : product_output_.as<float>();
    products_->forward[layer]->run(lt, low_weights(layer), previous, output, cublas_workspace_,
                                   stream);
    if (last) {  // the logits stay fp32 for the loss
      GPUBENCH_CUDA_CHECK(
          launch_bias_activation(output, bias, batch, fan_out, /*relu=*/false, stream));
    } else {
      GPUBENCH_CUDA_CHECK(launch_bias_relu_convert(low_activations_[layer].data(), output, bias,
                                                   batch, fan_out, precision, stream));
      previous = low_activations_[layer].data();
    }
  }
  GPUBENCH_CUDA_CHECK(launch_softmax_cross_entropy(
      logits_.as<float>(), labels_.as<int>(), batch, spec_.classes, loss_.as<float>(),
      loss_partials_.as<float>(), loss_counter_.as<unsigned>(), stream));
  GPUBENCH_CUDA_CHECK(launch_scale_convert(low_logit_delta_.data(), logits_.as<float>(),
                                           rows * spec_.classes, loss_scale, precision, stream));

  const void* delta = low_logit_delta_.data();
  for (int layer = layers - 1; layer >= 0; --layer) {
    const int fan_in = spec_.fan_in(layer);
    const int fan_out = spec_.fan_out(layer);
    const void* input = layer == 0 ? low_inputs_.data() : low_activations_[layer - 1].data();
    if (concurrent) {
      gradient_ready_.record(stream);
      GPUBENCH_CUDA_CHECK(cudaStreamWaitEvent(gradient_stream, gradient_ready_.get(), 0));
    }
    products_->weight_gradient[layer]->run(lt, delta, input, gradient + spec_.weight_offset(layer),
                                           gradient_workspace, gradient_stream);
    GPUBENCH_CUDA_CHECK(launch_bias_gradient(
        delta, precision, batch, fan_out, gradient + spec_.bias_offset(layer),
        bias_partials_.as<float>(), bias_counters_.as<unsigned>(), gradient_stream));
    if (layer == 0) break;
    // dA (fp32) into the product buffer, then the ReLU's mask and the cast into this layer's dZ.
    // Only the main stream touches the product buffer, so the gradient branch still reading the
    // 2-byte dZ above never races with it.
    float* input_gradient = product_output_.as<float>();
    products_->input_gradient[layer]->run(lt, low_weights(layer), delta, input_gradient,
                                          cublas_workspace_, stream);
    GPUBENCH_CUDA_CHECK(launch_relu_backward_convert(low_deltas_[layer - 1].data(), input_gradient,
                                                     low_activations_[layer - 1].data(),
                                                     rows * fan_in, precision, stream));
    delta = low_deltas_[layer - 1].data();
  }
  if (concurrent) {  // join: the update needs every gradient
    side_done_.record(gradient_stream);
    GPUBENCH_CUDA_CHECK(cudaStreamWaitEvent(stream, side_done_.get(), 0));
  }
  const std::size_t count = spec_.parameter_count();
  if (loss_scale != nullptr) {
    GPUBENCH_CUDA_CHECK(launch_find_non_finite(gradient, count, loss_scale, stream));
  }
  GPUBENCH_CUDA_CHECK(launch_mixed_sgd_update(parameters, low_parameters_.data(), gradient, count,
                                              spec_.learning_rate, loss_scale, precision, stream));
  if (loss_scale != nullptr) {
    GPUBENCH_CUDA_CHECK(launch_loss_scale_update(loss_scale, loss_scaling_, stream));
  }
}

CudaGraph MlpGpuTrainer::capture(int steps, MlpInput input, bool readback_at_end, bool concurrent) {
  const cudaStream_t stream = stream_.get();
  GPUBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int step = 0; step < steps; ++step) {
      enqueue_input_copy(input);
      enqueue_step(concurrent);
    }
    if (readback_at_end) enqueue_readback();
  } catch (...) {
    // Leave the stream usable: end the broken capture and drop what it recorded.
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken != nullptr) cudaGraphDestroy(broken);
    throw;
  }
  return CudaGraph::end_capture(stream);
}

void MlpGpuTrainer::prepare(const MlpRunConfig& config, int steps) {
  if (steps < 1) throw std::invalid_argument("an MLP run needs at least one step");
  if (config.readback_every < 0) throw std::invalid_argument("readback interval must be >= 0");
  config_ = config;
  prepared_steps_ = steps;
  graph_ = CudaGraph();
  remainder_graph_ = CudaGraph();
  graph_steps_ = 0;
  if (config.execution == MlpExecution::eager) return;
  if (config.input == MlpInput::pageable) {
    throw std::invalid_argument(
        "a CUDA graph cannot capture copies from pageable host memory; use input pinned or "
        "resident");
  }
  graph_steps_ =
      config.readback_every > 0 ? config.readback_every : std::clamp(config.graph_steps, 1, steps);
  const int full_graphs = steps / graph_steps_;
  const int remainder = steps % graph_steps_;
  if (full_graphs > 0) {
    graph_ = capture(graph_steps_, config.input, config.readback_every > 0, concurrent_gradients_);
  }
  if (remainder > 0) {
    remainder_graph_ = capture(remainder, config.input, false, concurrent_gradients_);
  }
  // The first launch of an executable graph uploads it to the device; do that here, not in a
  // timed run, then undo the training it did.
  if (full_graphs > 0) graph_.launch(stream_.get());
  if (remainder > 0) remainder_graph_.launch(stream_.get());
  enqueue_reset();
  stream_.synchronize();
}

void MlpGpuTrainer::run(int steps, std::vector<float>* readback_losses) {
  const int every = config_.readback_every;
  const auto read = [&] {
    stream_.synchronize();
    if (readback_losses != nullptr) readback_losses->push_back(*loss_host_.as<float>());
  };
  if (config_.execution == MlpExecution::eager) {
    for (int step = 1; step <= steps; ++step) {
      enqueue_input_copy(config_.input);
      enqueue_step(/*concurrent=*/false);
      if (every > 0 && step % every == 0) {
        enqueue_readback();
        read();
      }
    }
    return;
  }
  if (steps != prepared_steps_) {
    throw std::logic_error("MlpGpuTrainer::run: graphs were prepared for " +
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

float MlpGpuTrainer::step_and_read_loss() {
  enqueue_step(/*concurrent=*/false);
  enqueue_readback();
  stream_.synchronize();
  return *loss_host_.as<float>();
}

CudaGraph MlpGpuTrainer::capture_compute_graph(int steps, bool as_graph) {
  return capture(steps, MlpInput::resident, false, as_graph && concurrent_gradients_);
}

float MlpGpuTrainer::last_loss() {
  enqueue_readback();
  stream_.synchronize();
  return *loss_host_.as<float>();
}

std::vector<float> MlpGpuTrainer::parameters() {
  return read_device_floats(parameters_, spec_.parameter_count(), stream_.get());
}

}  // namespace gpubench::cuda
