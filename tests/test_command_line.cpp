// bench's checks of its own command line (benchmarks/command_line.hpp) and output
// (benchmarks/output_file.hpp) on cases the binary cannot easily be made to produce: a JSON file
// cut off without a write error, one followed by another run's bytes, one without rows, Google
// Benchmark's NaN and Infinity literals. tests/contract/test_command_line.py runs the binary for
// the rest.

#include <gtest/gtest.h>

#include <unistd.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/command_line.hpp"
#include "benchmarks/output_file.hpp"

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

// Two runs writing one file through truncating streams leave the shorter document, NUL bytes where
// the longer run's writes skipped ahead, and the longer run's tail. nlohmann::json stops at a NUL
// byte as at the end of its input, so the check looks for them itself.
TEST_F(OutputFile, CompleteJsonFollowedByNulBytesAndAnotherRunsTailFails) {
  const std::string complete = kCompleteJson;
  write(complete + std::string(64, '\0') + "  {\"name\": \"matmul/cpu/openblas/m:32\"}\n  ]\n}\n");
  const auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("NUL byte"), std::string::npos) << *cause;
  EXPECT_NE(cause->find("byte " + std::to_string(complete.size())), std::string::npos) << *cause;
}

TEST_F(OutputFile, CompleteJsonFollowedByOtherBytesFails) {
  const std::string complete = kCompleteJson;
  // The other bytes start at the first one that is not white space.
  for (const auto& [tail, offset] :
       {std::pair<std::string, std::size_t>{complete, 0}, {"\n  ]\n}\n", 3}, {"x", 0}}) {
    write(complete + tail);
    const auto cause = check_output_file(path_, "json", false);
    ASSERT_TRUE(cause.has_value()) << tail;
    EXPECT_NE(cause->find("followed by other bytes at byte " +
                          std::to_string(complete.size() + offset) + " of "),
              std::string::npos)
        << *cause;
  }
}

TEST_F(OutputFile, TrailingWhiteSpacePasses) {
  write(std::string(kCompleteJson) + "\n\n  \n");
  EXPECT_EQ(check_output_file(path_, "json", false), std::nullopt);
}

TEST_F(OutputFile, SyntaxErrorIsPlacedAtItsByte) {
  // NaN is replaced by a number of the same length, so the offset is the file's.
  write(R"({"context": {}, "benchmarks": [{"name": "a", "x": NaN, "y": 1 2}]})");
  const auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("syntax error at byte 62 "), std::string::npos) << *cause;
}

TEST_F(OutputFile, JsonWithoutContextOrRowNamesFails) {
  write(R"({"benchmarks": []})");
  auto cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("\"context\""), std::string::npos) << *cause;
  write(R"({"context": {}, "benchmarks": [{"name": "a"}, {"real_time": 1}]})");
  cause = check_output_file(path_, "json", false);
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("benchmarks[1] has no \"name\""), std::string::npos) << *cause;
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

// The writer: a temporary file beside the target, renamed over it only when it reads back whole.
class AtomicOutput : public ::testing::Test {
 protected:
  static std::string read(const std::filesystem::path& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream file(path);
    file << text;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder_)) {
      if (entry.is_regular_file()) found.push_back(entry.path().filename().string());
    }
    return found;
  }
  void SetUp() override { std::filesystem::create_directories(folder_); }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  const std::filesystem::path folder_ = std::filesystem::temp_directory_path() /
                                        ("gpubench_test_atomic_output_" + std::to_string(getpid()));
};

TEST_F(AtomicOutput, CompleteFileReplacesTheTargetAndCreatesItsFolder) {
  const auto target = folder_ / "results" / "nested" / "run.json";
  gpubench::OutputFile out;
  ASSERT_EQ(out.open(target.string()), std::nullopt);
  EXPECT_FALSE(out.in_place());
  EXPECT_EQ(std::filesystem::path(out.write_path()).parent_path(), target.parent_path());
  EXPECT_FALSE(std::filesystem::exists(target));  // nothing there until the run is complete
  write(out.write_path(), kCompleteJson);
  ASSERT_EQ(out.publish("json", false), std::nullopt);
  EXPECT_EQ(read(target), kCompleteJson);
  EXPECT_EQ(names(), std::vector<std::string>{"run.json"});
}

TEST_F(AtomicOutput, IncompleteFileLeavesTheTargetAsItWas) {
  const auto target = folder_ / "run.json";
  write(target.string(), "the previous run\n");
  {
    gpubench::OutputFile out;
    ASSERT_EQ(out.open(target.string()), std::nullopt);
    write(out.write_path(), std::string(kCompleteJson).substr(0, 40));
    const auto cause = out.publish("json", false);
    ASSERT_TRUE(cause.has_value());
    EXPECT_NE(cause->find("cut off"), std::string::npos) << *cause;
  }
  EXPECT_EQ(read(target), "the previous run\n");
  EXPECT_EQ(names(), std::vector<std::string>{"run.json"});
}

TEST_F(AtomicOutput, UnpublishedFileIsRemoved) {
  {
    gpubench::OutputFile out;
    ASSERT_EQ(out.open((folder_ / "run.json").string()), std::nullopt);
    write(out.write_path(), kCompleteJson);
  }
  EXPECT_TRUE(names().empty());
}

TEST_F(AtomicOutput, FolderOrFileInTheWayIsNamed) {
  gpubench::OutputFile into_folder;
  auto cause = into_folder.open(folder_.string());
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("is a folder"), std::string::npos) << *cause;
  cause = gpubench::OutputFile().open((folder_ / "new-folder").string() + "/");
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("names a folder"), std::string::npos) << *cause;
  EXPECT_FALSE(std::filesystem::exists(folder_ / "new-folder"));
  write((folder_ / "a-file").string(), "x");
  gpubench::OutputFile under_file;
  cause = under_file.open((folder_ / "a-file" / "run.json").string());
  ASSERT_TRUE(cause.has_value());
  EXPECT_NE(cause->find("cannot create the folder '" + (folder_ / "a-file").string() + "'"),
            std::string::npos)
      << *cause;
}

TEST_F(AtomicOutput, SymbolicLinkStaysAndItsFileIsReplaced) {
  const auto file = folder_ / "real.json";
  const auto link = folder_ / "link.json";
  write(file.string(), "old\n");
  std::filesystem::create_symlink(file, link);
  gpubench::OutputFile out;
  ASSERT_EQ(out.open(link.string()), std::nullopt);
  write(out.write_path(), kCompleteJson);
  ASSERT_EQ(out.publish("json", false), std::nullopt);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read(file), kCompleteJson);
}

TEST(AtomicOutputDevice, DeviceIsWrittenInPlace) {
  gpubench::OutputFile out;
  ASSERT_EQ(out.open("/dev/null"), std::nullopt);
  EXPECT_TRUE(out.in_place());
  EXPECT_EQ(out.write_path(), "/dev/null");
  EXPECT_EQ(out.publish("json", false), std::nullopt);
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
