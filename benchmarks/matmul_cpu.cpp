// matmul/cpu/openblas/dtype:<fp32|fp64>/m:M/n:N/k:K/threads:T
//
// cblas_sgemm / cblas_dgemm, declared through the public API (include/gpubench/workload.hpp) as a
// user's workload is, so the suite's GEMM rows take the path every user's rows take. Layout:
// row-major A (m x k, leading dimension k), B (k x n, ldb n) and C (m x n, ldc n). The runner sets
// OpenBLAS's thread count for each row (cpu_threads), fills A and B from fixed seeds (A 1, B 2),
// poisons C with NaN, makes one untimed call (which also starts OpenBLAS's thread pool and pages in
// the buffers), checks a sample of C against a double reference, then times the call alone on the
// host clock (harness/host_clock_timer.hpp).

#include <memory>
#include <vector>

#include "benchmarks/registration.hpp"
#include "benchmarks/workload_rows.hpp"
#include "gpubench/workload.hpp"
#include "harness/validation.hpp"
#include "kernels/gemm/gemm_cpu.hpp"

namespace gpubench {

namespace {

bool is_fp64(const Point& point) { return point.text("dtype") == "fp64"; }

ElementType element_type(const Point& point) {
  return is_fp64(point) ? ElementType::float64 : ElementType::float32;
}

template <typename Real>
Call gemm_call(const Point& point, const Buffers& buffers) {
  const int m = static_cast<int>(point["m"]);
  const int n = static_cast<int>(point["n"]);
  const int k = static_cast<int>(point["k"]);
  const Real* a = buffers.get<Real>("a");
  const Real* b = buffers.get<Real>("b");
  Real* c = buffers.get<Real>("c");
  return [=] {
    if constexpr (sizeof(Real) == 8) {
      cpu::dgemm_row_major(m, n, k, a, b, c);
    } else {
      cpu::sgemm_row_major(m, n, k, a, b, c);
    }
  };
}

template <typename Real>
Check sampled_check(const Point& point, const Buffers& buffers) {
  const Real* a = buffers.get<Real>("a");
  const Real* b = buffers.get<Real>("b");
  const Real* c = buffers.get<Real>("c");
  const CheckResult result = check_gemm_sampled(
      static_cast<int>(point["m"]), static_cast<int>(point["n"]), static_cast<int>(point["k"]),
      [&](std::size_t i) { return static_cast<double>(a[i]); },
      [&](std::size_t i) { return static_cast<double>(b[i]); },
      [&](std::size_t i) { return static_cast<double>(c[i]); },
      GemmRoundoff{0.0, sizeof(Real) == 8 ? 0x1p-53 : 0x1p-24, 0.0});
  return {result.passed, result.worst_error_over_bound, result.message};
}

Workload matmul_cpu_workload(const Sweep& sweep) {
  std::vector<Point> points;
  const auto add = [&](const char* dtype, const std::vector<MatmulShape>& shapes) {
    for (const MatmulShape& shape : shapes) {
      points.push_back(Point()
                           .set("dtype", dtype)
                           .set("m", shape.m)
                           .set("n", shape.n)
                           .set("k", shape.k)
                           .label("shape", shape.family));
    }
  };
  add("fp32", sweep.cpu_shapes);
  add("fp64", sweep.cpu_fp64_shapes);
  const auto elements = [](const char* rows, const char* columns) {
    return [=](const Point& point) {
      return static_cast<std::size_t>(point[rows]) * static_cast<std::size_t>(point[columns]);
    };
  };
  return Workload("matmul")
      .points(std::move(points))
      .cpu_threads({sweep.cpu_threads.begin(), sweep.cpu_threads.end()})
      .buffer("a", BufferRole::input, elements("m", "k"), element_type)
      .buffer("b", BufferRole::input, elements("k", "n"), element_type)
      .buffer("c", BufferRole::output, elements("m", "n"), element_type)
      .work([](const Point& point) {
        const auto m = static_cast<double>(point["m"]);
        const auto n = static_cast<double>(point["n"]);
        const auto k = static_cast<double>(point["k"]);
        // A and B read once, C written once (beta = 0: C is not read), at the dtype's size.
        const double element_bytes = is_fp64(point) ? 8.0 : 4.0;
        return Work{2.0 * m * n * k, (m * k + k * n + m * n) * element_bytes};
      })
      .cpu("openblas",
           [](const Point& point, const Buffers& buffers) {
             return is_fp64(point) ? gemm_call<double>(point, buffers)
                                   : gemm_call<float>(point, buffers);
           })
      .check([](const Point& point, const Buffers& buffers) {
        return is_fp64(point) ? sampled_check<double>(point, buffers)
                              : sampled_check<float>(point, buffers);
      });
}

}  // namespace

void register_matmul_cpu(const Sweep& sweep) {
  register_workload_rows(std::make_shared<const Workload>(matmul_cpu_workload(sweep)), false);
}

}  // namespace gpubench
