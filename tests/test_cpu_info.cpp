// What the suite reads and measures about the host CPU: the busy-core clock measurement and the
// peak built from it (harness/cpu_clock.hpp, harness/cpu_info.hpp).

#include <gtest/gtest.h>

#include "harness/cpu_clock.hpp"
#include "harness/cpu_info.hpp"

namespace {

TEST(CpuInfo, MeasuredClockIsARealCoresClock) {
  const double measured_hz = gpubench::measure_core_clock_hz();
#if defined(__x86_64__) || defined(__aarch64__)
  // Every core of the last twenty years runs between these; a chain the compiler or the core
  // shortened (immediate adds folded at rename) reads twice the clock or more, a chain that is
  // not dependent several times more.
  EXPECT_GT(measured_hz, 0.3e9);
  EXPECT_LT(measured_hz, 7.0e9);
#else
  EXPECT_EQ(measured_hz, 0.0);
#endif
}

TEST(CpuInfo, PeakIsCoresTimesFlopPerCycleTimesClock) {
  const gpubench::CpuInfo& info = gpubench::cpu_info();
  EXPECT_GE(info.clock_hz, info.nominal_clock_hz);
  EXPECT_GT(info.clock_hz, 0.0) << info.clock_source;
  EXPECT_FALSE(info.clock_source.empty());
  const double one_core = info.fp32_flop_per_cycle_per_core * info.clock_hz;
  EXPECT_DOUBLE_EQ(gpubench::cpu_peak_flops(1, false), one_core);
  EXPECT_DOUBLE_EQ(gpubench::cpu_peak_flops(1, true), one_core / 2);
  // More threads than cores add no FMA units (SMT siblings share them).
  EXPECT_DOUBLE_EQ(gpubench::cpu_peak_flops(info.physical_cores + 8, false),
                   info.physical_cores * one_core);
  if (info.has_avx2 && info.has_fma) {
    EXPECT_GE(info.fp32_flop_per_cycle_per_core, 32);
  }
}

}  // namespace
