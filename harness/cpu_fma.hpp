#pragma once
// The FMA throughput of one core, measured. A table of FLOP/cycle by ISA flag cannot tell a core
// with two full-width FMA units from one that splits a 512-bit FMA over 256-bit units (AMD Zen 4,
// some Zen 5 parts, Intel parts with one 512-bit port), and a hypervisor may hide the CPU family
// that would; a loop of independent FMAs can. harness/cpu_info.cpp uses the measurement for the
// peak and keeps the table as a cross-check.

#include <cstdint>
#include <string>
#include <vector>

namespace gpubench {

// The ISA levels with a measurement loop, narrowest first.
enum class FmaLevel { kAvx2Fma256, kAvx512f512 };

// The levels to measure. The caller says which ones the CPU's flags allow: a loop is never run on
// a CPU without its instructions (it would die of SIGILL), and a test can withhold a level.
struct FmaLevelsToRun {
  bool avx2_fma = false;
  bool avx512f = false;
};

struct FmaLevelThroughput {
  FmaLevel level = FmaLevel::kAvx2Fma256;
  std::string name;  // "avx2_fma" or "avx512f", as in the context keys
  int width_bits = 0;
  // FMA instructions per cycle x lanes x 2, per cycle of the clock measured in the same window;
  // not rounded.
  double fp32_flop_per_cycle = 0;
  double fp64_flop_per_cycle = 0;
};

struct FmaThroughput {
  std::vector<FmaLevelThroughput> levels;  // the levels that ran; empty off x86-64
  // The busy-core clock (harness/cpu_clock.hpp) measured between the FMA trials: the cycles the
  // FLOP/cycle above are counted in.
  double clock_hz = 0;
};

// Runs each allowed level's fp32 and fp64 loops and the clock trial in turn, several times on one
// pinned core, and keeps the fastest of each (a trial a hypervisor or an interrupt took time from
// only looks slower). About 23 ms on a 3.7 GHz core with both levels. A level whose loop returns a
// wrong sum is dropped. harness/cpu_info.cpp calls it once per process.
FmaThroughput measure_fma_throughput(FmaLevelsToRun to_run);

// One run of one level's loop: `loops` x 24 FMAs (2 into each of 12 independent accumulators per
// loop), each adding 0.5 x 2^-19 to every lane, and the sum of every lane of every accumulator
// afterwards, which is exactly loops x 24 x lanes x 2^-20 when each FMA ran once (loops < 2^23).
// The caller makes sure the CPU has the level. 0 off x86-64 or for loops < 1.
double fma_loop_sum(FmaLevel level, bool double_precision, std::int64_t loops);

// SIMD lanes of one FMA at `level`.
int fma_lanes(FmaLevel level, bool double_precision);

// The FLOP/cycle of a core that issues a power-of-two number of FMA instructions per cycle, from a
// measurement of it: `measured` rounded to lanes x 2 x 2^k when it is within 10% of that, and
// `measured` itself otherwise (see harness/cpu_fma.cpp for why).
double snap_flop_per_cycle(double measured, int lanes);

}  // namespace gpubench
