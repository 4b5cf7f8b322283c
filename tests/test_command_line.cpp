// bench's checks of its own command line and output (benchmarks/command_line.hpp) on cases the
// binary cannot easily be made to produce: a JSON file cut off without a write error, one without
// rows, Google Benchmark's NaN and Infinity literals. tests/contract/test_command_line.py runs the
// binary for the rest.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "benchmarks/command_line.hpp"

namespace {

using gpubench::check_output_file;

class OutputFile : public ::testing::Test {
 protected:
  void write(const std::string& text) const {
    std::ofstream file(path_);
    file << text;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  const std::string path_ = "/tmp/gpubench_test_command_line_" + std::to_string(getpid());
};

const char* const kCompleteJson = R"({
  "context": {"date": "2026-01-01"},
  "benchmarks": [
    {"name": "matmul/cpu/openblas/m:16", "real_time": 1.5, "pct_peak": NaN, "ratio": -Infinity,
     "label": "NaN and Infinity stay in strings"}
  ]
})";

TEST_F(OutputFile, CompleteJsonWithNonFiniteValuesPasses) {
  write(kCompleteJson);
  EXPECT_EQ(check_output_file(path_, "json", false), std::nullopt);
}

TEST_F(OutputFile, JsonCutOffIsNamedAsSuch) {
  const std::string complete = kCompleteJson;
  write(complete.substr(0, complete.size() / 2));
  const auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("not valid JSON"), std::string::npos) << *cause;
}

TEST_F(OutputFile, JsonWithoutBenchmarksArrayFails) {
  write(R"({"context": {}, "benchmarks": {}})");
  const auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("\"benchmarks\""), std::string::npos) << *cause;
}

TEST_F(OutputFile, EmptyFileFails) {
  write("");
  const auto cause = check_output_file(path_, "csv", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("empty"), std::string::npos) << *cause;
}

TEST_F(OutputFile, MissingFileFails) {
  const auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("missing"), std::string::npos) << *cause;
}

TEST_F(OutputFile, CsvIsNotParsedAsJson) {
  write("name,iterations\nmatmul/cpu/openblas/m:16,100\n");
  EXPECT_EQ(check_output_file(path_, "csv", false), std::nullopt);
}

TEST_F(OutputFile, FailedWriteFailsEvenWhenTheFileLooksComplete) {
  write(kCompleteJson);
  EXPECT_TRUE(check_output_file(path_, "json", true).has_value());
}

TEST(OutputDevice, DeviceIsJudgedByItsWritesOnly) {
  // /dev/null reads back empty: only the stream's state says whether the output arrived.
  EXPECT_EQ(check_output_file("/dev/null", "json", false), std::nullopt);
  EXPECT_TRUE(check_output_file("/dev/null", "json", true).has_value());
}

TEST(RunFlags, LastOccurrenceIsTheValue) {
  const std::vector<std::string> arguments = {"bench", "--benchmark_filter=a", "--benchmark_out=x",
                                              "--benchmark_filter=b"};
  EXPECT_EQ(gpubench::flag_value(arguments, "benchmark_filter"), "b");
  EXPECT_EQ(gpubench::flag_value(arguments, "benchmark_format"), std::nullopt);
}

TEST(RunFlags, BooleanFlagsFollowGoogleBenchmarksRules) {
  const auto set = [](const std::string& argument) {
    return gpubench::flag_is_set({"bench", argument}, "benchmark_list_tests");
  };
  EXPECT_TRUE(set("--benchmark_list_tests"));
  EXPECT_TRUE(set("--benchmark_list_tests=true"));
  EXPECT_TRUE(set("--benchmark_list_tests=1"));
  EXPECT_FALSE(set("--benchmark_list_tests=false"));
  EXPECT_FALSE(set("--benchmark_list_tests=0"));
  EXPECT_FALSE(set("--benchmark_list_tests=no"));
  EXPECT_FALSE(set("--benchmark_filter=list"));
}

TEST(RunFlags, EveryOccurrenceIsChecked) {
  std::vector<std::string> arguments = {"bench", "--benchmark_min_time=nan",
                                        "--benchmark_min_time=0.5"};
  const auto error = gpubench::check_run_flags(&arguments);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("--benchmark_min_time=nan"), std::string::npos) << *error;
}

}  // namespace
