#include "kernels/common/loss_scaler.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gpubench {

namespace {

// An fp32 value is inf or NaN exactly when its 8 exponent bits are all ones. Testing the bits keeps
// the loop an integer OR-reduction, which the compiler vectorises (a float reduction it may not
// reorder).
bool non_finite_bits(float value) { return !finite_bits(value); }

}  // namespace

bool all_finite(const float* values, std::size_t count) {
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) found |= non_finite_bits(values[i]);
  return !found;
}

void validate(const LossScalerSettings& settings) {
  if (!(settings.initial_scale > 0.0F) || !std::isfinite(settings.initial_scale)) {
    throw std::invalid_argument("loss scaler: initial scale " +
                                std::to_string(settings.initial_scale) +
                                " must be positive and finite");
  }
  if (!(settings.growth_factor > 1.0F) || !std::isfinite(settings.growth_factor)) {
    throw std::invalid_argument("loss scaler: growth factor " +
                                std::to_string(settings.growth_factor) + " must be above 1");
  }
  if (!(settings.backoff_factor > 0.0F && settings.backoff_factor < 1.0F)) {
    throw std::invalid_argument("loss scaler: backoff factor " +
                                std::to_string(settings.backoff_factor) +
                                " must be between 0 and 1");
  }
  if (settings.growth_interval < 1) {
    throw std::invalid_argument("loss scaler: growth interval " +
                                std::to_string(settings.growth_interval) + " must be at least 1");
  }
}

LossScaler::LossScaler(LossScalerSettings settings) : settings_(settings) {
  validate(settings_);
  state_.scale = settings_.initial_scale;
}

bool LossScaler::unscale(float* gradients, std::size_t count) const {
  const auto inverse = static_cast<float>(1.0 / static_cast<double>(state_.scale));
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) {
    gradients[i] *= inverse;
    found |= non_finite_bits(gradients[i]);
  }
  return !found;
}

void LossScaler::update(bool found_non_finite) {
  advance_loss_scale(state_, settings_, found_non_finite);
}

}  // namespace gpubench
