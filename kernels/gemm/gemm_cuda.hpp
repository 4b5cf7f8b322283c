#pragma once
// Row-major GEMM on the GPU through column-major cuBLAS.
//
// cuBLAS is column-major. A row-major m x n matrix with leading dimension n has exactly the bytes
// of the column-major n x m matrix (its transpose) with the same leading dimension. So the
// row-major product C = A * B is computed as the column-major product C^T = B^T * A^T, with no
// transposes and no copies: cuBLAS gets (m', n', k') = (n, m, k), first operand B (ld = n), second
// operand A (ld = k), output C (ld = n). The same buffers a CBLAS row-major call reads give the
// same C.

#include <cublas_v2.h>

#include "kernels/gemm/precision.hpp"

namespace gpubench::cuda {

// C (m x n) = A (m x k) * B (k x n), all row-major and densely packed on the device, operand types
// as in precision.hpp. Enqueued on the handle's stream; returns cuBLAS's status for the caller to
// check.
cublasStatus_t gemm_row_major(cublasHandle_t handle, Precision precision, int m, int n, int k,
                              const void* a, const void* b, void* c);

}  // namespace gpubench::cuda
