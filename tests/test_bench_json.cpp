// The contract between `bench` and the tools: names, counters and context keys in the JSON, the
// filter, the no-GPU path and bad input. Runs the real binary in a separate process.

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "kernels/common/openblas.hpp"
#include "tests/bench_process.hpp"

namespace {

using gpubench::testing::run_bench;

const char* const kTinyCpuFilter =
    "--benchmark_filter='^matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1$' "
    "--benchmark_min_time=0.01";

TEST(BenchJson, CpuRowCarriesNameCountersAndLabel) {
  const auto run = run_bench(kTinyCpuFilter);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << "no JSON written; stderr: " << run.stderr_text;
  const auto& rows = run.json["benchmarks"];
  ASSERT_EQ(rows.size(), 1U);
  const auto& row = rows[0];
  EXPECT_EQ(row["name"], "matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1");
  EXPECT_EQ(row["label"], "workload=matmul backend=cpu variant=openblas dtype=fp32 shape=square");
  for (const char* counter : {"flop", "FLOP/s", "pct_peak", "m", "n", "k", "blas_threads",
                              "bytes_h2d", "bytes_d2h", "max_error_over_bound"}) {
    EXPECT_TRUE(row.contains(counter)) << "missing counter " << counter;
  }
  EXPECT_DOUBLE_EQ(row["flop"].get<double>(), 2.0 * 16 * 16 * 16);
  // Minimum traffic: A (16 x 16) and B (16 x 16) read once, C (16 x 16) written once, 4 bytes each.
  EXPECT_DOUBLE_EQ(row["bytes_moved"].get<double>(), (16.0 * 16 * 3) * 4);
  EXPECT_DOUBLE_EQ(row["arithmetic_intensity"].get<double>(),
                   2.0 * 16 * 16 * 16 / ((16.0 * 16 * 3) * 4));
  EXPECT_DOUBLE_EQ(row["m"].get<double>(), 16);
  EXPECT_DOUBLE_EQ(row["blas_threads"].get<double>(), 1);
  // "threads" is Google Benchmark's own key (an integer); a user counter of that name would write
  // the key a second time, as a float, and strict JSON readers reject duplicate keys.
  EXPECT_TRUE(row["threads"].is_number_integer()) << row["threads"];
  EXPECT_GT(row["FLOP/s"].get<double>(), 0);
  EXPECT_GT(row["pct_peak"].get<double>(), 0);
  EXPECT_LE(row["max_error_over_bound"].get<double>(), 1.0);
  // FLOP/s agrees with the flop count and the reported time (real_time is in microseconds).
  const double seconds = row["real_time"].get<double>() * 1e-6;
  EXPECT_NEAR(row["FLOP/s"].get<double>() * seconds / row["flop"].get<double>(), 1.0, 0.25);
}

TEST(BenchJson, ContextDescribesTheMachine) {
  const auto run = run_bench(kTinyCpuFilter);
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto& context = run.json["context"];
  for (const char* key : {"gpubench_git_commit", "gpubench_sweep", "cpu_model", "cpu_logical_cpus",
                          "cpu_physical_cores", "cpu_isa", "cpu_clock_hz", "cpu_clock_source",
                          "cpu_nominal_clock_hz", "cpu_peak_fp32_flops", "openblas_config", "gpu",
                          "num_cpus", "mhz_per_cpu", "library_build_type"}) {
    EXPECT_TRUE(context.contains(key)) << "missing context key " << key;
  }
  EXPECT_EQ(context["gpubench_sweep"], "default");
  // The tests run from a git checkout, so the commit is known (12 hex digits, maybe "+modified").
  EXPECT_NE(context["gpubench_git_commit"], "unknown");
  EXPECT_GE(context["gpubench_git_commit"].get<std::string>().size(), 12U);
  EXPECT_NE(context["openblas_config"].get<std::string>().find("OpenBLAS"), std::string::npos);
  // The memory roofs, measured (harness/cpu_bandwidth.hpp), each with its source.
  for (const char* level :
       {"cpu_bandwidth_1thread", "cpu_bandwidth_all_cores", "cpu_bandwidth_cache"}) {
    const std::string key = std::string(level) + "_bytes_per_s";
    ASSERT_TRUE(context.contains(key)) << "missing context key " << key << ": "
                                       << context.value(std::string(level) + "_source", "");
    EXPECT_GT(std::stod(context[key].get<std::string>()), 0) << key;
    EXPECT_EQ(context[std::string(level) + "_source"].get<std::string>().rfind("measured: ", 0), 0U)
        << context[std::string(level) + "_source"];
  }
  EXPECT_GT(std::stod(context["cpu_llc_bytes"].get<std::string>()), 0);
  EXPECT_GE(std::stoi(context["cpu_bandwidth_all_cores_threads"].get<std::string>()), 1);
  EXPECT_GT(std::stod(context["cpu_bandwidth_probe_s"].get<std::string>()), 0);
  if (context["gpu"] != "none") {
    EXPECT_TRUE(context.contains("gpu_bandwidth_measured_source"));
    EXPECT_TRUE(context.contains("gpu_bandwidth_theoretical_source"));
    for (const char* key :
         {"gpu_compute_capability", "gpu_sm_count", "gpu_sm_clock_hz", "gpu_memory_bytes",
          "gpu_memory_bandwidth_bytes_per_s", "gpu_pcie_link", "cuda_driver_version",
          "cuda_runtime_version", "cublas_version", "gpu_peak_fp32_flops", "gpu_peak_bf16_flops"}) {
      EXPECT_TRUE(context.contains(key)) << "missing GPU context key " << key;
    }
  }
}

TEST(BenchJson, CeilingsOffLeavesTheirSourcesAndNoValues) {
  const auto run = run_bench(kTinyCpuFilter, "GPUBENCH_CEILINGS=off");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto& context = run.json["context"];
  for (const char* level :
       {"cpu_bandwidth_1thread", "cpu_bandwidth_all_cores", "cpu_bandwidth_cache"}) {
    EXPECT_FALSE(context.contains(std::string(level) + "_bytes_per_s")) << level;
    EXPECT_EQ(context.value(std::string(level) + "_source", ""),
              "not measured: GPUBENCH_CEILINGS=off");
  }
}

TEST(BenchJson, NoGpuRunsCpuBenchmarksSaysSoAndExitsZero) {
  // CUDA_VISIBLE_DEVICES set to nothing hides every device, on a GPU machine too.
  const auto run = run_bench("--benchmark_filter='/m:16/n:16/k:16/' --benchmark_min_time=0.01",
                             "CUDA_VISIBLE_DEVICES=");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  EXPECT_EQ(run.json["context"]["gpu"], "none");
  EXPECT_TRUE(run.json["context"].contains("gpu_unavailable_reason"));
  EXPECT_NE(run.stderr_text.find("GPU benchmarks skipped"), std::string::npos) << run.stderr_text;
  int cpu_rows = 0;
  for (const auto& row : run.json["benchmarks"]) {
    const std::string name = row["name"];
    EXPECT_EQ(name.find("/gpu/"), std::string::npos) << name;
    if (name.rfind("matmul/cpu/", 0) == 0) ++cpu_rows;
    EXPECT_FALSE(row.contains("error_occurred") && row["error_occurred"].get<bool>()) << name;
  }
  EXPECT_GE(cpu_rows, 2);  // fp32 at 1 thread and at all cores (or 1 row per thread count)
}

TEST(BenchJson, FilterSelectsExactlyTheMatmulBenchmarks) {
  const auto run = run_bench("--benchmark_list_tests --benchmark_filter=matmul", "", false);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  std::istringstream lines(run.stdout_text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("matmul/", 0), 0U) << line;
    ++count;
  }
  EXPECT_GT(count, 20);
}

