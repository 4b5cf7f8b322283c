// A faulted kernel's error is sticky and named (sticky_cuda_error, harness/gpu_info.hpp), an error
// that clears is not, and once a GPU row has lost the context every later GPU row is skipped
// naming it (harness/result_row.hpp). The faulting kernel is deliberate: this test is not among
// the sanitizer step's (tests/CMakeLists.txt), and the fault is its last GPU work, since the
// process cannot use the device after it.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "harness/gpu_info.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"
#include "tests/gpu_test_main.hpp"

namespace {

// Writes through a null pointer: cudaErrorIllegalAddress, which no later call can clear.
__global__ void write_through_null(float* nothing) { nothing[threadIdx.x] = 1.0f; }

class ErrorsByName : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      errors[run.benchmark_name()] = run.error_occurred ? run.error_message : "";
    }
  }
  std::map<std::string, std::string> errors;
};

TEST(StickyCudaError, AFailedAllocationClearsAndIsNotSticky) {
  void* too_large = nullptr;
  EXPECT_EQ(cudaMalloc(&too_large, std::size_t{1} << 60), cudaErrorMemoryAllocation);
  EXPECT_FALSE(gpubench::sticky_cuda_error().has_value());
  EXPECT_FALSE(gpubench::lost_gpu_context().has_value());
}

TEST(StickyCudaError, AFaultedKernelLosesTheContextAndLaterGpuRowsAreSkippedNamingIt) {
  const gpubench::RowId faulting{"context", "gpu", "faulting"};
  const gpubench::RowId later{"context", "gpu", "later"};
  int later_calls = 0;
  gpubench::register_row(faulting, gpubench::IterationTime::benchmark_clock,
                         [](benchmark::State& state, const gpubench::RowId&) {
                           write_through_null<<<1, 32>>>(nullptr);
                           GPUBENCH_CUDA_CHECK(cudaDeviceSynchronize());
                           for (auto _ : state) {
                           }
                         });
  gpubench::register_row(later, gpubench::IterationTime::benchmark_clock,
                         [&later_calls](benchmark::State& state, const gpubench::RowId&) {
                           ++later_calls;
                           for (auto _ : state) {
                           }
                         });
  ErrorsByName reporter;
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&reporter, "^context/gpu/(faulting|later)$"), 2U);

  EXPECT_NE(reporter.errors.at(faulting.name()).find("cudaErrorIllegalAddress"), std::string::npos)
      << reporter.errors.at(faulting.name());
  const auto sticky = gpubench::sticky_cuda_error();
  ASSERT_TRUE(sticky.has_value());
  EXPECT_NE(sticky->find("cudaErrorIllegalAddress"), std::string::npos) << *sticky;
  const std::string& skipped = reporter.errors.at(later.name());
  EXPECT_NE(skipped.find("lost in " + faulting.name()), std::string::npos) << skipped;
  EXPECT_EQ(later_calls, 0);
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
