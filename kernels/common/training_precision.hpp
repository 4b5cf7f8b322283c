#pragma once
// The number format of a trainer's layer products, shared by every trainer (a workload's spec may
// give it a name of its own).

namespace gpubench {

// fp32: every path. bf16 and fp16: mixed precision as PyTorch's autocast does it: the products read
// 2-byte copies of the weights and activations and accumulate in fp32; the loss, the gradients and
// the master weights the update changes stay fp32. fp16 (5 exponent bits) also needs dynamic loss
// scaling (kernels/common/loss_scaler.hpp); bf16 has fp32's exponent range and trains without it,
// as frameworks do.
enum class TrainingPrecision { fp32, bf16, fp16 };

// "fp32", "bf16", "fp16": the precision:<name> of benchmark rows.
constexpr const char* training_precision_name(TrainingPrecision precision) {
  switch (precision) {
    case TrainingPrecision::fp32:
      return "fp32";
    case TrainingPrecision::bf16:
      return "bf16";
    case TrainingPrecision::fp16:
      return "fp16";
  }
  return "unknown";
}

// How far a mixed-precision loss may be from the fp32 loss of the same step, relative. bf16 rounds
// every product operand (unit roundoff 2^-8), which moves a product term by at most 2^-7 relative;
// 2^-5 is four times that. Measured far smaller (a bf16 trainer on the CPU: at most 0.8%, at the
// end of the Iris run), since the rounding errors of many terms mostly cancel, while a real fault
// (a stale copy, a wrong operand, a missing unscale) moves the loss by far more within a few steps.
// fp16 (2^-11) rounds less, so the same bound holds for it with room to spare.
inline constexpr double kMixedPrecisionLossTolerance = 0x1p-5;

}  // namespace gpubench
