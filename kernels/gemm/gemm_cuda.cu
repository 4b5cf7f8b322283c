#include "kernels/gemm/gemm_cuda.hpp"

namespace gpubench::cuda {

cublasStatus_t gemm_row_major(cublasHandle_t handle, Precision precision, int m, int n, int k,
                              const void* a, const void* b, void* c) {
  // Column-major view (see gemm.hpp): C^T[n x m] = B^T[n x k] * A^T[k x m].
  const int rows_of_ct = n;
  const int cols_of_ct = m;
  const int lda_b = n;  // B row-major k x n
  const int lda_a = k;  // A row-major m x k
  const int ldc = n;    // C row-major m x n
  switch (precision) {
    case Precision::fp32: {
      const float alpha = 1.0F;
      const float beta = 0.0F;
      return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows_of_ct, cols_of_ct, k, &alpha,
                         static_cast<const float*>(b), lda_b, static_cast<const float*>(a), lda_a,
                         &beta, static_cast<float*>(c), ldc);
    }
    case Precision::fp64: {
      const double alpha = 1.0;
      const double beta = 0.0;
      return cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows_of_ct, cols_of_ct, k, &alpha,
                         static_cast<const double*>(b), lda_b, static_cast<const double*>(a), lda_a,
                         &beta, static_cast<double*>(c), ldc);
    }
    case Precision::tf32:
    case Precision::fp16:
    case Precision::bf16: {
      // fp32 scalars because the compute type is 32-bit in all three cases.
      const float alpha = 1.0F;
      const float beta = 0.0F;
      cudaDataType_t operand_type = CUDA_R_32F;
      cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
      if (precision == Precision::tf32) compute_type = CUBLAS_COMPUTE_32F_FAST_TF32;
      if (precision == Precision::fp16) operand_type = CUDA_R_16F;
      if (precision == Precision::bf16) operand_type = CUDA_R_16BF;
      // C in the operand type, rounded from the fp32 accumulator (what torch.mm does).
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows_of_ct, cols_of_ct, k, &alpha, b,
                          operand_type, lda_b, a, operand_type, lda_a, &beta, c, operand_type, ldc,
                          compute_type, CUBLAS_GEMM_DEFAULT);
    }
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace gpubench::cuda
