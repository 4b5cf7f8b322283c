#include "kernels/mlp/mlp_cuda_fused.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/common/block_reduce.cuh"

namespace gpubench::cuda {

namespace {

constexpr int kWarp = kWarpSize;
constexpr int kMaxThreads = 1024;
// Phase B gives each parameter up to this many threads (more parallel dot products, shorter
// loops) while the block stays at or under 512 threads when the parameters allow.
constexpr int kTargetThreads = 512;

// Everything the kernel needs to know about the net and the shared-memory layout (offsets in
// floats from the start of dynamic shared memory). Passed by value: it lives in the kernel's
// parameter space.
struct FusedLayout {
  int layers;
  int width[kFusedMaxLayers + 1];          // width[0] = inputs, width[layers] = classes
  int weight_offset[kFusedMaxLayers + 1];  // W_l's first float; [layers] = parameter count
  int activation_offset[kFusedMaxLayers];  // hidden layer h's output: width[h + 1] x stride
  int delta_offset[kFusedMaxLayers];       // layer l's dZ: width[l + 1] x stride
  int ones_offset;                         // stride ones: the bias's "input" row
  int inputs_offset;                       // width[0] x stride, the batch transposed
  int warp_loss_offset;                    // 32 per-warp loss sums
  int labels_offset;                       // batch ints
  int batch;
  int stride;
  int lanes_per_parameter;
  float learning_rate;
};

// Phase A in registers for one-hidden-layer shapes this small; the block is then capped at
// kRegisterThreads so that each thread may use up to 128 registers (the hoisted weight loads of
// the Iris shape need about 90; at 1024 threads the limit would be 64 and they would spill).
constexpr bool in_registers(int inputs, int hidden, int classes) {
  return inputs + 2 * hidden + 2 * classes <= 48;
}
constexpr int kRegisterThreads = 512;

// Widths known only at run time (copied from the layout).
struct RuntimeShape {
  static constexpr bool kInRegisters = false;
  int layer_count;
  int widths[kFusedMaxLayers + 1];
  int weight_offsets[kFusedMaxLayers + 1];
  __device__ explicit RuntimeShape(const FusedLayout& layout) : layer_count(layout.layers) {
    for (int k = 0; k <= kFusedMaxLayers; ++k) {
      widths[k] = layout.width[k];
      weight_offsets[k] = layout.weight_offset[k];
    }
  }
  __device__ int layers() const { return layer_count; }
  __device__ int width(int k) const { return widths[k]; }
  __device__ int weight_offset(int l) const { return weight_offsets[l]; }
};

// One hidden layer with compile-time widths: every loop below has a constant trip count.
template <int kInputs, int kHidden, int kClasses>
struct StaticShape {
  // Small enough to keep a sample's inputs, activations and gradients in registers.
  static constexpr bool kInRegisters = in_registers(kInputs, kHidden, kClasses);
  __device__ explicit StaticShape(const FusedLayout& /*layout*/) {}
  __device__ static constexpr int layers() { return 2; }
  __device__ static constexpr int width(int k) {
    return k == 0 ? kInputs : (k == 1 ? kHidden : kClasses);
  }
  __device__ static constexpr int weight_offset(int l) {
    return l == 0   ? 0
           : l == 1 ? (kInputs + 1) * kHidden
                    : (kInputs + 1) * kHidden + (kHidden + 1) * kClasses;
  }
};

// values[index] by compare and select: stays in registers where values[index] with a run-time
// index would send the array to local memory.
__device__ float* pick(float* const (&values)[kFusedMaxLayers], int index) {
  float* result = values[0];
#pragma unroll
  for (int k = 1; k < kFusedMaxLayers; ++k) {
    if (index == k) result = values[k];
  }
  return result;
}

// Phase A for one sample of a small compile-time shape (one hidden layer) with everything in
// registers: every weight load comes before the first shared-memory store, so the loads are
// issued together instead of waiting behind stores the compiler cannot prove independent.
// Writes the hidden activation, the hidden dZ and the output dZ (for phase B); returns the loss.
template <typename Shape>
__device__ float train_sample_in_registers(const float* __restrict__ weights,
                                           const float* __restrict__ x,
                                           float* __restrict__ hidden_out,
                                           float* __restrict__ hidden_delta,
                                           float* __restrict__ out_delta, int b, int stride,
                                           int label, float inverse_batch) {
  constexpr int kInputs = Shape::width(0);
  constexpr int kHidden = Shape::width(1);
  constexpr int kClasses = Shape::width(2);
  const float* w1 = weights;
  const float* b1 = w1 + kInputs * kHidden;
  const float* w2 = b1 + kHidden;
  const float* b2 = w2 + kHidden * kClasses;
  float in[kInputs];
#pragma unroll
  for (int i = 0; i < kInputs; ++i) in[i] = x[i * stride + b];
  float h[kHidden];
#pragma unroll
  for (int j = 0; j < kHidden; ++j) {
    float z = b1[j];
#pragma unroll
    for (int i = 0; i < kInputs; ++i) z = fmaf(w1[i * kHidden + j], in[i], z);
    h[j] = fmaxf(z, 0.0F);
  }
  float z[kClasses];
#pragma unroll
  for (int k = 0; k < kClasses; ++k) {
    float acc = b2[k];
#pragma unroll
    for (int j = 0; j < kHidden; ++j) acc = fmaf(w2[j * kClasses + k], h[j], acc);
    z[k] = acc;
  }
  float largest = z[0];
  float label_logit = z[0];
#pragma unroll
  for (int k = 1; k < kClasses; ++k) {
    largest = fmaxf(largest, z[k]);
    if (k == label) label_logit = z[k];  // a select, not a run-time index into registers
  }
  float sum = 0.0F;
#pragma unroll
  for (int k = 0; k < kClasses; ++k) {
    z[k] = expf(z[k] - largest);
    sum += z[k];
  }
  const float loss = (largest - label_logit) + logf(sum);
  const float scale = inverse_batch / sum;
#pragma unroll
  for (int k = 0; k < kClasses; ++k) z[k] = z[k] * scale - (k == label ? inverse_batch : 0.0F);
  float dh[kHidden];
#pragma unroll
  for (int j = 0; j < kHidden; ++j) {
    float s = 0.0F;
#pragma unroll
    for (int k = 0; k < kClasses; ++k) s = fmaf(w2[j * kClasses + k], z[k], s);
    dh[j] = h[j] > 0.0F ? s : 0.0F;
  }
#pragma unroll
  for (int j = 0; j < kHidden; ++j) {
    hidden_out[j * stride + b] = h[j];
    hidden_delta[j * stride + b] = dh[j];
  }
#pragma unroll
  for (int k = 0; k < kClasses; ++k) out_delta[k * stride + b] = z[k];
  return loss;
}

template <typename Shape>
__global__ void __launch_bounds__(Shape::kInRegisters ? kRegisterThreads : kMaxThreads)
    fused_train_kernel(FusedLayout layout, float* parameters, const float* inputs,
                       const int* labels, float* loss_history, int epochs) {
  extern __shared__ float shared[];
  const Shape shape(layout);
  const int layers = shape.layers();
  const int batch = layout.batch;
  const int stride = layout.stride;
  const int parameter_count = shape.weight_offset(layers);
  const int thread = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const float inverse_batch = 1.0F / static_cast<float>(batch);

  float* __restrict__ weights = shared;  // the whole parameter vector, updated in place
  float* __restrict__ ones = shared + layout.ones_offset;
  float* __restrict__ x = shared + layout.inputs_offset;
  float* __restrict__ warp_loss = shared + layout.warp_loss_offset;
  int* __restrict__ label_of = reinterpret_cast<int*>(shared + layout.labels_offset);
  // Per-layer rows (indexed by constants once the layer loops are unrolled: registers).
  float* activation[kFusedMaxLayers];  // hidden layer h's output
  float* delta[kFusedMaxLayers];       // layer l's dZ
#pragma unroll
  for (int l = 0; l < kFusedMaxLayers; ++l) {
    activation[l] = shared + layout.activation_offset[l];
    delta[l] = shared + layout.delta_offset[l];
  }

  // Load: parameters as they are, the batch transposed to feature-major (coalesced reads).
  for (int i = thread; i < parameter_count; i += threads) weights[i] = parameters[i];
  const int inputs_per_row = shape.width(0);
  for (int i = thread; i < batch * inputs_per_row; i += threads) {
    const int row = i / inputs_per_row;
    x[(i - row * inputs_per_row) * stride + row] = inputs[i];
  }
  for (int b = thread; b < stride; b += threads) ones[b] = 1.0F;
  for (int b = thread; b < batch; b += threads) label_of[b] = labels[b];
  __syncthreads();

  const int split = layout.lanes_per_parameter;
  const int groups = threads / split;
  const int group = thread / split;
  const int lane_in_group = thread % split;

  for (int epoch = 0; epoch < epochs; ++epoch) {
    // Phase A: one sample per thread. Forward, loss, and dZ of every layer.
    float my_loss = 0.0F;
    if constexpr (Shape::kInRegisters) {
      for (int b = thread; b < batch; b += threads) {
        my_loss += train_sample_in_registers<Shape>(weights, x, activation[0], delta[0], delta[1],
                                                    b, stride, label_of[b], inverse_batch);
      }
    }
    for (int b = thread; !Shape::kInRegisters && b < batch; b += threads) {
      const float* previous = x;
#pragma unroll
      for (int l = 0; l < layers; ++l) {
        const int fan_in = shape.width(l);
        const int fan_out = shape.width(l + 1);
        const float* w = weights + shape.weight_offset(l);
        const float* bias = w + fan_in * fan_out;
        const bool last = l == layers - 1;
        float* out = last ? pick(delta, l) : pick(activation, l);
        for (int j = 0; j < fan_out; ++j) {
          float z = bias[j];
#pragma unroll 8
          for (int i = 0; i < fan_in; ++i)
            z = fmaf(w[i * fan_out + j], previous[i * stride + b], z);
          out[j * stride + b] = last ? z : fmaxf(z, 0.0F);
        }
        previous = out;
      }
      // Softmax cross-entropy of this sample (max subtracted first), dZ = (p - one_hot) / batch.
      const int classes = shape.width(layers);
      float* z = pick(delta, layers - 1) + b;
      const int label = label_of[b];
      float largest = z[0];
      for (int k = 1; k < classes; ++k) largest = fmaxf(largest, z[k * stride]);
      const float label_logit = z[label * stride];
      float sum = 0.0F;
      for (int k = 0; k < classes; ++k) {
        const float e = expf(z[k * stride] - largest);
        z[k * stride] = e;
        sum += e;
      }
      my_loss += (largest - label_logit) + logf(sum);
      const float scale = inverse_batch / sum;
      for (int k = 0; k < classes; ++k) {
        z[k * stride] = z[k * stride] * scale - (k == label ? inverse_batch : 0.0F);
      }
      // Backward to each hidden layer's dZ, through its ReLU.
#pragma unroll
      for (int l = layers - 1; l >= 1; --l) {
        const int fan_in = shape.width(l);
        const int fan_out = shape.width(l + 1);
        const float* w = weights + shape.weight_offset(l);
        const float* d = pick(delta, l);
        const float* a = pick(activation, l - 1);
        float* below = pick(delta, l - 1);
        for (int i = 0; i < fan_in; ++i) {
          float s = 0.0F;
          if (a[i * stride + b] > 0.0F) {
#pragma unroll 8
            for (int k = 0; k < fan_out; ++k) s = fmaf(w[i * fan_out + k], d[k * stride + b], s);
          }
          below[i * stride + b] = s;
        }
      }
    }
    my_loss = warp_sum(my_loss);  // every thread takes part, also those without a sample
    if (thread % kWarp == 0) warp_loss[thread / kWarp] = my_loss;
    __syncthreads();

    // Phase B: `split` threads per parameter: g = sum over the batch of input x dZ, then SGD.
    // Every thread runs the same number of passes, so the shuffles below see full warps.
    for (int base = 0; base < parameter_count; base += groups) {
      const int p = base + group;
      float g = 0.0F;
      if (p < parameter_count) {
        int l = 0;
#pragma unroll
        for (int next = 1; next < layers; ++next) {
          if (p >= shape.weight_offset(next)) l = next;
        }
        const int fan_in = shape.width(l);
        const int fan_out = shape.width(l + 1);
        const int q = p - shape.weight_offset(l);
        const int i = q / fan_out;
        const int j = q - i * fan_out;
        const float* a = i == fan_in ? ones : (l == 0 ? x : pick(activation, l - 1)) + i * stride;
        const float* d = pick(delta, l) + j * stride;
        // Four independent chains: the loads of four samples are in flight together instead of
        // each FMA waiting for its two shared-memory loads.
        float g1 = 0.0F;
        float g2 = 0.0F;
        float g3 = 0.0F;
        int b = lane_in_group;
        for (; b + 3 * split < batch; b += 4 * split) {
          g = fmaf(a[b], d[b], g);
          g1 = fmaf(a[b + split], d[b + split], g1);
          g2 = fmaf(a[b + 2 * split], d[b + 2 * split], g2);
          g3 = fmaf(a[b + 3 * split], d[b + 3 * split], g3);
        }
        for (; b < batch; b += split) g = fmaf(a[b], d[b], g);
        g = (g + g1) + (g2 + g3);
      }
      for (int offset = split / 2; offset > 0; offset /= 2) {
        g += __shfl_xor_sync(0xFFFFFFFFU, g, offset);
      }
      if (p < parameter_count && lane_in_group == 0) weights[p] -= layout.learning_rate * g;
    }
    // Warp 0 adds the per-warp losses with shuffles (a serial loop in one thread would hold
    // every other warp at the barrier below).
    if (thread < kWarp && loss_history != nullptr) {
      const float total = warp_sum(thread < threads / kWarp ? warp_loss[thread] : 0.0F);
      if (thread == 0) loss_history[epoch] = total * inverse_batch;
    }
    __syncthreads();
  }

  for (int i = thread; i < parameter_count; i += threads) parameters[i] = weights[i];
}

using KernelPointer = void (*)(FusedLayout, float*, const float*, const int*, float*, int);

bool is_shape(const MlpSpec& spec, int inputs, int hidden, int classes) {
  return spec.hidden.size() == 1 && spec.inputs == inputs && spec.hidden[0] == hidden &&
         spec.classes == classes;
}

KernelPointer kernel_for(const MlpSpec& spec) {
  if (is_shape(spec, 4, 10, 3)) return fused_train_kernel<StaticShape<4, 10, 3>>;
  if (is_shape(spec, 64, 32, 10)) return fused_train_kernel<StaticShape<64, 32, 10>>;
  return fused_train_kernel<RuntimeShape>;
}

FusedLayout layout_for(const MlpSpec& spec, const MlpFusedPlan& plan) {
  FusedLayout layout{};
  const int layers = spec.layer_count();
  layout.layers = layers;
  for (int l = 0; l < layers; ++l) {
    layout.width[l] = spec.fan_in(l);
    layout.weight_offset[l] = static_cast<int>(spec.weight_offset(l));
  }
  layout.width[layers] = spec.classes;
  layout.weight_offset[layers] = static_cast<int>(spec.parameter_count());
  const int stride = plan.stride;
  int offset = static_cast<int>(spec.parameter_count());
  layout.ones_offset = offset;
  offset += stride;
  layout.inputs_offset = offset;
  offset += spec.inputs * stride;
  for (int h = 0; h + 1 < layers; ++h) {
    layout.activation_offset[h] = offset;
    offset += spec.hidden[h] * stride;
  }
  for (int l = 0; l < layers; ++l) {
    layout.delta_offset[l] = offset;
    offset += spec.fan_out(l) * stride;
  }
  layout.warp_loss_offset = offset;
  offset += kWarp;
  layout.labels_offset = offset;
  layout.batch = plan.batch;
  layout.stride = stride;
  layout.lanes_per_parameter = plan.lanes_per_parameter;
  layout.learning_rate = spec.learning_rate;
  return layout;
}

}  // namespace

std::string MlpFusedPlan::why_not() const {
  return "does not fit on chip: needs " + std::to_string(shared_bytes) +
         " bytes of shared memory, " + std::to_string(available_bytes) + " available (network " +
         network + ", batch " + std::to_string(batch) + ")";
}

MlpFusedPlan plan_mlp_fused(const MlpSpec& spec, int batch, std::size_t available_shared_bytes) {
  spec.validate();
  validate_batch(spec, batch, /*rows_available=*/batch);
  if (spec.layer_count() > kFusedMaxLayers) {
    throw std::invalid_argument("the fused kernel handles at most " +
                                std::to_string(kFusedMaxLayers - 1) + " hidden layers, not " +
                                std::to_string(spec.hidden.size()));
  }
  MlpFusedPlan plan;
  plan.network = spec.describe();
  plan.batch = batch;
  // An odd stride puts feature f of sample b in bank (f * stride + b) mod 32: phase A's threads
  // (consecutive b) and phase B's groups (consecutive f) both spread over the banks.
  plan.stride = batch % 2 == 0 ? batch + 1 : batch;
  std::size_t rows = 1 + static_cast<std::size_t>(spec.inputs);          // ones + the batch
  for (int width : spec.hidden) rows += width;                           // activations
  for (int l = 0; l < spec.layer_count(); ++l) rows += spec.fan_out(l);  // dZ
  const std::size_t float_count =
      spec.parameter_count() + rows * static_cast<std::size_t>(plan.stride) + kWarp;
  plan.shared_bytes = float_count * sizeof(float) + static_cast<std::size_t>(batch) * sizeof(int);
  plan.available_bytes = available_shared_bytes;

  const auto parameters = static_cast<long long>(spec.parameter_count());
  int split = 1;
  while (split < kWarp && parameters * split * 2 <= kTargetThreads && split * 2 <= batch) {
    split *= 2;
  }
  plan.lanes_per_parameter = split;
  plan.specialised = kernel_for(spec) != fused_train_kernel<RuntimeShape>;
  const bool registers = plan.specialised && spec.hidden.size() == 1 &&
                         in_registers(spec.inputs, spec.hidden[0], spec.classes);
  const long long wanted = std::max<long long>(batch, parameters * split);
  plan.threads = static_cast<int>(std::clamp<long long>(
      (wanted + kWarp - 1) / kWarp * kWarp, kWarp, registers ? kRegisterThreads : kMaxThreads));
  return plan;
}

cudaError_t allow_mlp_fused_shared_memory(const MlpSpec& spec, const MlpFusedPlan& plan) {
  return cudaFuncSetAttribute(kernel_for(spec), cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(plan.shared_bytes));
}

cudaError_t launch_mlp_fused(const MlpSpec& spec, const MlpFusedPlan& plan, float* parameters,
                             const float* inputs, const int* labels, float* loss_history,
                             int epochs, cudaStream_t stream) {
  const FusedLayout layout = layout_for(spec, plan);
  kernel_for(spec)<<<1, plan.threads, plan.shared_bytes, stream>>>(layout, parameters, inputs,
                                                                   labels, loss_history, epochs);
  return cudaGetLastError();
}

}  // namespace gpubench::cuda
