#pragma once
// Row-major GEMM on the CPU through OpenBLAS's CBLAS interface.
//
// Layout: every matrix is row-major and densely packed, so the leading dimension of each operand is
// its row length: A is m x k (lda = k), B is k x n (ldb = n), C is m x n (ldc = n). C = A * B.

#include <string>

namespace gpubench::cpu {

void sgemm_row_major(int m, int n, int k, const float* a, const float* b, float* c);
void dgemm_row_major(int m, int n, int k, const double* a, const double* b, double* c);

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
