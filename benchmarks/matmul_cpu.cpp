// matmul/cpu/openblas/dtype:<fp32|fp64>/m:M/n:N/k:K/threads:T
//
// cblas_sgemm / cblas_dgemm, row-major, with OpenBLAS's thread count set explicitly for each
// benchmark. Operands are allocated, filled and validated once; the timed loop is the BLAS call and
// nothing else.

#include <benchmark/benchmark.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "benchmarks/bench_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cpu_info.hpp"
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
void matmul_cpu(benchmark::State& state, const MatmulShape& shape, int threads) {
  run_guarded(state, [&] {
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

    // Validation (and warm-up: first call spins up OpenBLAS's thread pool and pages in buffers).
    gemm(m, n, k, a.data(), b.data(), c.data());
    const double unit_roundoff = kDouble ? 0x1p-53 : 0x1p-24;
    const CheckResult check = check_gemm_sampled(
        m, n, k, [&](std::size_t i) { return static_cast<double>(a[i]); },
        [&](std::size_t i) { return static_cast<double>(b[i]); },
        [&](std::size_t i) { return static_cast<double>(c[i]); },
        GemmRoundoff{0.0, unit_roundoff, 0.0});
    if (!check.passed) {
      state.SkipWithError(check.message.c_str());
      return;
    }

    const auto loop_start = std::chrono::steady_clock::now();
    for (auto _ : state) {
      gemm(m, n, k, a.data(), b.data(), c.data());
      benchmark::DoNotOptimize(c.data());
      benchmark::ClobberMemory();
    }
    const double seconds_per_iteration =
        seconds_since(loop_start) / static_cast<double>(state.iterations());

    const double flop = 2.0 * m * n * k;
    write_flop_counters(state, flop, seconds_per_iteration, cpu_peak_flops(threads, kDouble));
    state.counters["m"] = m;
    state.counters["n"] = n;
    state.counters["k"] = k;
    state.counters["blas_threads"] = threads;
    state.counters["bytes_h2d"] = 0;
    state.counters["bytes_d2h"] = 0;
    state.counters["max_error_over_bound"] = check.worst_error_over_bound;
    state.SetLabel(std::string("dtype=") + (kDouble ? "fp64" : "fp32") + " shape=" + family);
  });
}

void register_one(const MatmulShape& shape, int threads, bool double_precision) {
  const std::string name = std::string("matmul/cpu/openblas") +
                           segment("dtype", double_precision ? "fp64" : "fp32") +
                           segment("m", shape.m) + segment("n", shape.n) + segment("k", shape.k) +
                           segment("threads", threads);
  auto* benchmark =
      double_precision
          ? benchmark::RegisterBenchmark(name.c_str(), matmul_cpu<double>, shape, threads)
          : benchmark::RegisterBenchmark(name.c_str(), matmul_cpu<float>, shape, threads);
  benchmark->Unit(benchmark::kMicrosecond);
}

}  // namespace

void register_matmul_cpu(const Sweep& sweep) {
  for (int threads : sweep.cpu_threads) {
    for (const MatmulShape& shape : sweep.cpu_shapes) register_one(shape, threads, false);
    for (const MatmulShape& shape : sweep.cpu_fp64_shapes) register_one(shape, threads, true);
  }
}

}  // namespace gpubench
