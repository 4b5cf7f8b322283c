#include "kernels/cnn/cnn_cuda_trainer.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cnn/cnn_cuda_kernels.cuh"
#include "kernels/common/cuda_check.hpp"

namespace gpubench::cuda {

namespace {

constexpr int kConvLayers = CnnSpec::kConvLayers;
constexpr int kLinearLayers = CnnSpec::kLinearLayers;
static_assert(kConvLayers == 3 && kLinearLayers == 2, "the operation names below list 3 + 2");

// The operation names a StepObserver sees, the CPU trainer's (kernels/cnn/cnn_cpu.hpp), as string
// literals (StepObserver::begin keeps the pointer).
struct ConvOperationNames {
  const char* im2col;
  const char* gemm;
  const char* bias;
  const char* pool_forward;
  const char* pool_backward;
  const char* weight_gradient;
  const char* input_gradient;
};
constexpr ConvOperationNames kConvNames[kConvLayers] = {
    {"conv1.im2col", "conv1.gemm", "conv1.bias", "pool1.forward", "pool1.backward",
     "conv1.weight_gradient", "conv1.input_gradient"},
    {"conv2.im2col", "conv2.gemm", "conv2.bias", "pool2.forward", "pool2.backward",
     "conv2.weight_gradient", "conv2.input_gradient"},
    {"conv3.im2col", "conv3.gemm", "conv3.bias", "pool3.forward", "pool3.backward",
     "conv3.weight_gradient", "conv3.input_gradient"},
};
constexpr const char* kLinearForwardNames[kLinearLayers] = {"fc1.forward", "fc2.forward"};
constexpr const char* kLinearBackwardNames[kLinearLayers] = {"fc1.backward", "fc2.backward"};

// Launches of one eager step (see cnn_cuda_trainer.hpp).
constexpr int kLaunchesPerConvForward = 4;        // im2col, product, bias, pool
constexpr int kLaunchesPerLinearForward = 2;      // product, bias
constexpr int kLaunchesPerLinearBackward = 3;     // weight product, bias sums, input product
constexpr int kLaunchesPerConvBackward = 3;       // pool backward, weight product, bias sums
constexpr int kLaunchesPerConvInputGradient = 2;  // product, col2im (all but conv1)
// A mixed step's casts: fc1's input and output, the loss gradient, fc2's input gradient; and fp16's
// loss scaling: the inf/NaN check and the scale update.
constexpr int kMixedCastLaunches = 4;
constexpr int kLossScalingLaunches = 2;

cudaDataType_t operand_type(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::fp32:
      return CUDA_R_32F;
    case TrainingPrecision::bf16:
      return CUDA_R_16BF;
    case TrainingPrecision::fp16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

// One product through cuBLAS, described column-major as for cublasSgemm:
// C (m x n, ldc) = op(A) op(B), op(A) m x k, op(B) k x n. A and B are ab_type (fp32, or the 2-byte
// operands of a mixed step); the accumulation and C are always fp32.
struct ColumnMajorProduct {
  cublasOperation_t transa = CUBLAS_OP_N;
  cublasOperation_t transb = CUBLAS_OP_N;
  int m = 0;
  int n = 0;
  int k = 0;
  int lda = 0;
  int ldb = 0;
  int ldc = 0;
  cudaDataType_t ab_type = CUDA_R_32F;

  // Returns the status for the caller to check, so a failure names the caller's line.
  [[nodiscard]] cublasStatus_t run(cublasHandle_t handle, const void* a, const void* b,
                                   float* c) const {
    const float one = 1.0F;
    const float zero = 0.0F;
    // CUBLAS_COMPUTE_32F: plain fp32 products and sums (no TF32 on tensor cores), like the CPU;
    // with 2-byte A and B, tensor cores multiply them exactly and accumulate in fp32.
    return cublasGemmEx(handle, transa, transb, m, n, k, &one, a, ab_type, lda, b, ab_type, ldb,
                        &zero, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
};

std::size_t columns_of(const ConvShape& shape, int batch) {
  return static_cast<std::size_t>(batch) * static_cast<std::size_t>(shape.pixels());
}

void validate_network_and_batch(const CnnSpec& spec, int batch) {
  spec.validate();
  validate_cnn_batch(batch, /*rows_available=*/batch);  // only the lower bound applies here
  // cuBLAS takes int dimensions and leading dimensions; keep every matrix, the im2col ones being
  // the largest (K x batch * pixels), within int elements so no count overflows anywhere.
  const int largest = cnn_gpu_max_batch(spec);
  if (batch > largest) {
    throw std::invalid_argument(
        "CNN batch " + std::to_string(batch) + " is too large for the GPU trainer: an im2col " +
        "matrix would hold more elements than cuBLAS's int dimensions address (" +
        std::to_string(INT_MAX) + "); at most " + std::to_string(largest) + " images");
  }
}

void validate_inputs(const float* images, const int* labels, const float* initial_parameters,
                     int batch) {
  if (images == nullptr || labels == nullptr || initial_parameters == nullptr) {
    throw std::invalid_argument(
        "CnnGpuTrainer needs the images, the labels and the initial parameters (a null pointer "
        "was given)");
  }
  for (int image = 0; image < batch; ++image) {
    if (labels[image] < 0 || labels[image] >= CnnSpec::kClasses) {
      throw std::invalid_argument("invalid CNN label " + std::to_string(labels[image]) +
                                  " of image " + std::to_string(image) + ": classes are 0.." +
                                  std::to_string(CnnSpec::kClasses - 1));
    }
  }
}

// The core's part of the trainer, once the network, the batch and its inputs are checked
// (std::invalid_argument naming the problem), before anything is allocated.
GpuTrainingShape training_shape(const CnnSpec& spec, int batch, const float* images,
                                const int* labels, const float* initial_parameters,
                                TrainingPrecision precision, LossScalerSettings loss_scaling) {
  validate_network_and_batch(spec, batch);
  validate_inputs(images, labels, initial_parameters, batch);
  return {batch,
          static_cast<std::size_t>(CnnSpec::image_floats()),
          CnnSpec::kClasses,
          spec.parameter_count(),
          spec.learning_rate,
          precision,
          loss_scaling};
}

}  // namespace

struct CnnGpuTrainer::Products {
  explicit Products(cudaStream_t stream) : handle(stream) {}
  CublasHandle handle;
  // Per convolution: Y = W columns, dW = dY columns^T, dcolumns = W^T dY (not used for conv1).
  ColumnMajorProduct conv_forward[kConvLayers];
  ColumnMajorProduct conv_weight_gradient[kConvLayers];
  ColumnMajorProduct conv_input_gradient[kConvLayers];
  // Per linear layer: Z = X W^T, dW = dZ^T X, dX = dZ W.
  ColumnMajorProduct linear_forward[kLinearLayers];
  ColumnMajorProduct linear_weight_gradient[kLinearLayers];
  ColumnMajorProduct linear_input_gradient[kLinearLayers];
};

CnnGpuTrainer::CnnGpuTrainer(const CnnSpec& spec, int batch, const float* images, const int* labels,
                             const float* initial_parameters, TrainingPrecision precision,
                             LossScalerSettings loss_scaling)
    : GpuTrainer(
          training_shape(spec, batch, images, labels, initial_parameters, precision, loss_scaling),
          images, labels, initial_parameters),
      spec_(spec),
      buffers_(cnn_gpu_buffers(spec_, batch, precision)) {
  // Every device buffer, sized by the model the benchmarks plan with (cnn_cuda_memory.hpp); the
  // core has allocated the parameters, the batch, the logits, the loss and the loss scale.
  cublas_workspace_ = allocate(buffers_.cublas_workspace);
  products_ = std::make_unique<Products>(stream());
  const cublasHandle_t handle = products_->handle.get();
  // After cublasSetStream (in CublasHandle), which resets the workspace to cuBLAS's own pool.
  GPUBENCH_CUBLAS_CHECK(
      cublasSetWorkspace(handle, cublas_workspace_.data(), cublas_workspace_.bytes()));
  // The default math mode allows no TF32; set it explicitly so nothing inherited changes that.
  GPUBENCH_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));

  // The products, row-major matrices through column-major cuBLAS (kernels/gemm/gemm_cuda.hpp): a
  // row-major r x c matrix with leading dimension c has the bytes of the column-major c x r
  // matrix, its transpose. Names below are the row-major matrices the trainer holds.
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = spec_.conv[l];
    const int patch = shape.patch();  // K = in_channels * 25
    const int out = shape.out_channels;
    const int columns = static_cast<int>(columns_of(shape, batch));  // N = batch * pixels
    // Y (out x N) = W (out x K) columns (K x N). Column-major Y^T (N x out) = columns^T W^T: the
    // columns' bytes are columns^T (N x K, ld N), W's bytes are W^T (K x out, ld K), as stored.
    products_->conv_forward[l] = {CUBLAS_OP_N, CUBLAS_OP_N,     /*m=*/columns, /*n=*/out,
                                  /*k=*/patch, /*lda=*/columns, /*ldb=*/patch, /*ldc=*/columns};
    // dW (out x K) = dY (out x N) columns^T (N x K). Column-major dW^T (K x out, ld K) = columns
    // dY^T: the columns' bytes (N x K, ld N) transposed back, dY's bytes dY^T (N x out, ld N).
    products_->conv_weight_gradient[l] = {CUBLAS_OP_T,     CUBLAS_OP_N,   /*m=*/patch,
                                          /*n=*/out,       /*k=*/columns, /*lda=*/columns,
                                          /*ldb=*/columns, /*ldc=*/patch};
    // dcolumns (K x N) = W^T (K x out) dY (out x N). Column-major dcolumns^T (N x K, ld N) = dY^T
    // W: dY's bytes dY^T (N x out, ld N), W's bytes W^T (K x out, ld K) transposed back.
    products_->conv_input_gradient[l] = {CUBLAS_OP_N,   CUBLAS_OP_T,    /*m=*/columns,
                                         /*n=*/patch,   /*k=*/out,      /*lda=*/columns,
                                         /*ldb=*/patch, /*ldc=*/columns};
  }
  for (int l = 0; l < kLinearLayers; ++l) {
    const int in = spec_.linear[l].in_features;
    const int out = spec_.linear[l].out_features;
    // Z (batch x out) = X (batch x in) W^T, W out x in. Column-major Z^T (out x batch, ld out) =
    // W X^T: W's bytes W^T (in x out, ld in) transposed back, X's bytes X^T (in x batch, ld in).
    products_->linear_forward[l] = {CUBLAS_OP_T, CUBLAS_OP_N, /*m=*/out,  /*n=*/batch,
                                    /*k=*/in,    /*lda=*/in,  /*ldb=*/in, /*ldc=*/out};
    // dW (out x in) = dZ^T (out x batch) X (batch x in). Column-major dW^T (in x out, ld in) =
    // X^T dZ: X's bytes X^T (in x batch, ld in), dZ's bytes dZ^T (out x batch, ld out) transposed
    // back.
    products_->linear_weight_gradient[l] = {CUBLAS_OP_N, CUBLAS_OP_T, /*m=*/in,    /*n=*/out,
                                            /*k=*/batch, /*lda=*/in,  /*ldb=*/out, /*ldc=*/in};
    // dX (batch x in) = dZ (batch x out) W (out x in). Column-major dX^T (in x batch, ld in) =
    // W^T dZ^T: W's bytes W^T (in x out, ld in), dZ's bytes dZ^T (out x batch, ld out).
    products_->linear_input_gradient[l] = {CUBLAS_OP_N, CUBLAS_OP_N, /*m=*/in,    /*n=*/batch,
                                           /*k=*/out,   /*lda=*/in,  /*ldb=*/out, /*ldc=*/in};
  }

