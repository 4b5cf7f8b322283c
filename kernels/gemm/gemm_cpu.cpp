#include "kernels/gemm/gemm_cpu.hpp"

#include <cblas.h>

namespace gpubench::cpu {

void sgemm_row_major(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0F, a, /*lda=*/k, b,
              /*ldb=*/n, 0.0F, c, /*ldc=*/n);
}

void dgemm_row_major(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, /*lda=*/k, b,
              /*ldb=*/n, 0.0, c, /*ldc=*/n);
}

}  // namespace gpubench::cpu
