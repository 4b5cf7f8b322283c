#pragma once
// OpenBLAS's global state that every CPU workload sets or records: its thread count and the kernel
// set it chose.

#include <string>

namespace gpubench::cpu {

// OpenBLAS keeps one global thread pool; every benchmark sets the count it wants explicitly, since
// the default (all cores, or OPENBLAS_NUM_THREADS) would silently change what a name means.
// Throws std::runtime_error when OpenBLAS runs another count (above its MAX_THREADS, or a
// single-threaded build), so a row never carries a thread count that did not run.
void set_blas_threads(int threads);
int blas_threads();
// The thread count that uses every logical CPU: their number, capped at the MAX_THREADS OpenBLAS
// was built with (64 in Debian's build), since OpenBLAS silently runs at most that many; 1 for a
// single-threaded OpenBLAS.
int blas_threads_for_all_cores();

// OpenBLAS's own build description, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
// MAX_THREADS=64".
std::string blas_config();
// The kernel set OpenBLAS chose for this CPU, e.g. "Haswell", "SkylakeX", "Prescott".
std::string blas_core_name();

}  // namespace gpubench::cpu
