#pragma once
// Mixed-precision (bf16) training of the MLP of mlp_spec.hpp on the CPU, the way frameworks run
// bf16 autocast:
// - every layer product takes bf16 operands and accumulates and writes fp32 (OpenBLAS's
//   cblas_sbgemm): the forward Z = A W, the weight gradient A^T dZ and the input gradient dZ W^T;
//   the weights are rounded to bf16 from the fp32 master weights at the start of every step, the
//   inputs, activations and loss gradients when they are about to enter a product;
// - bias, ReLU, softmax cross-entropy, the bias gradient (a column sum) and the SGD update run in
//   fp32, on fp32 values: the loss and its gradient are computed from the fp32 logits the
//   products wrote, and the update goes into the fp32 master weights, so updates smaller than
//   bf16's resolution (unit roundoff 2^-8) still accumulate.
// Dynamic loss scaling (kernels/common/loss_scaler.hpp) is off by default: bf16 has fp32's
// exponent range, and frameworks leave it off for bf16. When it is on, the loss gradient is
// multiplied by the scale before it is rounded to bf16, the gradient is unscaled in fp32, and a
// step with an inf or NaN gradient leaves the master weights untouched.

#include <memory>
#include <string>
#include <vector>

#include "kernels/common/loss_scaler.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {
namespace cpu {

// How the bf16 layer products are computed. Both take the same bf16 operands and accumulate and
// write fp32.
enum class Bf16Product {
  // OpenBLAS's cblas_sbgemm, looked up in the loaded OpenBLAS at run time: OpenBLAS exports it
  // only when built with BUILD_BFLOAT16, which Debian's 0.3.21 package is not, so a direct call
  // would not link there.
  openblas_sbgemm,
  // The bf16 operands widened to fp32 (exactly) and multiplied with cblas_sgemm: the same products
  // and fp32 sums as sbgemm, in another order, at fp32 speed plus the widening. It checks the
  // numerics of the mixed-precision step where sbgemm is missing; no benchmark row uses it.
  widened_sgemm,
};

// True when the CPU has AVX512_BF16 (VDPBF16PS, VCVTNEPS2BF16), which OpenBLAS's bf16 kernels use.
bool cpu_has_avx512_bf16();
// True when the loaded OpenBLAS exports cblas_sbgemm.
bool openblas_has_sbgemm();
// Empty when native bf16 products can run here (both of the above); otherwise why not, for a
// skipped row.
std::string bf16_unavailable_reason();

class MlpBf16Trainer {
 public:
  // The workspace (bf16 copies of weights and activations, fp32 activations, gradients) is sized
  // once for `batch` rows, so a step allocates nothing. Throws std::runtime_error when `product`
  // is openblas_sbgemm and the loaded OpenBLAS has no cblas_sbgemm. With `workers` > 1 the batch
  // is split into shards as in the fp32 trainer (kernels/mlp/mlp_cpu.hpp): the weights are rounded
  // to bf16 once per step for every shard, each shard rounds its own inputs and activations, and
  // the shards' fp32 gradients are summed in shard order before the loss scaler sees them.
  MlpBf16Trainer(const MlpSpec& spec, int batch, Bf16Product product, int workers = 1);
  ~MlpBf16Trainer();
  MlpBf16Trainer(const MlpBf16Trainer&) = delete;
  MlpBf16Trainer& operator=(const MlpBf16Trainer&) = delete;
  MlpBf16Trainer(MlpBf16Trainer&&) noexcept;
  MlpBf16Trainer& operator=(MlpBf16Trainer&&) noexcept;

  // One SGD step on `batch` rows: forward, fp32 loss, backward, fp32 update of `parameters` (the
  // master weights, mlp_spec.hpp's layout). Returns the mean loss of the forward pass. With loss
  // scaling on, a step whose gradient is not finite changes no parameter.
  float step(float* parameters, const float* inputs, const int* labels);

  // Mean loss and its gradient with respect to every parameter (unscaled), no update.
  float loss_and_gradient(const float* parameters, const float* inputs, const int* labels,
                          float* gradient);

  // Turns dynamic loss scaling on, starting from `settings`.
  void enable_loss_scaling(const LossScalerSettings& settings = {});
  // The scaler's state (scale, skipped steps); null while loss scaling is off.
  const LossScaler* loss_scaler() const;

  int batch() const;
  const MlpSpec& spec() const;

 private:
  struct Workspace;
  std::unique_ptr<Workspace> workspace_;
};

}  // namespace cpu
}  // namespace gpubench
