// The reference for "the harness adds nothing": the same cblas_sgemm call as
// matmul/cpu/openblas/dtype:fp32/m:N/n:N/k:N/threads:1, timed in a bare steady-clock loop.
// Usage: bare_sgemm_loop N [seconds]   prints the mean seconds per call.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/common/openblas.hpp"
#include "kernels/gemm/gemm_cpu.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s N [seconds]\n", argv[0]);
    return 2;
  }
  const int size = std::atoi(argv[1]);
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  if (size <= 0) {
    std::fprintf(stderr, "N must be a positive integer, got '%s'\n", argv[1]);
    return 2;
  }
  gpubench::cpu::set_blas_threads(1);
  const auto count = static_cast<std::size_t>(size) * size;
  std::vector<float> a(count, 0.5F);
  std::vector<float> b(count, -0.25F);
  std::vector<float> c(count);
  gpubench::cpu::sgemm_row_major(size, size, size, a.data(), b.data(), c.data());  // warm-up
  long long calls = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    gpubench::cpu::sgemm_row_major(size, size, size, a.data(), b.data(), c.data());
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::printf("n=%d calls=%lld seconds_per_call=%.9g\n", size, calls, elapsed / calls);
  return c[0] == 0.5F * -0.25F * size ? 0 : 1;
}
