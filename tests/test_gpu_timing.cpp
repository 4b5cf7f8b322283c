// The GPU timing contract, through the real `bench` binary: e2e phase times add up to at most
// t_wall, and the overhead probes produce positive, ordered numbers. Label `gpu`.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/bench_process.hpp"
#include "tests/gpu_test_main.hpp"

namespace {

using gpubench::testing::run_bench;

std::map<std::string, nlohmann::json> rows_by_name(const nlohmann::json& json) {
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : json["benchmarks"]) rows[row["name"].get<std::string>()] = row;
  return rows;
}

TEST(GpuTiming, EndToEndPhasesAddUpToAtMostWallTime) {
  const auto run = run_bench(
      "--benchmark_filter='^matmul/gpu/cublas_e2e/dtype:fp32/host:(pinned|pageable)/"
      "m:(64|512|1024)/n:(64|512|1024)/k:(64|512|1024)/' "
      "--benchmark_min_time=0.05");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  int checked = 0;
  for (const auto& row : run.json["benchmarks"]) {
    const std::string name = row["name"];
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    const double phases =
        row["t_h2d"].get<double>() + row["t_compute"].get<double>() + row["t_d2h"].get<double>();
    EXPECT_GT(row["t_h2d"].get<double>(), 0) << name;
    EXPECT_GT(row["t_compute"].get<double>(), 0) << name;
    EXPECT_GT(row["t_d2h"].get<double>(), 0) << name;
    // Events sit inside the host clock's window; 1 us covers the event timer's resolution.
    EXPECT_LE(phases, row["t_wall"].get<double>() + 1e-6) << name;
    EXPECT_GE(row["t_overhead"].get<double>(), -1e-6) << name;
    // The GEMM's traffic: A and B read once, C written once, fp32.
    const double m = row["m"];
    const double n = row["n"];
    const double k = row["k"];
    EXPECT_DOUBLE_EQ(row["bytes_moved"].get<double>(), (m * k + k * n + m * n) * 4) << name;
    EXPECT_DOUBLE_EQ(row["arithmetic_intensity"].get<double>(),
                     2 * m * n * k / ((m * k + k * n + m * n) * 4))
        << name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);  // 3 sizes x pinned/pageable
}

TEST(GpuTiming, DeviceBandwidthIsMeasuredBelowItsTheoreticalFigure) {
  const auto run = run_bench(
      "--benchmark_filter='^matmul/gpu/cublas_kernel/dtype:fp32/m:256/n:256/k:256/' "
      "--benchmark_min_time=0.01");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto& context = run.json["context"];
  const std::string source = context.value("gpu_bandwidth_measured_source", "");
  ASSERT_EQ(source.rfind("measured: ", 0), 0U) << source;
  const double measured =
      std::stod(context["gpu_bandwidth_measured_bytes_per_s"].get<std::string>());
  EXPECT_GT(measured, 1e11) << "a device triad below 100 GB/s: " << source;
  const std::string theoretical_source = context.value("gpu_bandwidth_theoretical_source", "");
  if (theoretical_source.rfind("theoretical: ", 0) == 0) {
    const double theoretical =
        std::stod(context["gpu_bandwidth_theoretical_bytes_per_s"].get<std::string>());
    // A triad reaches most of the bus's figure and never passes it (5% for the clocks' rounding).
    EXPECT_LE(measured, 1.05 * theoretical) << theoretical_source;
    EXPECT_GE(measured, 0.5 * theoretical) << source << " against " << theoretical_source;
  }
}

TEST(GpuTiming, ProbesArePositiveAndOrdered) {
  const auto run = run_bench(
      "--benchmark_filter='^overhead/(launch|sync|h2d/(pinned|pageable)/bytes:(4096|67108864)/)' "
      "--benchmark_min_time=0.05");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  auto rows = rows_by_name(run.json);
  for (const auto& [name, row] : rows) {
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    EXPECT_GT(row["real_time"].get<double>(), 0) << name;
  }
  const auto& pinned = rows.at("overhead/h2d/pinned/bytes:67108864/manual_time");
  const auto& pageable = rows.at("overhead/h2d/pageable/bytes:67108864/manual_time");
  EXPECT_GT(pinned["bytes_per_s"].get<double>(), pageable["bytes_per_s"].get<double>());
  const auto& small = rows.at("overhead/h2d/pinned/bytes:4096/manual_time");
  EXPECT_LT(small["t_h2d"].get<double>(), pinned["t_h2d"].get<double>());

  const double roundtrip = rows.at("overhead/launch/roundtrip/manual_time")["t_wall"];
  const double per_launch_in_burst =
      rows.at("overhead/launch/burst/kernels:1000/manual_time")["t_per_launch"];
  const double per_graph_node =
      rows.at("overhead/launch/graph/nodes:1000/manual_time")["t_per_node"];
  EXPECT_GT(roundtrip, 0);
  EXPECT_LT(roundtrip, 1e-3);  // a launch + sync round trip is microseconds, not milliseconds
  // Pipelined launches cost less each than a full round trip.
  EXPECT_LT(per_launch_in_burst, roundtrip);
  EXPECT_GT(per_graph_node, 0);
  EXPECT_GT(rows.at("overhead/sync/stream/manual_time")["t_sync"].get<double>(), 0);
}

TEST(GpuTiming, KernelOnlyRowsValidateAndReportPeakShare) {
  const auto run = run_bench(
      "--benchmark_filter='^matmul/gpu/cublas_kernel/.*/m:256/n:256/k:256/' "
      "--benchmark_min_time=0.02");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  int checked = 0;
  for (const auto& row : run.json["benchmarks"]) {
    const std::string name = row["name"];
    ASSERT_FALSE(row.contains("error_occurred")) << name << ": " << row.value("error_message", "");
    EXPECT_LE(row["max_error_over_bound"].get<double>(), 1.0) << name;
    EXPECT_GT(row["pct_peak"].get<double>(), 0) << name;
    EXPECT_LT(row["pct_peak"].get<double>(), 100) << name;
    EXPECT_GT(row["device_bytes"].get<double>(), 0) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // fp32, tf32, fp16, bf16, fp64
}

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
