#pragma once
// The clock a busy core actually runs at, measured. /proc/cpuinfo's "cpu MHz" is the nominal (TSC)
// frequency in most virtual machines, and cpufreq, which knows the boost clock, is absent there;
// a peak computed from the nominal clock is below what one boosting core does, so pct_peak would
// pass 100 (measured on the 2-core AMD EPYC: 2.596 GHz nominal, OpenBLAS at 140% of that peak).

namespace gpubench {

// Hz of the calling thread's core while it is busy: a chain of dependent integer additions, one
// per cycle on every x86-64 and AArch64 core, timed with the steady clock; the fastest of several
// trials (an interrupted trial only looks slower). One trial is about 0.6 ms at 3.6 GHz.
// 0 where the architecture is not supported. harness/cpu_info.cpp decides whether to believe it;
// harness/cpu_fma.cpp runs single trials between its FMA trials.
double measure_core_clock_hz(int trials = 40);

}  // namespace gpubench
