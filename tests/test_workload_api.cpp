// The public API's declaration and what the runner derives from it (include/gpubench/workload.hpp,
// benchmarks/workload_rows.hpp): the refusals of a bad declaration, the sweep's points and their
// order, the rows' names and counters, the seeded buffers, and the comparison of outputs that
// decides whether a GPU row is valid. The programs built against the installed package are
// scripts/check-examples.sh's.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "benchmarks/workload_rows.hpp"
#include "gpubench/workload.hpp"

namespace {

using gpubench::Buffers;
using gpubench::Point;
using gpubench::Workload;

Workload complete(const std::string& name) {
  return Workload(name)
      .text_axis("mode", {"fast", "exact"})
      .axis("n", {4, 8})
      .input<float>("x", "n")
      .output<double>("y", [](const Point& p) { return static_cast<std::size_t>(2 * p["n"]); })
      .work([](const Point& p) {
        return gpubench::Work{2.0 * p["n"], 8.0 * p["n"]};
      })
      .cpu("loop", [](const Point& p, const Buffers& b) {
        return [n = p["n"], x = b.get<float>("x"), y = b.get<double>("y")] {
          for (long long i = 0; i < 2 * n; ++i) y[i] = x[0];
        };
      });
}

std::string refusal(const Workload& workload) {
  try {
    gpubench::add_workload(workload);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(WorkloadApi, RefusesAnIncompleteOrMisnamedDeclarationNamingTheProblem) {
  EXPECT_NE(refusal(Workload("bad/name").axis("n", {1})).find("the name must be"),
            std::string::npos);
  const std::string empty = refusal(Workload("empty"));
  for (const char* missing : {"no axis", "no buffer", "no work()", "no cpu() function"}) {
    EXPECT_NE(empty.find(missing), std::string::npos) << empty;
  }
  EXPECT_NE(refusal(complete("buffer_twice").output<float>("x", "n")).find("'x' named twice"),
            std::string::npos);
  EXPECT_NE(refusal(complete("axis_twice").axis("n", {1})).find("axis 'n' declared twice"),
            std::string::npos);
  EXPECT_NE(refusal(complete("spaces").text_axis("layout", {"row major"})).find("'row major'"),
            std::string::npos);
  EXPECT_NE(refusal(complete("no_values").axis("m", {})).find("axis 'm' has no values"),
            std::string::npos);
  EXPECT_NE(refusal(complete("reserved").axis("threads", {1})).find("a name the rows use"),
            std::string::npos);
  Workload inputs_only = Workload("inputs_only")
                             .axis("n", {1})
                             .input<float>("x", "n")
                             .work([](const Point&) { return gpubench::Work{}; })
                             .cpu("loop", [](const Point&, const Buffers&) { return [] {}; });
  EXPECT_NE(refusal(inputs_only).find("no output buffer"), std::string::npos);
  EXPECT_EQ(refusal(complete("accepted_once")), "");
  EXPECT_NE(refusal(complete("accepted_once")).find("already added"), std::string::npos);
}

TEST(WorkloadApi, PointsRunTheFirstAxisSlowestAndLookUpByName) {
  const std::vector<Point> points = gpubench::points_of(complete("points").declaration());
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].text("mode"), "fast");
  EXPECT_EQ(points[0]["n"], 4);
  EXPECT_EQ(points[1]["n"], 8);
  EXPECT_EQ(points[2].text("mode"), "exact");
  EXPECT_THROW(points[0]["m"], std::out_of_range);
  EXPECT_THROW(points[0].text("n"), std::out_of_range);
}

TEST(WorkloadApi, RowNamesFollowTheAxesWithHostBeforeTheFirstNumericOne) {
  const Workload workload = complete("names");
  const Point point = gpubench::points_of(workload.declaration())[1];
  EXPECT_EQ(gpubench::workload_row_id(workload.declaration(), "cpu", "loop", point).name(),
            "names/cpu/loop/mode:fast/n:8");
  const gpubench::RowId e2e =
      gpubench::workload_row_id(workload.declaration(), "gpu", "cuda_e2e", point, "pinned");
  EXPECT_EQ(e2e.name(), "names/gpu/cuda_e2e/mode:fast/host:pinned/n:8");
  // n is one of the schema's size counters: written as the counter n too; mode has no label key.
  ASSERT_EQ(e2e.parameters.size(), 3u);
  EXPECT_FALSE(e2e.parameters[0].counter.has_value());
  EXPECT_FALSE(e2e.parameters[0].label.has_value());
  ASSERT_TRUE(e2e.parameters[2].counter.has_value());
  EXPECT_EQ(*e2e.parameters[2].counter, gpubench::Counter::n);
  EXPECT_EQ(e2e.parameters[2].value, 8);
}

TEST(WorkloadApi, ListedPointsKeepTheirOrderLabelsAndThreadsComeLast) {
  using gpubench::BufferRole;
  using gpubench::ElementType;
  const auto type = [](const Point& p) {
    return p.text("dtype") == "fp64" ? ElementType::float64 : ElementType::float32;
  };
  const Workload workload =
      Workload("listed")
          .points({Point().set("dtype", "fp32").set("m", 2).label("shape", "square"),
                   Point().set("dtype", "fp64").set("m", 3).label("shape", "layer")})
          .cpu_threads({1, 2})
          .buffer(
              "c", BufferRole::output, [](const Point& p) { return std::size_t(p["m"]); }, type)
          .work([](const Point&) { return gpubench::Work{}; })
          .cpu("loop", [](const Point&, const Buffers&) { return [] {}; });
  EXPECT_EQ(refusal(workload), "");
  const std::vector<Point> points = gpubench::points_of(workload.declaration());
  ASSERT_EQ(points.size(), 2u);
  const gpubench::RowId id =
      gpubench::workload_row_id(workload.declaration(), "cpu", "loop", points[1], "", 2);
  EXPECT_EQ(id.name(), "listed/cpu/loop/dtype:fp64/m:3/threads:2");
  ASSERT_TRUE(id.parameters.back().counter.has_value());
  EXPECT_EQ(*id.parameters.back().counter, gpubench::Counter::blas_threads);
  ASSERT_TRUE(id.parameters.front().label.has_value());  // dtype is a label key
  gpubench::HostArrays arrays(workload.declaration(), points[1]);
  EXPECT_TRUE(arrays.holds_double());
  EXPECT_EQ(arrays.bytes(0), 3 * sizeof(double));

  Workload mixed = Workload("mixed_points")
                       .points({Point().set("m", 1), Point().set("n", 1)})
                       .output<float>("c", "m")
                       .work([](const Point&) { return gpubench::Work{}; })
                       .cpu("loop", [](const Point&, const Buffers&) { return [] {}; });
  EXPECT_NE(refusal(mixed).find("point 1 sets other axes than point 0"), std::string::npos);
  Workload unknown_label = Workload("unknown_label")
                               .points({Point().set("m", 1).label("colour", "red")})
                               .output<float>("c", "m")
                               .work([](const Point&) { return gpubench::Work{}; })
                               .cpu("loop", [](const Point&, const Buffers&) { return [] {}; });
  EXPECT_NE(refusal(unknown_label).find("label 'colour' is not a label key"), std::string::npos);
}

TEST(WorkloadApi, HostArraysSeedInputsPoisonOutputsAndCheckElementTypes) {
  const Workload workload = complete("arrays");
  const Point point = gpubench::points_of(workload.declaration())[0];
  gpubench::HostArrays arrays(workload.declaration(), point);
  arrays.fill();
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays.bytes(0), 4 * sizeof(float));
  EXPECT_EQ(arrays.bytes(1), 8 * sizeof(double));
  const Buffers buffers = arrays.buffers();
  const float* x = buffers.get<float>("x");
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(x[i], -1.0f);
    EXPECT_LT(x[i], 1.0f);
    EXPECT_NE(x[i], 0.0f);
  }
  EXPECT_TRUE(std::isnan(buffers.get<double>("y")[0]));
  EXPECT_THROW(buffers.get<double>("x"), std::invalid_argument);
  EXPECT_THROW(buffers.get<float>("z"), std::invalid_argument);
  gpubench::HostArrays again(workload.declaration(), point);
  again.fill();
  EXPECT_EQ(std::memcmp(again.data(0), arrays.data(0), arrays.bytes(0)), 0);  // fixed seed
}

