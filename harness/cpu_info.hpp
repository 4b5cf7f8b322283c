#pragma once
// What the suite knows about the host CPU, read from /proc/cpuinfo and sysfs once per process.

#include <set>
#include <string>

#include "harness/cpu_fma.hpp"

namespace gpubench {

struct CpuInfo {
  std::string model;
  int logical_cpus = 1;    // online hardware threads
  int physical_cores = 1;  // distinct (package, core) pairs; SMT siblings share FMA units
  bool has_avx2 = false;
  bool has_fma = false;
  bool has_avx512f = false;
  std::string isa_flags;        // the SIMD flags above that are present, space separated
  std::set<std::string> flags;  // every flag /proc/cpuinfo lists for the first CPU
  bool has_flag(const std::string& flag) const { return flags.count(flag) != 0; }
  // The peak's clock: the highest of the nominal clock, cpufreq's cpuinfo_max_freq and the clock
  // measured on one busy core (harness/cpu_clock.hpp); clock_source names the one used.
  double clock_hz = 0;
  std::string clock_source;
  double nominal_clock_hz = 0;  // "cpu MHz" from /proc/cpuinfo
  // FLOP per cycle per core that the peak uses: the measured ones where the FMA loops ran and
  // read a believable clock, the table's otherwise; flop_per_cycle_source says which.
  double fp32_flop_per_cycle_per_core = 8;
  double fp64_flop_per_cycle_per_core = 4;
  std::string flop_per_cycle_source;
  // The table, from the ISA flags: 2 FMA units x SIMD lanes x 2 (multiply + add). AVX-512:
  // 2 x 16 x 2 = 64; AVX2 + FMA: 2 x 8 x 2 = 32; SSE only: 2 x 4 (no FMA) = 8; fp64 half of fp32.
  // AMD Zen 4 executes AVX-512 on 256-bit units: 32. It cannot see parts with one 512-bit FMA
  // unit (some Intel AVX-512 parts, Zen 5 mobile parts) or a family a hypervisor hides; it is kept
  // as the cross-check of the measurement.
  double fp32_flop_per_cycle_table = 8;
  double fp64_flop_per_cycle_table = 4;
  // The measurement (harness/cpu_fma.hpp): the fastest level's FLOP/cycle, rounded to the
  // power-of-two FMA rate it is within 10% of (snap_flop_per_cycle); 0 where nothing was measured.
  double fp32_flop_per_cycle_measured = 0;
  double fp64_flop_per_cycle_measured = 0;
  FmaThroughput fma;  // every level's unrounded reading and the clock it was read against
  // Non-empty when the table and the measurement differ by more than 25%: the table is wrong for
  // this CPU, or the measurement ran on a core shared with another busy thread (an SMT sibling).
  std::string peak_warning;
};

const CpuInfo& cpu_info();

// Peak for `threads` threads: min(threads, physical cores) x FLOP/cycle/core x clock_hz.
double cpu_peak_flops(int threads, bool double_precision);
// The same for bf16 products with fp32 accumulation: twice the fp32 peak where the CPU has
// AVX512_BF16 (VDPBF16PS: two bf16 products per fp32 lane, at the FMA's width and rate, on Intel
// Cooper Lake and later and on AMD Zen 4), the fp32 peak otherwise (bf16 widened to fp32).
double cpu_peak_bf16_flops(int threads);

}  // namespace gpubench
