#pragma once
// Dynamic loss scaling for mixed-precision training, with the rules and defaults of PyTorch's
// torch.cuda.amp.GradScaler (torch.amp.GradScaler("cuda"); torch.cpu.amp.GradScaler has the same
// defaults): init_scale 2^16, growth_factor 2, backoff_factor 0.5, growth_interval 2000.
//
// Why: in fp16 (5 exponent bits) small gradients underflow to zero. Multiplying the loss, and so
// every gradient, by a large scale S before the backward pass keeps them representable; dividing
// the gradients by S in fp32 before the update undoes it. Too large an S overflows instead, so:
// - a step whose unscaled gradients hold an inf or a NaN is skipped (the parameters stay as they
//   were) and S is multiplied by backoff_factor;
// - after growth_interval consecutive clean steps S is multiplied by growth_factor (unless that
//   would overflow fp32), probing for the largest scale that does not overflow;
// - both events restart the count of consecutive clean steps.
// bf16 has fp32's 8 exponent bits, so bf16 training does not need it (frameworks leave it off for
// bf16); the tests use it with the bf16 CPU trainer to check a skipped step end to end.
//
// Host-side state: a CPU trainer calls unscale() on its gradient and update() once per step; a GPU
// trainer checks its gradients on the device, reads the flag back and calls update(flag).
// One difference from PyTorch: unscale() checks the gradients after dividing by S, so a finite
// gradient that overflows only when unscaled (possible once S has fallen below 1) also skips the
// step, where PyTorch would write the inf into the parameters.

#include <cstddef>

namespace gpubench {

struct LossScalerSettings {
  float initial_scale = 65536.0F;  // 2^16
  float growth_factor = 2.0F;
  float backoff_factor = 0.5F;
  int growth_interval = 2000;  // consecutive clean steps before the scale grows
};

class LossScaler {
 public:
  // Throws std::invalid_argument naming the setting when the scale is not positive and finite,
  // growth_factor <= 1, backoff_factor outside (0, 1) or growth_interval < 1.
  explicit LossScaler(LossScalerSettings settings = {});

  // The factor to multiply the loss (or the loss gradient) by before the backward pass.
  float scale() const { return scale_; }

  // Multiplies `count` gradients by 1/scale() in place (1/S in double, then rounded to float, as
  // PyTorch does; exact while S is a power of two). True when every unscaled gradient is finite,
  // i.e. the step may be applied.
  bool unscale(float* gradients, std::size_t count) const;

  // Ends a step: `found_non_finite` true counts it as skipped and backs the scale off; false counts
  // a clean step and grows the scale after growth_interval clean steps in a row.
  void update(bool found_non_finite);

  long long steps() const { return steps_; }
  long long skipped_steps() const { return skipped_steps_; }
  // Clean steps since the scale last changed or a step was skipped (PyTorch's growth tracker).
  int clean_steps_in_a_row() const { return clean_steps_in_a_row_; }
  const LossScalerSettings& settings() const { return settings_; }

 private:
  LossScalerSettings settings_;
  float scale_;
  int clean_steps_in_a_row_ = 0;
  long long steps_ = 0;
  long long skipped_steps_ = 0;
};

// True when all `count` values are finite (no inf, no NaN).
bool all_finite(const float* values, std::size_t count);

}  // namespace gpubench
