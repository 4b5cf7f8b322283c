#include "kernels/common/seeded_random.hpp"

#include <cmath>

namespace gpubench {

double SeededRandom::normal() {
  // 1 - uniform() is in (0, 1], so the logarithm is finite.
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
  const double angle = 2.0 * 3.14159265358979323846 * uniform();
  return radius * std::cos(angle);
}

}  // namespace gpubench
