#pragma once
// Every CUDA runtime and cuBLAS call goes through one of these macros. A failure throws
// gpubench::CudaError carrying the failed expression, the error name and text, and file:line, so a
// benchmark can turn it into SkipWithError and the rest of the run goes on.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace gpubench {

class CudaError : public std::runtime_error {
 public:
  // `out_of_memory`: the call failed for want of device memory (cudaErrorMemoryAllocation,
  // CUBLAS_STATUS_ALLOC_FAILED), which a benchmark reports as "does not fit" rather than as a bug.
  explicit CudaError(const std::string& message, bool out_of_memory = false)
      : std::runtime_error(message), out_of_memory_(out_of_memory) {}
  bool out_of_memory() const { return out_of_memory_; }

 private:
  bool out_of_memory_;
};

inline std::string cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "cublasStatus " + std::to_string(static_cast<int>(status));
}

inline void check_cuda(cudaError_t error, const char* expression, const char* file, int line) {
  if (error == cudaSuccess) return;
  // A failed runtime call also leaves its error as the thread's "last error"; clear it, or the
  // next cudaGetLastError() (after an unrelated kernel launch, in a later benchmark) would report
  // this failure again with the wrong file:line. Sticky errors (a faulted context) stay anyway.
  static_cast<void>(cudaGetLastError());
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
                      cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")",
                  error == cudaErrorMemoryAllocation);
}

inline void check_cublas(cublasStatus_t status, const char* expression, const char* file,
                         int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + expression +
                      " failed: " + cublas_status_name(status),
                  status == CUBLAS_STATUS_ALLOC_FAILED);
}

}  // namespace gpubench

#define GPUBENCH_CUDA_CHECK(expression) \
  ::gpubench::check_cuda((expression), #expression, __FILE__, __LINE__)
#define GPUBENCH_CUBLAS_CHECK(expression) \
  ::gpubench::check_cublas((expression), #expression, __FILE__, __LINE__)
// After a kernel launch: catches bad launch configurations (the launch itself returns nothing).
#define GPUBENCH_CUDA_CHECK_LAST_LAUNCH() \
  ::gpubench::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