  const cudaDataType_t ab_type = operand_type(precision);
  for (ColumnMajorProduct* layer_products :
       {products_->conv_forward, products_->conv_weight_gradient, products_->conv_input_gradient}) {
    for (int l = 0; l < kConvLayers; ++l) layer_products[l].ab_type = ab_type;
  }
  for (ColumnMajorProduct* layer_products :
       {products_->linear_forward, products_->linear_weight_gradient,
        products_->linear_input_gradient}) {
    for (int l = 0; l < kLinearLayers; ++l) layer_products[l].ab_type = ab_type;
  }

  for (int l = 0; l < kConvLayers; ++l) {
    columns_[l] = allocate(buffers_.columns[l]);
    pooled_[l] = allocate(buffers_.pooled[l]);
    window_positions_[l] = allocate(buffers_.window_positions[l]);
  }
  channel_major_ = allocate(buffers_.channel_major);
  conv_output_ = allocate(buffers_.conv_output);
  pooled_gradient_ = allocate(buffers_.pooled_gradient);
  hidden_ = allocate(buffers_.hidden);
  hidden_gradient_ = allocate(buffers_.hidden_gradient);
  sum_partials_ = allocate(buffers_.sum_partials);  // 0 bytes (no allocation) when never needed
  sum_counters_ = allocate(buffers_.sum_counters);
  // 0 bytes (no allocation) in fp32.
  low_channel_major_gradient_ = allocate(buffers_.low_channel_major_gradient);
  low_features_ = allocate(buffers_.low_features);
  low_hidden_ = allocate(buffers_.low_hidden);
  low_hidden_gradient_ = allocate(buffers_.low_hidden_gradient);
  column_gradient_ = allocate(buffers_.column_gradient);
  if (device_bytes() != buffers_.total()) {
    throw std::logic_error("CnnGpuTrainer allocated " + std::to_string(device_bytes()) +
                           " bytes, cnn_gpu_buffers says " + std::to_string(buffers_.total()));
  }

  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(sum_counters_.data(), 0, sum_counters_.bytes(), stream()));
  // One eager step, then back to the initial parameters: every kernel and cuBLAS's own
  // initialisation are loaded and done here, never for the first time inside a graph capture
  // (lazy module loading, cuBLAS's first call on a handle) or a timed run. It also leaves the loss
  // and the gradient at the initial parameters in place for last_loss() and last_gradient().
  enqueue_step(/*observer=*/nullptr, /*concurrent=*/false);
  enqueue_reset();
  GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

CnnGpuTrainer::~CnnGpuTrainer() { wait_for_queued_work(); }

int CnnGpuTrainer::launches_per_step() const {
  const int fp32_launches =
      kConvLayers * (kLaunchesPerConvForward + kLaunchesPerConvBackward) +
      (kConvLayers - 1) * kLaunchesPerConvInputGradient +
      kLinearLayers * (kLaunchesPerLinearForward + kLaunchesPerLinearBackward) +
      /*loss*/ 1 + /*update*/ 1;
  switch (precision()) {
    case TrainingPrecision::fp32:
      return fp32_launches;
    case TrainingPrecision::bf16:
      return fp32_launches + kMixedCastLaunches;
    case TrainingPrecision::fp16:
      return fp32_launches + kMixedCastLaunches + kLossScalingLaunches;
  }
  return fp32_launches;
}

// One step, fp32 or mixed: the same operations in the same order. A mixed step reads the 2-byte
// operands (`low` buffers, written by im2col, the pool's backward or a cast) where the fp32 step
// reads the fp32 ones; every product still writes fp32.
void CnnGpuTrainer::enqueue_step(StepObserver* observer, bool /*concurrent*/) {
  const cudaStream_t stream = this->stream();
  const cublasHandle_t handle = products_->handle.get();
  const Products& products = *products_;
  const TrainingPrecision precision = this->precision();
  const bool mixed = this->mixed();
  const int batch = this->batch();
  const auto rows = static_cast<std::size_t>(batch);
  const bool relu = spec_.relu;
  const float* parameters = device_parameters();
  float* gradient = device_gradient();
  float* channel_major = channel_major_.as<float>();
  float* pooled_gradient = pooled_gradient_.as<float>();
  // A product's operand: the fp32 buffer, or in a mixed step its 2-byte copy.
  const auto operand = [mixed](const void* fp32, const DeviceBuffer& low) -> const void* {
    return mixed ? low.data() : fp32;
  };
  constexpr int kFc1 = 0;
  constexpr int kFc2 = 1;
  // The weights the products read: the fp32 parameters, or their 2-byte copy at the same offset.
  const auto weights = [&](int layer) { return weights_operand(spec_.weight_offset(layer)); };
  const auto biases = [&](int layer) { return parameters + spec_.bias_offset(layer); };
  const auto weight_gradient = [&](int layer) { return gradient + spec_.weight_offset(layer); };
  const auto bias_gradient = [&](int layer) { return gradient + spec_.bias_offset(layer); };
  const int fc1 = kConvLayers + kFc1;  // layer index in the parameter layout
  const int fc2 = kConvLayers + kFc2;

  // Forward: each convolution reads the previous pool's output (the images for conv1).
  const float* input = device_inputs();
  for (int l = 0; l < kConvLayers; ++l) {
    const ConvShape& shape = spec_.conv[l];
    const ConvOperationNames& names = kConvNames[l];
    void* columns = columns_[l].data();
    {
      const ObservedOperation operation(observer, names.im2col);
      GPUBENCH_CUDA_CHECK(cnn::launch_im2col(input, batch, shape.in_channels, shape.size, columns,
                                             precision, stream));
    }
    {
      const ObservedOperation operation(observer, names.gemm);
      GPUBENCH_CUBLAS_CHECK(
          products.conv_forward[l].run(handle, columns, weights(l), channel_major));
    }
    {
      const ObservedOperation operation(observer, names.bias);
      GPUBENCH_CUDA_CHECK(cnn::launch_conv_bias_to_nchw(channel_major, biases(l), batch,
                                                        shape.out_channels, shape.pixels(), relu,
                                                        conv_output_.as<float>(), stream));
    }
    {
      const ObservedOperation operation(observer, names.pool_forward);
      GPUBENCH_CUDA_CHECK(cnn::launch_max_pool_forward(
          conv_output_.as<float>(), batch, shape.out_channels, shape.size, pooled_[l].as<float>(),
          window_positions_[l].as<std::uint8_t>(), stream));
    }
    input = pooled_[l].as<float>();
  }
  // The last pool's NCHW output is fc1's batch x 1024 input in torch.flatten order as it lies.
  const float* features = input;
  const void* features_operand = operand(features, low_features_);
  float* hidden = hidden_.as<float>();
  const void* hidden_operand = operand(hidden, low_hidden_);
  float* logits = this->logits();
  {
    const ObservedOperation operation(observer, kLinearForwardNames[kFc1]);
    const int out = spec_.linear[kFc1].out_features;
    if (mixed) {
      GPUBENCH_CUDA_CHECK(launch_convert(low_features_.data(), features,
                                         rows * spec_.linear[kFc1].in_features, precision, stream));
    }
    GPUBENCH_CUBLAS_CHECK(
        products.linear_forward[kFc1].run(handle, weights(fc1), features_operand, hidden));
    GPUBENCH_CUDA_CHECK(cnn::launch_linear_bias(hidden, biases(fc1), batch, out, stream));
    if (mixed) {
      GPUBENCH_CUDA_CHECK(
          launch_convert(low_hidden_.data(), hidden, rows * out, precision, stream));
    }
  }
  {
    const ObservedOperation operation(observer, kLinearForwardNames[kFc2]);
    GPUBENCH_CUBLAS_CHECK(
        products.linear_forward[kFc2].run(handle, weights(fc2), hidden_operand, logits));
    GPUBENCH_CUDA_CHECK(cnn::launch_linear_bias(logits, biases(fc2), batch,
                                                spec_.linear[kFc2].out_features, stream));
  }
  {
    const ObservedOperation operation(observer, "loss");
    enqueue_loss();
  }

  // Backward. logits now holds dlogits. A linear layer's bias gradient sums its batch x out
  // gradient over the rows: channel c at c, element (row) e at e * out.
  const void* logits_gradient = this->logits_gradient();
  float* sum_partials = sum_partials_.as<float>();
  unsigned* sum_counters = sum_counters_.as<unsigned>();
  float* hidden_gradient = hidden_gradient_.as<float>();
  const void* hidden_gradient_operand = operand(hidden_gradient, low_hidden_gradient_);
  {
    const ObservedOperation operation(observer, kLinearBackwardNames[kFc2]);
    const int out = spec_.linear[kFc2].out_features;
    GPUBENCH_CUBLAS_CHECK(products.linear_weight_gradient[kFc2].run(
        handle, hidden_operand, logits_gradient, weight_gradient(fc2)));
    GPUBENCH_CUDA_CHECK(
        cnn::launch_channel_sums(logits_gradient, precision, out, /*channel_stride=*/1, batch,
                                 /*element_stride=*/static_cast<std::size_t>(out),
                                 bias_gradient(fc2), sum_partials, sum_counters, stream));
    GPUBENCH_CUBLAS_CHECK(products.linear_input_gradient[kFc2].run(
        handle, weights(fc2), logits_gradient, hidden_gradient));
    if (mixed) {
      GPUBENCH_CUDA_CHECK(launch_convert(low_hidden_gradient_.data(), hidden_gradient,
                                         rows * spec_.linear[kFc2].in_features, precision, stream));
    }
  }
  {
    const ObservedOperation operation(observer, kLinearBackwardNames[kFc1]);
    const int out = spec_.linear[kFc1].out_features;
    GPUBENCH_CUBLAS_CHECK(products.linear_weight_gradient[kFc1].run(
        handle, features_operand, hidden_gradient_operand, weight_gradient(fc1)));
    GPUBENCH_CUDA_CHECK(cnn::launch_channel_sums(
        hidden_gradient_operand, precision, out, /*channel_stride=*/1, batch,
        /*element_stride=*/static_cast<std::size_t>(out), bias_gradient(fc1), sum_partials,
        sum_counters, stream));
    GPUBENCH_CUBLAS_CHECK(products.linear_input_gradient[kFc1].run(
        handle, weights(fc1), hidden_gradient_operand, pooled_gradient));
  }
  // A convolution's output gradient dY: channel_major in fp32, its own 2-byte buffer when mixed
  // (channel_major keeps the fp32 product outputs of the forward pass).
  void* output_gradient = mixed ? low_channel_major_gradient_.data() : channel_major;
  for (int l = kConvLayers - 1; l >= 0; --l) {
    const ConvShape& shape = spec_.conv[l];
    const ConvOperationNames& names = kConvNames[l];
    const void* columns = columns_[l].data();
    const int column_count = static_cast<int>(columns_of(shape, batch));
    {
      // dY of this convolution, channel-major, from the gradient of its pool's output.
      const ObservedOperation operation(observer, names.pool_backward);
      GPUBENCH_CUDA_CHECK(cnn::launch_max_pool_backward(
          pooled_gradient, window_positions_[l].as<std::uint8_t>(), pooled_[l].as<float>(), relu,
          batch, shape.out_channels, shape.size, output_gradient, precision, stream));
    }
    {
      // A convolution's bias gradient sums its channel-major gradient along each row.
      const ObservedOperation operation(observer, names.weight_gradient);
      GPUBENCH_CUBLAS_CHECK(products.conv_weight_gradient[l].run(handle, columns, output_gradient,
                                                                 weight_gradient(l)));
      GPUBENCH_CUDA_CHECK(cnn::launch_channel_sums(
          output_gradient, precision, shape.out_channels,
          /*channel_stride=*/static_cast<std::size_t>(column_count), column_count,
          /*element_stride=*/1, bias_gradient(l), sum_partials, sum_counters, stream));
    }
    if (l == 0) break;  // nothing needs the images' gradient
    {
      // fp32: the columns were last read by the weight product above (stream order), so the input
      // gradient's columns overwrite them; mixed: the columns are 2-byte and the product writes
      // fp32, into column_gradient_. col2im then overwrites pooled_gradient, which the pool
      // backward above has consumed.
      float* column_gradient = mixed ? column_gradient_.as<float>() : columns_[l].as<float>();
      const ObservedOperation operation(observer, names.input_gradient);
      GPUBENCH_CUBLAS_CHECK(products.conv_input_gradient[l].run(handle, output_gradient, weights(l),
                                                                column_gradient));
      GPUBENCH_CUDA_CHECK(cnn::launch_col2im(column_gradient, batch, shape.in_channels, shape.size,
                                             pooled_gradient, stream));
    }
  }
  {
    const ObservedOperation operation(observer, "update");
    enqueue_update();
  }
}

}  // namespace gpubench::cuda
