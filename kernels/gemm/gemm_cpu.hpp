#pragma once
// Row-major GEMM on the CPU through OpenBLAS's CBLAS interface.
//
// Layout: every matrix is row-major and densely packed, so the leading dimension of each operand is
// its row length: A is m x k (lda = k), B is k x n (ldb = n), C is m x n (ldc = n). C = A * B.

namespace gpubench::cpu {

void sgemm_row_major(int m, int n, int k, const float* a, const float* b, float* c);
void dgemm_row_major(int m, int n, int k, const double* a, const double* b, double* c);

}  // namespace gpubench::cpu
