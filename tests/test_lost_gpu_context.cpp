// After a faulted kernel has lost the CUDA context, every later GPU row is skipped with one message
// naming the row that lost it, and the CPU rows still run (harness/result_row.hpp). The detection
// of a sticky error itself needs a GPU: tests/test_gpu_context_lost.cu.

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "harness/result_row.hpp"

namespace {

// Each run's error message by benchmark name ("" for a run without an error).
class ErrorsByName : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      errors[run.benchmark_name()] = run.error_occurred ? run.error_message : "";
  }
  std::map<std::string, std::string> errors;
};

// How often each row's fixture was called, by backend.
std::map<std::string, int> fixture_calls;

void counted_row(benchmark::State& state, const gpubench::RowId& id) {
  ++fixture_calls[id.backend];
  for (auto _ : state) benchmark::DoNotOptimize(fixture_calls);
}

TEST(LostGpuContext, LaterGpuRowsAreSkippedNamingTheRowThatLostItAndCpuRowsStillRun) {
  const gpubench::RowId gpu_row{"lost_context", "gpu", "kernel"};
  const gpubench::RowId cpu_row{"lost_context", "cpu", "loop"};
  gpubench::register_row(gpu_row, gpubench::IterationTime::benchmark_clock, counted_row);
  gpubench::register_row(cpu_row, gpubench::IterationTime::benchmark_clock, counted_row);
  ASSERT_FALSE(gpubench::lost_gpu_context().has_value());

  gpubench::mark_gpu_context_lost("faulty/gpu/G_kernel/n:1",
                                  "cudaErrorIllegalAddress (an illegal "
                                  "memory access was encountered)");
  gpubench::mark_gpu_context_lost("second/gpu/G_kernel/n:1", "cudaErrorLaunchFailure");
  ErrorsByName reporter;
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&reporter, "^lost_context/"), 2U);

  EXPECT_EQ(fixture_calls["gpu"], 0) << "the GPU row's fixture must not run";
  EXPECT_GE(fixture_calls["cpu"], 1);
  const std::string& skipped = reporter.errors.at(gpu_row.name());
  // The first row that lost the context is named, with its error, and what to do.
  EXPECT_NE(skipped.find("faulty/gpu/G_kernel/n:1"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("cudaErrorIllegalAddress"), std::string::npos) << skipped;
  EXPECT_EQ(skipped.find("second/"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("new process"), std::string::npos) << skipped;
  EXPECT_EQ(reporter.errors.at(cpu_row.name()), "");
}

}  // namespace
