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
// The rule lives once, in advance_loss_scale() below, which compiles for the host and the device:
// a CPU trainer calls unscale() on its gradient and update() once per step; a GPU trainer keeps a
// LossScaleState in device memory and applies the same function in a one-thread kernel after its
// finiteness check (kernels/common/mixed_precision_kernels.cuh), so the step never waits for the
// host and can be captured in a CUDA graph. One difference from PyTorch: unscale() checks the
// gradients after dividing by S, so a finite gradient that overflows only when unscaled (possible
// once S has fallen below 1) also skips the step, where PyTorch would write the inf into the
// parameters.

#include <cstddef>
#include <cstdint>
#include <cstring>

// Functions the host and CUDA device code share.
#ifdef __CUDACC__
#define GPUBENCH_HOST_DEVICE __host__ __device__
#else
#define GPUBENCH_HOST_DEVICE
#endif

namespace gpubench {

struct LossScalerSettings {
  float initial_scale = 65536.0F;  // 2^16
  float growth_factor = 2.0F;
  float backoff_factor = 0.5F;
  int growth_interval = 2000;  // consecutive clean steps before the scale grows
};

// Where the dynamic scale stands: plain data, so a GPU trainer can keep it in device memory.
struct LossScaleState {
  float scale = LossScalerSettings{}.initial_scale;
  int clean_steps_in_a_row = 0;  // clean steps since the scale last changed or a step was skipped
  long long steps = 0;
  long long skipped_steps = 0;
};

// True unless `value` is inf or NaN: its 8 exponent bits all ones. A bit test, the same on the host
// and the device.
GPUBENCH_HOST_DEVICE inline bool finite_bits(float value) {
#ifdef __CUDA_ARCH__
  const std::uint32_t bits = __float_as_uint(value);
#else
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
#endif
  return (bits & 0x7F800000U) != 0x7F800000U;
}

// Ends a step with GradScaler's rules: `found_non_finite` counts it as skipped and backs the scale
// off; a clean step grows the scale after growth_interval clean steps in a row, unless growing
// would overflow fp32.
GPUBENCH_HOST_DEVICE inline void advance_loss_scale(LossScaleState& state,
                                                    const LossScalerSettings& settings,
                                                    bool found_non_finite) {
  ++state.steps;
  if (found_non_finite) {
    ++state.skipped_steps;
    state.scale *= settings.backoff_factor;
    state.clean_steps_in_a_row = 0;
    return;
  }
  if (state.clean_steps_in_a_row + 1 < settings.growth_interval) {
    ++state.clean_steps_in_a_row;
    return;
  }
  const float grown = state.scale * settings.growth_factor;
  if (finite_bits(grown)) state.scale = grown;  // never grow past fp32's range into inf
  state.clean_steps_in_a_row = 0;
}

// Throws std::invalid_argument naming the setting when the scale is not positive and finite,
// growth_factor <= 1, backoff_factor outside (0, 1) or growth_interval < 1.
void validate(const LossScalerSettings& settings);

class LossScaler {
 public:
  // Throws as validate(settings) does.
  explicit LossScaler(LossScalerSettings settings = {});

  // The factor to multiply the loss (or the loss gradient) by before the backward pass.
  float scale() const { return state_.scale; }

  // Multiplies `count` gradients by 1/scale() in place (1/S in double, then rounded to float, as
  // PyTorch does; exact while S is a power of two). True when every unscaled gradient is finite,
  // i.e. the step may be applied.
  bool unscale(float* gradients, std::size_t count) const;

  // Ends a step: `found_non_finite` true counts it as skipped and backs the scale off; false counts
  // a clean step and grows the scale after growth_interval clean steps in a row.
  void update(bool found_non_finite);

  long long steps() const { return state_.steps; }
  long long skipped_steps() const { return state_.skipped_steps; }
  // Clean steps since the scale last changed or a step was skipped (PyTorch's growth tracker).
  int clean_steps_in_a_row() const { return state_.clean_steps_in_a_row; }
  const LossScalerSettings& settings() const { return settings_; }
  const LossScaleState& state() const { return state_; }

 private:
  LossScalerSettings settings_;
  LossScaleState state_;
};

// True when all `count` values are finite (no inf, no NaN).
bool all_finite(const float* values, std::size_t count);

}  // namespace gpubench
