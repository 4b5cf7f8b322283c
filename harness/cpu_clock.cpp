#include "harness/cpu_clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace gpubench {

namespace {

// 16 dependent additions to one register: each needs the previous result, so the chain takes 16
// cycles whatever the core's width. The loop's own counter is a second, independent chain that
// runs alongside. Register operands, not immediates: Intel's Golden Cove cores execute an add of a
// small immediate at rename, about two per cycle, which would double the "clock".
#if defined(__x86_64__)
#define GPUBENCH_ADD "add %1, %0\n\t"
#elif defined(__aarch64__)
#define GPUBENCH_ADD "add %0, %0, %1\n\t"
#endif
#ifdef GPUBENCH_ADD
#define GPUBENCH_ADD4 GPUBENCH_ADD GPUBENCH_ADD GPUBENCH_ADD GPUBENCH_ADD
#define GPUBENCH_ADD16 GPUBENCH_ADD4 GPUBENCH_ADD4 GPUBENCH_ADD4 GPUBENCH_ADD4
constexpr int kAddsPerLoop = 16;
#endif

}  // namespace

double measure_core_clock_hz([[maybe_unused]] int trials) {
#ifdef GPUBENCH_ADD
  // 2^17 loops x 16 adds = 2.1 M cycles: about 0.5 ms at 4 GHz, long against the clock's resolution
  // and short against a scheduler time slice. The first trials also wake the core up from idle.
  constexpr std::int64_t kLoops = std::int64_t{1} << 17;
  double best_seconds = 1e30;
  std::uint64_t chain = 0;
  // From memory the compiler cannot know, so it stays a register and never becomes an immediate.
  volatile std::uint64_t increment_source = 1;
  const std::uint64_t increment = increment_source;
  for (int trial = 0; trial < trials; ++trial) {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t loop = 0; loop < kLoops; ++loop) {
      asm volatile(GPUBENCH_ADD16 : "+r"(chain) : "r"(increment));
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best_seconds = std::min(best_seconds, elapsed.count());
  }
  return trials < 1 ? 0 : static_cast<double>(kLoops) * kAddsPerLoop / best_seconds;
#else
  return 0;
#endif
}

}  // namespace gpubench
