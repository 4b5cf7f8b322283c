#pragma once
// Result checks. A fast wrong answer is a bug, not a result: every benchmark checks its output
// once, outside the timed loop, and reports SkipWithError with the measured error when it is wrong.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace gpubench {

struct CheckResult {
  bool passed = false;
  double worst_error_over_bound = 0;  // max over samples of |c - ref| / bound; <= 1 passes
  double max_absolute_error = 0;
  std::string message;  // "ok" or what failed, with the numbers
};

using ElementReader = std::function<double(std::size_t index)>;

// Checks `samples` entries of the row-major m x n product C = A * B (A m x k, B k x n) against a
// reference accumulated in double from the same operand values, plus the four corners.
// Bound per entry (a standard forward error bound for a dot product, Higham, "Accuracy and
// Stability of Numerical Algorithms", section 3.1, with a safety factor of 2):
//   |c - ref| <= 2 * (2 * u_operand + k * u_accumulator) * sum_l |a_il * b_lj|
//                + 2 * u_output * |ref| + tiny
// where u_operand is the rounding the hardware applies to operands that the reference does not see
// (tf32), u_accumulator the unit roundoff of the accumulation and u_output that of storing C
// (fp16/bf16 outputs). NaN or Inf never passes.
struct GemmRoundoff {
  double operand = 0;
  double accumulator = 0x1p-24;
  double output = 0;
};
CheckResult check_gemm_sampled(int m, int n, int k, const ElementReader& a, const ElementReader& b,
                               const ElementReader& c, const GemmRoundoff& roundoff,
                               int samples = 256, std::uint64_t seed = 12345);

// Fills `count` floats with uniform values in [-1, 1) from a fixed seed (never zeros: zeros hide
// unwritten outputs and can run faster than real data).
void fill_uniform(float* values, std::size_t count, std::uint64_t seed);

}  // namespace gpubench
