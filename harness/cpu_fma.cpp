#include "harness/cpu_fma.hpp"

#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "harness/cpu_clock.hpp"

namespace gpubench {

namespace {

constexpr int kAccumulators = 12;
constexpr int kFmasPerLoop = 2 * kAccumulators;
// Every lane of every FMA adds 0.5 x 2^-19 = 2^-20 to its accumulator: exact in fp32 and fp64 while
// an accumulator stays below 2^4 (fp32's 24-bit significand), so the sum of the lanes says whether
// every FMA ran exactly once. Nothing the loop produces is denormal, infinite or NaN, which some
// cores execute slowly.
constexpr double kFactorX = 0.5;
constexpr double kFactorY = 0x1p-19;
constexpr double kAddend = kFactorX * kFactorY;

#if defined(__x86_64__)

// Independent accumulators, so the loop is bound by the FMA units' throughput and not by one
// FMA's latency: that takes latency x units FMAs in flight, 4 or 5 cycles x 2 units on Intel cores
// since Haswell and AMD cores since Zen; 12 covers up to 6 x 2. (On the 2-core EPYC, 4 chains
// read 16 fp32 FLOP/cycle at 256 bits, 8 chains 30, 12 chains 32.) They live in vector registers
// 0-11; 14 and 15 hold the two factors (AVX2 has 16 registers).
#define GPUBENCH_ACCUMULATORS "0,1,2,3,4,5,6,7,8,9,10,11"

// One whole run in one asm statement: broadcast the factors, zero the accumulators, then `loops`
// times 2 x 12 FMAs, and store the accumulators to `out`. The compiler can drop, reorder or spill
// none of it at any optimisation level (a Debug build's intrinsics would keep the accumulators in
// memory and time store-to-load forwarding). `.irp` repeats its body with \acc = 0, 1, ..., 11.
// vxorps on an xmm register zeroes the whole ymm/zmm register. vzeroupper at the end spares the
// SSE code that runs next a transition penalty (Intel) or a false dependency.
// clang-format off
#define GPUBENCH_FMA_LOOP(fma, broadcast, reg, bytes)                 \
  broadcast " %[x], %%" reg "14\n\t"                                  \
  broadcast " %[y], %%" reg "15\n\t"                                  \
  ".irp acc," GPUBENCH_ACCUMULATORS "\n\t"                            \
  "vxorps %%xmm\\acc, %%xmm\\acc, %%xmm\\acc\n\t"                     \
  ".endr\n\t"                                                         \
  "1:\n\t"                                                            \
  ".rept 2\n\t"                                                       \
  ".irp acc," GPUBENCH_ACCUMULATORS "\n\t"                            \
  fma " %%" reg "14, %%" reg "15, %%" reg "\\acc\n\t"                 \
  ".endr\n\t"                                                         \
  ".endr\n\t"                                                         \
  "dec %[loops]\n\t"                                                  \
  "jnz 1b\n\t"                                                        \
  ".irp acc," GPUBENCH_ACCUMULATORS "\n\t"                            \
  "vmovups %%" reg "\\acc, \\acc*" bytes "(%[out])\n\t"               \
  ".endr\n\t"                                                         \
  "vzeroupper\n\t"
// clang-format on

// vzeroupper changes the upper halves of all 16 registers, so all of them are clobbered.
#define GPUBENCH_VECTOR_CLOBBERS                                                           \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory"

// Compiled for the level's instructions whatever the rest of the binary is compiled for; called
// only where the caller has checked the CPU's flags.
__attribute__((target("avx2,fma"), noinline)) void fma_loop_avx2_fp32(std::int64_t loops,
                                                                      float* out) {
  const auto x = static_cast<float>(kFactorX);
  const auto y = static_cast<float>(kFactorY);
  asm volatile(GPUBENCH_FMA_LOOP("vfmadd231ps", "vbroadcastss", "ymm", "32")
               : [loops] "+r"(loops)
               : [x] "m"(x), [y] "m"(y), [out] "r"(out)
               : GPUBENCH_VECTOR_CLOBBERS);
}

__attribute__((target("avx2,fma"), noinline)) void fma_loop_avx2_fp64(std::int64_t loops,
                                                                      double* out) {
  const double x = kFactorX;
  const double y = kFactorY;
  asm volatile(GPUBENCH_FMA_LOOP("vfmadd231pd", "vbroadcastsd", "ymm", "32")
               : [loops] "+r"(loops)
               : [x] "m"(x), [y] "m"(y), [out] "r"(out)
               : GPUBENCH_VECTOR_CLOBBERS);
}

__attribute__((target("avx512f"), noinline)) void fma_loop_avx512f_fp32(std::int64_t loops,
                                                                        float* out) {
  const auto x = static_cast<float>(kFactorX);
  const auto y = static_cast<float>(kFactorY);
  asm volatile(GPUBENCH_FMA_LOOP("vfmadd231ps", "vbroadcastss", "zmm", "64")
               : [loops] "+r"(loops)
               : [x] "m"(x), [y] "m"(y), [out] "r"(out)
               : GPUBENCH_VECTOR_CLOBBERS);
}

__attribute__((target("avx512f"), noinline)) void fma_loop_avx512f_fp64(std::int64_t loops,
                                                                        double* out) {
  const double x = kFactorX;
  const double y = kFactorY;
  asm volatile(GPUBENCH_FMA_LOOP("vfmadd231pd", "vbroadcastsd", "zmm", "64")
               : [loops] "+r"(loops)
               : [x] "m"(x), [y] "m"(y), [out] "r"(out)
               : GPUBENCH_VECTOR_CLOBBERS);
}

#endif  // __x86_64__

// Where the loops store their accumulators: 12 registers of up to 64 bytes.
struct Accumulators {
  static constexpr std::size_t kRegisterBytes = 64;
  alignas(64) std::array<float, kAccumulators * kRegisterBytes / sizeof(float)> fp32{};
  alignas(64) std::array<double, kAccumulators * kRegisterBytes / sizeof(double)> fp64{};
};

// Runs one loop; false where it does not exist.
bool run_fma_loop([[maybe_unused]] FmaLevel level, [[maybe_unused]] bool double_precision,
                  [[maybe_unused]] std::int64_t loops, [[maybe_unused]] Accumulators* out) {
#if defined(__x86_64__)
  switch (level) {
    case FmaLevel::kAvx2Fma256:
      if (double_precision) {
        fma_loop_avx2_fp64(loops, out->fp64.data());
      } else {
        fma_loop_avx2_fp32(loops, out->fp32.data());
      }
      return true;
    case FmaLevel::kAvx512f512:
      if (double_precision) {
        fma_loop_avx512f_fp64(loops, out->fp64.data());
      } else {
        fma_loop_avx512f_fp32(loops, out->fp32.data());
      }
      return true;
  }
#endif
  return false;
}

double lane_sum(const Accumulators& accumulators, bool double_precision, int lanes) {
  double sum = 0;
  const auto count = static_cast<std::size_t>(kAccumulators) * lanes;
  for (std::size_t index = 0; index < count; ++index) {
    sum += double_precision ? accumulators.fp64[index] : accumulators.fp32[index];
  }
  return sum;
}

double expected_sum(std::int64_t loops, int lanes) {
  return static_cast<double>(loops) * kFmasPerLoop * lanes * kAddend;
}

// Keeps the calling thread on the CPU it runs on while it lives, so that the clock trials and the
// FMA trials time the same core: on a CPU with two kinds of cores a migration would pair one kind's
// clock with the other's FMA rate. Restores the thread's affinity when it goes. Does nothing where
// the affinity cannot be read or set (more CPUs than a cpu_set_t holds, a seccomp filter).
class PinToCurrentCpu {
 public:
  PinToCurrentCpu() {
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    const int cpu = sched_getcpu();
    if (cpu < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinToCurrentCpu() {
    if (pinned_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  PinToCurrentCpu(const PinToCurrentCpu&) = delete;
  PinToCurrentCpu& operator=(const PinToCurrentCpu&) = delete;
  PinToCurrentCpu(PinToCurrentCpu&&) = delete;
  PinToCurrentCpu& operator=(PinToCurrentCpu&&) = delete;

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

}  // namespace

int fma_lanes(FmaLevel level, bool double_precision) {
  const int bytes = level == FmaLevel::kAvx512f512 ? 64 : 32;
  return bytes / (double_precision ? 8 : 4);
}

double fma_loop_sum(FmaLevel level, bool double_precision, std::int64_t loops) {
  if (loops < 1) return 0;
  Accumulators accumulators;
  if (!run_fma_loop(level, double_precision, loops, &accumulators)) return 0;
  return lane_sum(accumulators, double_precision, fma_lanes(level, double_precision));
}

FmaThroughput measure_fma_throughput([[maybe_unused]] FmaLevelsToRun to_run) {
  FmaThroughput result;
#if defined(__x86_64__)
  struct Candidate {
    FmaLevelThroughput level;
    std::array<double, 2> best_seconds{1e30, 1e30};  // fp32, fp64
    bool correct = true;
  };
  std::vector<Candidate> candidates;
  // The flags come from /proc/cpuinfo, the host's; CPUID says what this process can execute, which
  // is less under an emulator: Valgrind (the gate's instruction lane) runs AVX2 but no AVX-512.
  if (to_run.avx2_fma && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    candidates.push_back({{FmaLevel::kAvx2Fma256, "avx2_fma", 256}});
  }
  if (to_run.avx512f && __builtin_cpu_supports("avx512f")) {
    candidates.push_back({{FmaLevel::kAvx512f512, "avx512f", 512}});
  }
  if (candidates.empty()) return result;

  // 2^16 loops x 24 FMAs: about 0.2 ms at 2 FMAs per cycle and 3.6 GHz, long against the steady
  // clock's resolution and short against a scheduler time slice.
  constexpr std::int64_t kLoops = std::int64_t{1} << 16;
  // The clock and the FMA rate are taken in turn in one window of about 20 ms, so a turbo clock
  // that changes over seconds is the same for both; the fastest of each is kept, since a trial
  // that lost time to another tenant or an interrupt only reads slow.
  constexpr int kRepeats = 12;
  const PinToCurrentCpu pin;
  Accumulators accumulators;
  double clock_hz = 0;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    clock_hz = std::max(clock_hz, measure_core_clock_hz(1));
    for (Candidate& candidate : candidates) {
      for (const bool double_precision : {false, true}) {
        const auto start = std::chrono::steady_clock::now();
        run_fma_loop(candidate.level.level, double_precision, kLoops, &accumulators);
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        double& best = candidate.best_seconds[double_precision ? 1 : 0];
        best = std::min(best, elapsed.count());
        const int lanes = fma_lanes(candidate.level.level, double_precision);
        if (lane_sum(accumulators, double_precision, lanes) != expected_sum(kLoops, lanes)) {
          candidate.correct = false;
        }
      }
    }
  }
  result.clock_hz = clock_hz;
  if (clock_hz <= 0) return result;
  for (Candidate& candidate : candidates) {
    if (!candidate.correct) continue;
    for (const bool double_precision : {false, true}) {
      const double flop = static_cast<double>(kLoops) * kFmasPerLoop *
                          fma_lanes(candidate.level.level, double_precision) * 2;
      const double flop_per_cycle =
          flop / candidate.best_seconds[double_precision ? 1 : 0] / clock_hz;
      (double_precision ? candidate.level.fp64_flop_per_cycle
                        : candidate.level.fp32_flop_per_cycle) = flop_per_cycle;
    }
    result.levels.push_back(candidate.level);
  }
#endif
  return result;
}

// Why rounding is right within 10% and wrong beyond it. Cores issue FMAs of one width at a
// power-of-two rate: two per cycle (Intel's big cores since Haswell and AMD since Zen 2 at 256
// bits; Intel's two-port AVX-512 Xeons and Zen 5 server and desktop parts at 512), or one (Zen 1 at
// 256 bits and Zen 4 at 512, each on two units of half the width; Intel's one-port AVX-512 parts).
// A reading within 10% of such a rate is that rate seen through measurement error (on the 2-core
// EPYC, readings are within 0.02% of it when idle and within 1% with both cores loaded), and
// rounding it keeps the peak, and so pct_peak, from moving with that error between runs. A reading
// further off is something real, e.g. a clock that drops while 512-bit FMAs run (Intel's AVX-512
// frequency licences, by up to about 30% on some Xeons) and that the clock trials between the FMA
// trials do not see: then the reading, not the power of two, is what the core delivers. A drop
// under 10% is rounded away, and the peak counts the clock of scalar code, as the table does.
double snap_flop_per_cycle(double measured, int lanes) {
  constexpr double kTolerance = 0.10;
  if (!(measured > 0) || lanes <= 0) return measured;
  const double fma_per_cycle = measured / (2.0 * lanes);
  const double nearest = std::exp2(std::round(std::log2(fma_per_cycle)));
  if (std::fabs(fma_per_cycle / nearest - 1) > kTolerance) return measured;
  return nearest * 2 * lanes;
}

}  // namespace gpubench