TEST(WorkloadApi, OutputsMatchWithinTheToleranceAndAMismatchOrNanIsNamed) {
  const Workload workload = complete("compare").tolerance(1e-3, 0);
  const Point point = gpubench::points_of(workload.declaration())[0];
  gpubench::HostArrays reference(workload.declaration(), point);
  reference.fill();
  workload.declaration().cpu(point, reference.buffers())();
  gpubench::HostArrays actual(workload.declaration(), point);
  actual.fill();
  std::memcpy(actual.data(1), reference.data(1), reference.bytes(1));
  const std::byte* pointers[] = {actual.data(0), actual.data(1)};

  gpubench::CheckResult check =
      gpubench::compare_outputs(workload.declaration(), reference, pointers);
  EXPECT_TRUE(check.passed) << check.message;
  EXPECT_EQ(check.worst_error_over_bound, 0);

  auto* y = reinterpret_cast<double*>(actual.data(1));
  y[5] *= 1.0005;  // half the relative bound
  check = gpubench::compare_outputs(workload.declaration(), reference, pointers);
  EXPECT_TRUE(check.passed) << check.message;
  EXPECT_NEAR(check.worst_error_over_bound, 0.5, 1e-6);

  y[3] *= 1.01;
  check = gpubench::compare_outputs(workload.declaration(), reference, pointers);
  EXPECT_FALSE(check.passed);
  EXPECT_NE(check.message.find("GPU output 'y' differs from the CPU's at element 3"),
            std::string::npos)
      << check.message;

  y[3] = std::numeric_limits<double>::quiet_NaN();
  check = gpubench::compare_outputs(workload.declaration(), reference, pointers);
  EXPECT_FALSE(check.passed);
}

}  // namespace