TEST(BenchJson, UnknownFilterIsAClearErrorWithExitCode2) {
  const auto run = run_bench("--benchmark_filter=no_such_benchmark_anywhere", "", false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.stderr_text.find("no benchmark matches"), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("no_such_benchmark_anywhere"), std::string::npos);
}

TEST(BenchJson, InvalidFilterRegexIsNamedAsSuch) {
  const auto run = run_bench("--benchmark_filter='['", "", false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.stderr_text.find("is not a valid regular expression"), std::string::npos)
      << run.stderr_text;
}

TEST(BenchJson, UnknownFlagIsRejected) {
  const auto run = run_bench("--benchmark_no_such_flag=1", "", false);
  EXPECT_NE(run.exit_code, 0);
}

TEST(BenchJson, FullSweepAddsLargeSizes) {
  const auto default_run =
      run_bench("--benchmark_list_tests --benchmark_filter=matmul/cpu", "", false);
  const auto full_run =
      run_bench("--full --benchmark_list_tests --benchmark_filter=matmul/cpu", "", false);
  ASSERT_EQ(full_run.exit_code, 0) << full_run.stderr_text;
  EXPECT_EQ(default_run.stdout_text.find("m:4096/n:4096/k:4096"), std::string::npos);
  EXPECT_NE(full_run.stdout_text.find("m:4096/n:4096/k:4096"), std::string::npos);
  EXPECT_NE(full_run.stdout_text.find("m:1760/n:7000/k:1760"), std::string::npos);
}

