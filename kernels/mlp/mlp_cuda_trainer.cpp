#include "kernels/mlp/mlp_cuda_trainer.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/common/cuda_check.hpp"
#include "kernels/common/training_kernels.cuh"
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

// The core's part of the trainer, once the network, the batch and the labels are checked
// (std::invalid_argument naming the problem), before anything is allocated.
GpuTrainingShape training_shape(const MlpSpec& spec, int batch, const int* labels,
                                MlpPrecision precision, LossScalerSettings loss_scaling) {
  spec.validate();
  validate_batch(spec, batch, /*rows_available=*/batch);  // only the lower bound applies here
  if (batch > MlpGpuTrainer::max_batch()) {
    throw std::invalid_argument("batch " + std::to_string(batch) +
                                " is larger than the GPU MLP trainer's largest, " +
                                std::to_string(MlpGpuTrainer::max_batch()));
  }
  validate_labels(spec, labels, batch);
  return {batch,
          static_cast<std::size_t>(spec.inputs),
          spec.classes,
          spec.parameter_count(),
          spec.learning_rate,
          precision,
          loss_scaling};
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
  switch (precision()) {
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
    : GpuTrainer(training_shape(spec, batch, labels, precision, loss_scaling), inputs, labels,
                 initial_parameters),
      spec_(spec) {
  const auto rows = static_cast<std::size_t>(batch);
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
    const MlpOperandAlignment alignment = mlp_operand_alignment(spec_, layer, precision);
    LtOperands weight_times_activation;  // forward and input gradient: A is a weight matrix
    weight_times_activation.a_alignment = alignment.weights;
    LtOperands gradient_output;  // weight gradient: C is in the gradient vector
    gradient_output.c_alignment = alignment.weight_gradient;
    if (mixed()) {
      weight_times_activation.ab_type = low_type(precision);
      gradient_output.ab_type = low_type(precision);
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
  for (int width : spec_.hidden) {
    if (mixed()) {
      low_activations_.push_back(allocate(kLowBytes * rows * width));
      low_deltas_.push_back(allocate(kLowBytes * rows * width));
    } else {
      activations_.push_back(allocate(floats(rows * width)));
      deltas_.push_back(allocate(floats(rows * width)));
    }
  }
  bias_partials_ = allocate(floats(bias_partial_floats(spec_, batch)));
  bias_counters_ = allocate(bias_counter_count(spec_) * sizeof(unsigned));
  if (mixed()) {
    low_inputs_ = allocate(kLowBytes * rows * spec_.inputs);
    product_output_ = allocate(floats(rows * widest_hidden(spec_)));
  }
  if (device_bytes() != planned_device_bytes(spec_, batch, precision)) {
    throw std::logic_error("MlpGpuTrainer allocated " + std::to_string(device_bytes()) +
                           " bytes, planned_device_bytes says " +
                           std::to_string(planned_device_bytes(spec_, batch, precision)));
  }
  allow_concurrent_graphs(static_cast<long long>(batch) * spec_.widest_layer() <= (1LL << 18));
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(bias_counters_.data(), 0, bias_counters_.bytes(), stream()));
}

MlpGpuTrainer::~MlpGpuTrainer() { wait_for_queued_work(); }

void MlpGpuTrainer::enqueue_step(StepObserver* /*observer*/, bool concurrent) {
  if (precision() == MlpPrecision::fp32) {
    enqueue_fp32_step(concurrent);
  } else {
    enqueue_mixed_step(concurrent);
  }
}

void MlpGpuTrainer::enqueue_fp32_step(bool concurrent) {
  const cudaStream_t stream = this->stream();
  const cublasLtHandle_t lt = products_->lt.get();
  // Where the weight and bias gradients go: the main stream, or the side stream forked from it.
  const cudaStream_t gradient_stream = concurrent ? side_stream_.get() : stream;
  const DeviceBuffer& gradient_workspace = concurrent ? side_cublas_workspace_ : cublas_workspace_;
  const int layers = spec_.layer_count();
  const int batch = this->batch();
  float* parameters = device_parameters();
  float* gradient = device_gradient();
  const float* inputs = device_inputs();

  const float* previous = inputs;
  for (int layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    const int fan_out = spec_.fan_out(layer);
    float* output = last ? logits() : activations_[layer].as<float>();
    products_->forward[layer]->run(lt, parameters + spec_.weight_offset(layer), previous, output,
                                   cublas_workspace_, stream);
    GPUBENCH_CUDA_CHECK(launch_bias_activation(output, parameters + spec_.bias_offset(layer), batch,
                                               fan_out,
                                               /*relu=*/!last, stream));
    previous = output;
  }
  enqueue_loss();

  float* delta = logits();
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
  enqueue_update();
}

// The fp32 step's operations in the same order, with the casts of
// kernels/mlp/mlp_cuda_mixed_kernels.cuh around the 2-byte products.
void MlpGpuTrainer::enqueue_mixed_step(bool concurrent) {
  const cudaStream_t stream = this->stream();
  const cublasLtHandle_t lt = products_->lt.get();
  const cudaStream_t gradient_stream = concurrent ? side_stream_.get() : stream;
  const DeviceBuffer& gradient_workspace = concurrent ? side_cublas_workspace_ : cublas_workspace_;
  const MlpPrecision precision = this->precision();
  const int layers = spec_.layer_count();
  const int batch = this->batch();
  const auto rows = static_cast<std::size_t>(batch);
  const float* parameters = device_parameters();
  float* gradient = device_gradient();
  // The 2-byte copy of a layer's weights, kept by the core.
  const auto low_weights = [&](int layer) { return weights_operand(spec_.weight_offset(layer)); };

  GPUBENCH_CUDA_CHECK(
      launch_convert(low_inputs_.data(), device_inputs(), rows * spec_.inputs, precision, stream));
  const void* previous = low_inputs_.data();
  for (int layer = 0; layer < layers; ++layer) {
    const bool last = layer == layers - 1;
    const int fan_out = spec_.fan_out(layer);
    const float* bias = parameters + spec_.bias_offset(layer);
    float* output = last ? logits() : product_output_.as<float>();
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
  enqueue_loss();  // the loss gradient's 2-byte copy, scaled for fp16, is logits_gradient()

  const void* delta = logits_gradient();
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
  enqueue_update();
}

}  // namespace gpubench::cuda
