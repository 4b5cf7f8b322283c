// CPU GEMM (row-major OpenBLAS) against a naive triple loop, on odd shapes and both thread counts,
// and the sampled validator itself: it must reject a wrong product.

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "harness/validation.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/gemm/gemm_cpu.hpp"

namespace {

using Shape = std::tuple<int, int, int>;

// The exact-in-double product C = A B, and sum_l |a_il| |b_lj| for each element (the scale of its
// rounding error bound).
std::vector<double> naive_product(int m, int n, int k, const std::vector<float>& a,
                                  const std::vector<float>& b, std::vector<double>* magnitude) {
  std::vector<double> c(static_cast<std::size_t>(m) * n, 0.0);
  magnitude->assign(c.size(), 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      double sum_abs = 0;
      for (int l = 0; l < k; ++l) {
        const double term = double(a[i * k + l]) * double(b[l * n + j]);
        sum += term;
        sum_abs += std::fabs(term);
      }
      c[static_cast<std::size_t>(i) * n + j] = sum;
      (*magnitude)[static_cast<std::size_t>(i) * n + j] = sum_abs;
    }
  }
  return c;
}

class CpuGemm : public ::testing::TestWithParam<std::tuple<Shape, int>> {};

TEST_P(CpuGemm, MatchesNaiveTripleLoop) {
  const auto [shape, threads] = GetParam();
  const auto [m, n, k] = shape;
  gpubench::cpu::set_blas_threads(threads);
  std::vector<float> a(static_cast<std::size_t>(m) * k);
  std::vector<float> b(static_cast<std::size_t>(k) * n);
  gpubench::fill_uniform(a.data(), a.size(), 7);
  gpubench::fill_uniform(b.data(), b.size(), 8);
  std::vector<float> c(static_cast<std::size_t>(m) * n, NAN);
  gpubench::cpu::sgemm_row_major(m, n, k, a.data(), b.data(), c.data());
  std::vector<double> magnitude;
  const std::vector<double> expected = naive_product(m, n, k, a, b, &magnitude);
  // Any order of fp32 multiply-adds over a length-k dot product errs by at most
  // gamma_k * sum|a||b| with gamma_k ~ k u, u = 2^-24 (Higham, Accuracy and Stability of Numerical
  // Algorithms, 3.1); twice that leaves room for the rounding of the result itself. A transposed
  // operand or a wrong leading dimension is off by O(sum|a||b|), far outside.
  for (std::size_t index = 0; index < c.size(); ++index) {
    const double tolerance =
        2.0 * k * 0x1p-24 * magnitude[index] + 0x1p-24 * std::fabs(expected[index]);
    ASSERT_NEAR(c[index], expected[index], tolerance) << "element " << index;
  }

  std::vector<double> a64(a.begin(), a.end());
  std::vector<double> b64(b.begin(), b.end());
  std::vector<double> c64(c.size(), NAN);
  gpubench::cpu::dgemm_row_major(m, n, k, a64.data(), b64.data(), c64.data());
  for (std::size_t index = 0; index < c64.size(); ++index) {
    ASSERT_NEAR(c64[index], expected[index], 2.0 * k * 0x1p-53 * magnitude[index])
        << "element " << index;
  }
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, CpuGemm,
    ::testing::Combine(::testing::Values(Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 33, 65},
                                         Shape{1000, 1, 1000}),
                       ::testing::Values(1, gpubench::cpu::blas_threads_for_all_cores())));

TEST(CpuGemm, SetsThreadCountExplicitly) {
  gpubench::cpu::set_blas_threads(1);
  EXPECT_EQ(gpubench::cpu::blas_threads(), 1);
}

// A count beyond what the OpenBLAS build runs (its MAX_THREADS) is refused with the prefix the
// tools count as a skip, and the library keeps working at a count it takes.
TEST(CpuGemm, RefusesAThreadCountOpenBlasDoesNotRunAsNotSupported) {
  constexpr int kMoreThanAnyBuild = 100000;
  try {
    gpubench::cpu::set_blas_threads(kMoreThanAnyBuild);
    ADD_FAILURE() << "OpenBLAS accepted " << kMoreThanAnyBuild << " threads";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("not supported on this machine: OpenBLAS runs ", 0),
              0U)
        << error.what();
  }
  gpubench::cpu::set_blas_threads(1);
  EXPECT_EQ(gpubench::cpu::blas_threads(), 1);
}

TEST(SampledValidation, AcceptsCorrectProductAndRejectsWrongOne) {
  const int m = 64, n = 48, k = 80;
  const auto count = [](int rows, int columns) { return static_cast<std::size_t>(rows) * columns; };
  std::vector<float> a(count(m, k)), b(count(k, n)), c(count(m, n));
  gpubench::fill_uniform(a.data(), a.size(), 1);
  gpubench::fill_uniform(b.data(), b.size(), 2);
  gpubench::cpu::sgemm_row_major(m, n, k, a.data(), b.data(), c.data());
  auto reader = [](const std::vector<float>& v) {
    return [&v](std::size_t i) { return static_cast<double>(v[i]); };
  };
  const auto good = gpubench::check_gemm_sampled(m, n, k, reader(a), reader(b), reader(c),
                                                 gpubench::GemmRoundoff{}, /*samples=*/m * n);
  EXPECT_TRUE(good.passed) << good.message;
  EXPECT_LE(good.worst_error_over_bound, 1.0);

  // One element off by a little more than rounding allows: caught when sampled.
  std::vector<float> wrong = c;
  wrong[5 * n + 7] += 1e-2F;
  const auto bad = gpubench::check_gemm_sampled(m, n, k, reader(a), reader(b), reader(wrong),
                                                gpubench::GemmRoundoff{}, /*samples=*/m * n * 4);
  EXPECT_FALSE(bad.passed);
  EXPECT_NE(bad.message.find("C[5][7]"), std::string::npos) << bad.message;

  // C read with the wrong leading dimension (the classic row/column-major mix-up) fails even
  // with few samples.
  std::vector<float> scrambled(count(m, n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) scrambled[i * n + j] = c[j * m + i];
  }
  EXPECT_FALSE(gpubench::check_gemm_sampled(m, n, k, reader(a), reader(b), reader(scrambled),
                                            gpubench::GemmRoundoff{}, 16)
                   .passed);

  // An unwritten (NaN-poisoned) output never passes.
  std::vector<float> unwritten(count(m, n), NAN);
  EXPECT_FALSE(gpubench::check_gemm_sampled(m, n, k, reader(a), reader(b), reader(unwritten),
                                            gpubench::GemmRoundoff{}, 1)
                   .passed);
}

}  // namespace
