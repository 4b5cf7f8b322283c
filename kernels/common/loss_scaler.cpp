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
constexpr std::uint32_t kExponentBits = 0x7F800000U;

bool non_finite_bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits & kExponentBits) == kExponentBits;
}

}  // namespace

bool all_finite(const float* values, std::size_t count) {
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) found |= non_finite_bits(values[i]);
  return !found;
}

LossScaler::LossScaler(LossScalerSettings settings)
    : settings_(settings), scale_(settings.initial_scale) {
  if (!(settings_.initial_scale > 0.0F) || !std::isfinite(settings_.initial_scale)) {
    throw std::invalid_argument("loss scaler: initial scale " +
                                std::to_string(settings_.initial_scale) +
                                " must be positive and finite");
  }
  if (!(settings_.growth_factor > 1.0F) || !std::isfinite(settings_.growth_factor)) {
    throw std::invalid_argument("loss scaler: growth factor " +
                                std::to_string(settings_.growth_factor) + " must be above 1");
  }
  if (!(settings_.backoff_factor > 0.0F && settings_.backoff_factor < 1.0F)) {
    throw std::invalid_argument("loss scaler: backoff factor " +
                                std::to_string(settings_.backoff_factor) +
                                " must be between 0 and 1");
  }
  if (settings_.growth_interval < 1) {
    throw std::invalid_argument("loss scaler: growth interval " +
                                std::to_string(settings_.growth_interval) + " must be at least 1");
  }
}

bool LossScaler::unscale(float* gradients, std::size_t count) const {
  const auto inverse = static_cast<float>(1.0 / static_cast<double>(scale_));
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) {
    gradients[i] *= inverse;
    found |= non_finite_bits(gradients[i]);
  }
  return !found;
}

void LossScaler::update(bool found_non_finite) {
  ++steps_;
  if (found_non_finite) {
    ++skipped_steps_;
    scale_ *= settings_.backoff_factor;
    clean_steps_in_a_row_ = 0;
    return;
  }
  if (clean_steps_in_a_row_ + 1 < settings_.growth_interval) {
    ++clean_steps_in_a_row_;
    return;
  }
  const float grown = scale_ * settings_.growth_factor;
  if (std::isfinite(grown)) scale_ = grown;  // never grow past fp32's range into inf
  clean_steps_in_a_row_ = 0;
}

}  // namespace gpubench
