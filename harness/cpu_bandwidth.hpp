#pragma once
// The memory roof of the CPU, measured like its compute roof (harness/cpu_fma.hpp): an in-place
// triad a[i] = b[i] + s * a[i] over doubles, on one thread and on every allowed core, over arrays
// at least four times the last-level cache so that the caches cannot hold them, and on one thread
// over arrays that fit in L2 (the cache-resident level). The fastest of a few repetitions is kept,
// as STREAM does: a repetition another tenant or an interrupt took time from only reads slower.
//
// Why in place, not STREAM's a = b + s * c: a cache that allocates on write reads a line before it
// writes it, so STREAM's triad moves 32 bytes per element while its convention counts 24, and a
// row that updates its output in place (SAXPY's y = a x + y) then moves its counted bytes faster
// than the "roof" (on the 2-core EPYC: STREAM's form 28 GB/s counted, this form 41 GB/s, SAXPY
// 45 GB/s, all over 1 GiB arrays: reports/baselines/roofline-2core). In place, every line written
// was read first, so the 24 bytes counted per element (8 read from a, 8 from b, 8 written to a) are
// the bytes moved, in the same units as the rows' `bytes_moved` (each operand read once, each
// output written once). This is the form the Empirical Roofline Toolkit measures its bandwidth
// ceilings with.

#include <cstddef>
#include <string>

namespace gpubench {

// The caches the sizes are chosen from: sysfs (/sys/devices/system/cpu/cpu0/cache/index*), which
// describes what this machine (or virtual machine) has, else sysconf's _SC_LEVEL{2,3}_CACHE_SIZE,
// which on some hypervisors reports the host's whole L3.
struct CacheSizes {
  std::size_t l2_bytes = 0;   // one core's L2 (unified or data); 0 when unknown
  std::size_t llc_bytes = 0;  // one instance of the last-level cache; 0 when unknown
  int llc_level = 0;
  // Instances of the last-level cache among the online CPUs (logical CPUs / CPUs sharing cpu0's).
  int llc_instances = 1;
  std::string source;  // "sysfs", "sysconf" or "unknown"
};
CacheSizes read_cache_sizes();

// a[i] = b[i] + scalar * a[i] for i in [0, count).
void inplace_triad(double* a, const double* b, double scalar, std::size_t count);

// One triad pass over `count` elements: 24 bytes each (two reads and one write).
inline double triad_bytes(std::size_t count) { return 24.0 * static_cast<double>(count); }

// One measured level: the fastest of `repetitions` trials, each `passes` triad passes over arrays
// of `elements` doubles (two such arrays) split evenly among `threads` workers
// (kernels/common/worker_threads.hpp, the training steps' threads; 1: the calling thread). The
// arrays are first touched by the same split, so each worker's pages lie where it runs. Returns
// bytes per second by triad_bytes, or 0 when a result is wrong (then `why` says what was found).
struct TriadTrials {
  std::size_t elements = 0;
  int threads = 1;
  int passes = 1;
  int repetitions = 5;
  // Stop after this many seconds of trials once two have run (a slow machine's 1-thread pass over
  // large arrays), so that the whole probe stays within its budget.
  double budget_s = 1.0;
};
struct TriadResult {
  double bytes_per_s = 0;
  int repetitions_run = 0;
  std::string why;  // empty when bytes_per_s is a measurement
};
TriadResult measure_triad(const TriadTrials& trials);

// The three CPU levels, each with the text the context records as its source: what ran, on what,
// and the convention; "not measured: <why>" with 0 where it did not run.
struct CpuBandwidthLevel {
  double bytes_per_s = 0;
  std::string source;
};
struct CpuBandwidth {
  CpuBandwidthLevel one_thread;
  CpuBandwidthLevel all_cores;
  CpuBandwidthLevel cache;
  int all_cores_threads = 0;
  CacheSizes caches;
  double probe_s = 0;  // what the three levels took, allocation and first touch included
};

// Runs the three levels: `threads` workers for the all-cores level (the caller passes the cores it
// may use), two arrays of 4 x the last-level cache (4 x every instance of it for all cores), capped
// at 1 GiB and at an eighth of the available memory per array; with one last-level cache both
// memory levels use one set of arrays, allocated and touched once. The trials stop after 0.4 s (1
// thread) and 0.3 s (all cores) once two have run; allocation and first touch come on top (on the
// 2-core EPYC, 32 MiB L3, 2 arrays of 128 MiB: 0.20-0.22 s on an idle machine).
CpuBandwidth measure_cpu_bandwidth(int threads);

}  // namespace gpubench