// A bad data file fails the rows that read it, with the loader's message as the row's error, and
// the run goes on: an Iris file with a label outside its three classes, and a folder where a
// CIFAR-10 file should be. The digits row beside them trains as usual.
TEST(BenchJson, BadDataFilesFailTheirRowsAndTheRunGoesOn) {
  namespace fs = std::filesystem;
  const fs::path folder =
      fs::temp_directory_path() / ("gpubench_test_bad_data_" + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder / "cifar10" / "data_batch_1.bin");
  fs::copy_file(fs::path(GPUBENCH_SOURCE_DIR) / "data" / "digits.csv", folder / "digits.csv");
  {
    std::ifstream source(fs::path(GPUBENCH_SOURCE_DIR) / "data" / "iris.csv");
    std::ofstream iris(folder / "iris.csv");
    std::string line;
    for (int number = 1; std::getline(source, line); ++number) {
      // The last row's label (line 151, after the header) becomes a fourth class.
      iris << (number == 151 ? line.substr(0, line.rfind(',') + 1) + "3" : line) << "\n";
    }
  }
  const auto run = run_bench(
      "--benchmark_filter='^(mlp/cpu/openblas/data:(iris/batch:120|digits/batch:64)/hidden:(10|32)|"
      "cnn/cpu/openblas/data:cifar10/batch:1)/readback:1/threads:1$' --benchmark_min_time=0.01",
      "GPUBENCH_DATA_DIR='" + folder.string() + "' GPUBENCH_CIFAR10_DIR='" +
          (folder / "cifar10").string() + "'");
  fs::remove_all(folder);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  std::map<std::string, std::string> errors;  // name -> error message, "" for a row that ran
  for (const auto& row : run.json["benchmarks"]) {
    errors[row["name"]] = row.value("error_occurred", false) ? row.value("error_message", "?") : "";
  }
  ASSERT_EQ(errors.size(), 3U) << run.json["benchmarks"].dump();
  const std::string iris =
      errors["mlp/cpu/openblas/data:iris/batch:120/hidden:10/readback:1/threads:1"];
  EXPECT_NE(iris.find("iris.csv:151: label '3' (last column) is not one of the 3 classes of iris"),
            std::string::npos)
      << iris;
  const std::string cifar = errors["cnn/cpu/openblas/data:cifar10/batch:1/readback:1/threads:1"];
  EXPECT_NE(cifar.find("data_batch_1.bin' is a directory, not a file"), std::string::npos) << cifar;
  EXPECT_EQ(errors["mlp/cpu/openblas/data:digits/batch:64/hidden:32/readback:1/threads:1"], "");
}

}  // namespace
