#include "harness/validation.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

namespace gpubench {

CheckResult check_gemm_sampled(int m, int n, int k, const ElementReader& a, const ElementReader& b,
                               const ElementReader& c, const GemmRoundoff& roundoff, int samples,
                               std::uint64_t seed) {
  std::vector<std::pair<int, int>> positions = {{0, 0}, {0, n - 1}, {m - 1, 0}, {m - 1, n - 1}};
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int> row(0, m - 1);
  std::uniform_int_distribution<int> column(0, n - 1);
  for (int sample = 0; sample < samples; ++sample)
    positions.emplace_back(row(generator), column(generator));

  CheckResult result;
  result.passed = true;
  const double relative_bound = 2.0 * (2.0 * roundoff.operand + k * roundoff.accumulator);
  for (const auto& [i, j] : positions) {
    double reference = 0;
    double magnitude = 0;
    for (int l = 0; l < k; ++l) {
      const double product =
          a(static_cast<std::size_t>(i) * k + l) * b(static_cast<std::size_t>(l) * n + j);
      reference += product;
      magnitude += std::fabs(product);
    }
    const double value = c(static_cast<std::size_t>(i) * n + j);
    const double error = std::fabs(value - reference);
    const double bound =
        relative_bound * magnitude + 2.0 * roundoff.output * std::fabs(reference) + 1e-300;
    if (!std::isfinite(value) || !(error <= bound)) {
      if (result.passed) {
        std::ostringstream message;
        message << "wrong result at C[" << i << "][" << j << "] of " << m << "x" << n << "x" << k
                << ": got " << value << ", expected " << reference << " (error " << error
                << " > bound " << bound << ")";
        result.message = message.str();
      }
      result.passed = false;
    }
    if (std::isfinite(value)) {
      result.max_absolute_error = std::max(result.max_absolute_error, error);
      result.worst_error_over_bound = std::max(result.worst_error_over_bound, error / bound);
    } else {
      result.worst_error_over_bound = INFINITY;
    }
  }
  if (result.passed) result.message = "ok";
  return result;
}

void fill_uniform(float* values, std::size_t count, std::uint64_t seed) {
  // splitmix64 (Steele, Lea, Flood 2014): one multiply-xorshift chain per value, about ten times
  // faster than mt19937 + uniform_real_distribution, which matters for 8192^2 operands.
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    // Top 24 bits -> [0, 1) exactly representable in float, then to [-1, 1).
    const float value = static_cast<float>(z >> 40) * 0x1p-24F * 2.0F - 1.0F;
    values[i] = value == 0.0F ? 0.5F : value;
  }
}

}  // namespace gpubench
