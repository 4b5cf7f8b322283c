// matmul/cpu/openblas/dtype:<fp32|fp64>/m:M/n:N/k:K/threads:T
//
// cblas_sgemm / cblas_dgemm, row-major, with OpenBLAS's thread count set explicitly for each
// benchmark. Times the BLAS call and nothing else (harness/host_clock_timer.hpp); operands are
// allocated, filled and validated once, before timing.

#include <benchmark/benchmark.h>

#include <limits>
#include <string>
#include <vector>

#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/result_row.hpp"
#include "harness/validation.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/gemm/gemm_cpu.hpp"

namespace gpubench {

namespace {

template <typename Real>
void gemm(int m, int n, int k, const Real* a, const Real* b, Real* c) {
  if constexpr (sizeof(Real) == 8) {
    cpu::dgemm_row_major(m, n, k, a, b, c);
  } else {
    cpu::sgemm_row_major(m, n, k, a, b, c);
  }
}

template <typename Real>
void matmul_cpu(benchmark::State& state, const RowId& id, const MatmulShape& shape, int threads) {
  const auto [m, n, k, family] = shape;
  constexpr bool kDouble = sizeof(Real) == 8;
  cpu::set_blas_threads(threads);  // throws (a skipped row) if OpenBLAS runs another count

  std::vector<float> a_values(static_cast<std::size_t>(m) * k);
  std::vector<float> b_values(static_cast<std::size_t>(k) * n);
  fill_uniform(a_values.data(), a_values.size(), 1);
  fill_uniform(b_values.data(), b_values.size(), 2);
  const std::vector<Real> a(a_values.begin(), a_values.end());
  const std::vector<Real> b(b_values.begin(), b_values.end());
  // NaN poison: an output element the call forgets to write fails the check below.
  std::vector<Real> c(static_cast<std::size_t>(m) * n, std::numeric_limits<Real>::quiet_NaN());

  // Validation, which also warms up OpenBLAS's thread pool and pages in the buffers.
  gemm(m, n, k, a.data(), b.data(), c.data());
  const CheckResult check = check_gemm_sampled(
      m, n, k, [&](std::size_t i) { return static_cast<double>(a[i]); },
      [&](std::size_t i) { return static_cast<double>(b[i]); },
      [&](std::size_t i) { return static_cast<double>(c[i]); },
      GemmRoundoff{0.0, kDouble ? 0x1p-53 : 0x1p-24, 0.0});
  if (!check.passed) {
    state.SkipWithError(check.message.c_str());
    return;
  }

  HostClockTimer timer(HostClockTimer::Report::benchmark_clock);
  const double seconds_per_iteration = timer.run(state, [&] {
    gemm(m, n, k, a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  });

  ResultRow row(state, id);
  row.work(2.0 * m * n * k, seconds_per_iteration, cpu_peak_flops(threads, kDouble))
      .set(Counter::bytes_h2d, 0)
      .set(Counter::bytes_d2h, 0)
      .set(Counter::max_error_over_bound, check.worst_error_over_bound)
      .label(LabelKey::shape, family)
      .publish();
}

void register_one(const MatmulShape& shape, int threads, bool double_precision) {
  const RowId id{
      "matmul",
      "cpu",
      "openblas",
      {text_parameter("dtype", double_precision ? "fp64" : "fp32", LabelKey::dtype),
       number_parameter("m", shape.m, Counter::m), number_parameter("n", shape.n, Counter::n),
       number_parameter("k", shape.k, Counter::k),
       number_parameter("threads", threads, Counter::blas_threads)}};
  if (double_precision) {
    register_row(id, IterationTime::benchmark_clock, matmul_cpu<double>, shape, threads);
  } else {
    register_row(id, IterationTime::benchmark_clock, matmul_cpu<float>, shape, threads);
  }
}

}  // namespace

void register_matmul_cpu(const Sweep& sweep) {
  for (int threads : sweep.cpu_threads) {
    for (const MatmulShape& shape : sweep.cpu_shapes) register_one(shape, threads, false);
    for (const MatmulShape& shape : sweep.cpu_fp64_shapes) register_one(shape, threads, true);
  }
}

}  // namespace gpubench
