// The per-repetition conditions (harness/conditions.hpp): parsing /proc/stat, the figures of a
// window, the disturbance rule, the GPU sample summary, the tally of what Google Benchmark reports,
// NVML's absent path, and bench itself with a CPU-burning process beside it.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness/conditions.hpp"
#include "harness/cpu_energy.hpp"
#include "harness/nvml.hpp"
#include "tests/bench_process.hpp"

namespace {

using gpubench::CpuCounters;
using gpubench::DisturbanceRule;
using gpubench::RepetitionConditions;

constexpr double kTick = 0.01;

const char* const kProcStat =
    "cpu  1000 10 200 5000 30 4 6 70 0 0\n"
    "cpu0 600 10 100 2500 10 2 3 30 0 0\n"
    "cpu1 400 0 100 2500 20 2 3 40 0 0\n"
    "intr 123 4 5\n"
    "ctxt 999\n";

TEST(ProcStat, TheAggregateLineCountsUserNiceSystemIrqSoftirqAsBusyAndStealApart) {
  const auto times = gpubench::parse_proc_stat(kProcStat, {}, kTick);
  ASSERT_TRUE(times.has_value());
  EXPECT_DOUBLE_EQ(times->busy_s, (1000 + 10 + 200 + 4 + 6) * kTick);  // not idle, iowait, steal
  EXPECT_DOUBLE_EQ(times->steal_s, 70 * kTick);
}

TEST(ProcStat, AnAffinitySumsItsOwnCpusOnly) {
  const auto times = gpubench::parse_proc_stat(kProcStat, {1}, kTick);
  ASSERT_TRUE(times.has_value());
  EXPECT_DOUBLE_EQ(times->busy_s, (400 + 0 + 100 + 2 + 3) * kTick);
  EXPECT_DOUBLE_EQ(times->steal_s, 40 * kTick);
  const auto both = gpubench::parse_proc_stat(kProcStat, {0, 1}, kTick);
  ASSERT_TRUE(both.has_value());
  EXPECT_DOUBLE_EQ(both->busy_s, (715 + 505) * kTick);
}

TEST(ProcStat, AMissingCpuOrAShortLineIsNoReading) {
  EXPECT_FALSE(gpubench::parse_proc_stat(kProcStat, {2}, kTick).has_value());
  EXPECT_FALSE(gpubench::parse_proc_stat("cpu  1 2 3 4\n", {}, kTick).has_value());
  EXPECT_FALSE(gpubench::parse_proc_stat("", {}, kTick).has_value());
  // "cpu1" must not be taken for "cpu" or "cpu10".
  EXPECT_FALSE(gpubench::parse_proc_stat("cpu10 1 2 3 4 5 6 7 8\n", {1}, kTick).has_value());
}

CpuCounters counters(double wall_s, double busy_s, double steal_s, double own_s,
                     std::map<long, double> waits) {
  CpuCounters result;
  result.wall_s = wall_s;
  result.busy_s = busy_s;
  result.steal_s = steal_s;
  result.own_cpu_s = own_s;
  result.wait_s_by_thread = std::move(waits);
  return result;
}

TEST(Window, OthersAreTheBusyTimeLessThisProcessesOwnPerSecond) {
  const auto begin = counters(10.0, 100.0, 1.0, 5.0, {{1, 0.5}, {2, 0.25}});
  // 2 s: 3 busy seconds, 1 of them this process's; thread 2 waited 0.25 s more, thread 3 was born
  // and waited 0.05 s, thread 1 did not wait.
  const auto end = counters(12.0, 103.0, 1.4, 6.0, {{1, 0.5}, {2, 0.5}, {3, 0.05}});
  const RepetitionConditions conditions = gpubench::cpu_conditions_between(begin, end);
  EXPECT_DOUBLE_EQ(conditions.window_s, 2.0);
  EXPECT_DOUBLE_EQ(*conditions.cpu_other_cores, 1.0);
  EXPECT_NEAR(*conditions.cpu_steal_cores, 0.2, 1e-12);
  EXPECT_NEAR(*conditions.cpu_wait_cores, 0.15, 1e-12);
}

TEST(Window, OthersAreReadFromAnEarlierReadingWhenOneIsGivenTheRestFromTheLoop) {
  const auto before = counters(9.75, 99.0, 0.9, 4.75, {});
  const auto begin = counters(10.0, 100.0, 1.0, 5.0, {{1, 0.5}});
  const auto end = counters(10.01, 100.02, 1.0, 5.01, {{1, 0.505}});
  const RepetitionConditions conditions = gpubench::cpu_conditions_between(begin, end, &before);
  EXPECT_NEAR(conditions.window_s, 0.01, 1e-12);
  EXPECT_NEAR(conditions.other_span_s, 0.26, 1e-12);
  // 1.02 busy seconds less 0.26 own over 0.26 s.
  EXPECT_NEAR(*conditions.cpu_other_cores, (1.02 - 0.26) / 0.26, 1e-9);
  EXPECT_NEAR(*conditions.cpu_wait_cores, 0.5, 1e-9);  // the loop's own figure
  // A reading later than the loop's start is not an extension.
  const RepetitionConditions loop_only = gpubench::cpu_conditions_between(begin, end, &end);
  EXPECT_NEAR(loop_only.other_span_s, 0.01, 1e-12);
}

TEST(History, TheReadingASpanBackIsKeptAndFound) {
  gpubench::CpuReadingHistory history;
  EXPECT_FALSE(history.reading_before(1.0, 0.25).has_value());
  for (double wall_s : {0.0, 0.1, 0.2, 0.3, 0.4, 0.5})
    history.add(counters(wall_s, wall_s, 0, 0, {}));
  // The newest at least 0.25 s before 0.5 is the one at 0.2.
  EXPECT_DOUBLE_EQ(history.reading_before(0.5, 0.25)->wall_s, 0.2);
  // None old enough: the oldest kept, which is the one at 0.2 (older ones were dropped).
  EXPECT_DOUBLE_EQ(history.reading_before(0.3, 0.25)->wall_s, 0.2);
  EXPECT_FALSE(history.reading_before(0.5, 0.25)->wait_s_by_thread.has_value());
}

TEST(Window, OthersNeverReadBelowZeroAndAnUnreadableSourceIsAbsent) {
  // /proc/stat rounds to ticks, the process clock does not: own time can exceed the busy delta.
  auto begin = counters(0.0, 10.0, 0.0, 0.0, {});
  auto end = counters(1.0, 10.0, 0.0, 0.004, {});
  EXPECT_DOUBLE_EQ(*gpubench::cpu_conditions_between(begin, end).cpu_other_cores, 0.0);
  end.busy_s.reset();
  end.wait_s_by_thread.reset();
  const RepetitionConditions conditions = gpubench::cpu_conditions_between(begin, end);
  EXPECT_FALSE(conditions.cpu_other_cores.has_value());
  EXPECT_FALSE(conditions.cpu_wait_cores.has_value());
}

RepetitionConditions quiet() {
  RepetitionConditions conditions;
  conditions.window_s = 0.1;
  conditions.cpu_other_cores = 0.02;
  conditions.cpu_wait_cores = 0.01;
  conditions.cpu_steal_cores = 0.0;
  return conditions;
}

// The rule on the 2-CPU machine its thresholds were measured on, unless told otherwise.
unsigned rule(const RepetitionConditions& conditions, int allowed_cpus = 2) {
  return gpubench::disturbed_by(conditions, kTick, allowed_cpus);
}

TEST(Rule, AQuietRepetitionIsNotDisturbed) {
  EXPECT_EQ(rule(quiet()), 0U);
  EXPECT_EQ(rule(RepetitionConditions{}), 0U);  // nothing known
}

TEST(Rule, WaitingForACpuWhileOthersRanIsCpuContention) {
  auto conditions = quiet();
  conditions.window_s = 1.0;
  conditions.cpu_wait_cores = DisturbanceRule::kMaxWaitCores * 1.5;
  conditions.cpu_other_cores = DisturbanceRule::kMinOtherCores * 1.5;
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedByCpu});
  // At the threshold is not above it.
  conditions.cpu_wait_cores = DisturbanceRule::kMaxWaitCores;
  EXPECT_EQ(rule(conditions), 0U);
}

TEST(Rule, OthersBelowTheNeighbourShareWithoutAWaitAreNotDisturbance) {
  // A 1-thread row on one of two CPUs, a light process beside it: nobody took this row's CPU.
  auto conditions = quiet();
  conditions.cpu_other_cores = 0.4;
  EXPECT_EQ(rule(conditions), 0U);
}

TEST(Rule, WaitingOnItsOwnThreadsIsNotContention) {
  // More threads than CPUs: the row waits on itself while nothing else runs.
  auto conditions = quiet();
  conditions.cpu_wait_cores = 1.0;
  conditions.cpu_other_cores = 0.0;
  EXPECT_EQ(rule(conditions), 0U);
}

TEST(Rule, OthersWithinTwoTicksOfRoundingConfirmNothing) {
  // A 50 ms loop waiting on its own threads on 4 CPUs (so the neighbour part, above 1 core,
  // stays out of it); /proc/stat's rounding shows 15 ms of "others".
  auto conditions = quiet();
  conditions.window_s = 0.05;
  conditions.cpu_wait_cores = 1.0;
  conditions.cpu_other_cores = 0.015 / conditions.window_s;
  EXPECT_EQ(rule(conditions, 4), 0U);
  // 30 ms of others is more than the rounding.
  conditions.cpu_other_cores = 0.03 / conditions.window_s;
  EXPECT_EQ(rule(conditions, 4), unsigned{gpubench::kDisturbedByCpu});
}

TEST(Rule, ANeighbourAboveAQuarterOfTheCpusDisturbsWithOrWithoutAWait) {
  // One busy process beside a 1-thread row on two CPUs: the row does not wait, yet it shares the
  // host core's caches and memory path (measured up to 27% slower on the 2-vCPU machine).
  auto conditions = quiet();
  conditions.cpu_other_cores = 1.0;
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedByNeighbour});
  conditions.cpu_wait_cores.reset();  // a kernel without schedstat: the same verdict
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedByNeighbour});
  // The threshold: half a core on two CPUs (the floor), a quarter of them on many.
  EXPECT_DOUBLE_EQ(DisturbanceRule::max_other_cores(2), 0.5);
  EXPECT_DOUBLE_EQ(DisturbanceRule::max_other_cores(16), 4.0);
  conditions.cpu_other_cores = 0.5;  // at the threshold is not above it
  EXPECT_EQ(rule(conditions), 0U);
  conditions.cpu_other_cores = 1.0;  // one core of 16 taken by a daemon is not a disturbance
  EXPECT_EQ(rule(conditions, 16), 0U);
  // A waiting row beside a busy neighbour fires both parts.
  conditions.cpu_wait_cores = 1.0;
  EXPECT_EQ(rule(conditions),
            unsigned{gpubench::kDisturbedByCpu | gpubench::kDisturbedByNeighbour});
}

TEST(Rule, OthersReadOverTheExtendedSpanCountItsTicksNotTheLoops) {
  // A 10 ms loop that waited 0.5 core, with others at 1 core read over the 0.25 s span: one tick
  // of the loop alone would not confirm them, the span's 25 ticks do.
  auto conditions = quiet();
  conditions.window_s = 0.01;
  conditions.cpu_wait_cores = 0.5;
  conditions.cpu_other_cores = 0.3;
  EXPECT_EQ(rule(conditions), 0U);
  conditions.other_span_s = DisturbanceRule::kMinOtherSpanS;
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedByCpu});
}

TEST(Rule, StealCountsAboveItsThresholdAndMoreThanOneTick) {
  auto conditions = quiet();
  conditions.window_s = 1.0;
  conditions.cpu_steal_cores = DisturbanceRule::kMaxStealCores * 2;
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedBySteal});
  // 50 ms window, one 10 ms tick of steal: 0.2 core by the numbers, but one tick is a rounding
  // step of /proc/stat, not a measurement.
  conditions.window_s = 0.05;
  conditions.cpu_steal_cores = kTick / conditions.window_s;
  EXPECT_EQ(rule(conditions), 0U);
  conditions.cpu_steal_cores = 3 * kTick / conditions.window_s;
  EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedBySteal});
}

TEST(Rule, TheGpuIsDisturbedByThermalSlowdownsAndPowerBrakesNotByItsPowerCap) {
  auto conditions = quiet();
  conditions.gpu_clock_event_reasons = gpubench::kNvmlReasonSwPowerCap;
  EXPECT_EQ(rule(conditions), 0U);
  for (std::uint64_t reason : {gpubench::kNvmlReasonHwSlowdown, gpubench::kNvmlReasonSwThermal,
                               gpubench::kNvmlReasonHwThermal, gpubench::kNvmlReasonHwPowerBrake}) {
    conditions.gpu_clock_event_reasons = reason | gpubench::kNvmlReasonSwPowerCap;
    EXPECT_EQ(rule(conditions), unsigned{gpubench::kDisturbedByGpu}) << "reason " << reason;
  }
}

// A counter that moves in steps at the times `steps_s` (its value is how many have passed), read
// on a clock that each pause advances by `poll_s`: measure_update_period without a GPU or a wait.
struct SteppedCounter {
  std::vector<double> steps_s;
  double poll_s = 0.001;
  double now_s = 0;
  bool readable = true;

  gpubench::UpdatePeriod measure(double limit_s = 1.0, int intervals = 3) {
    return gpubench::measure_update_period(
        [this]() -> std::optional<std::uint64_t> {
          if (!readable) return std::nullopt;
          std::uint64_t passed = 0;
          for (double step_s : steps_s) passed += step_s <= now_s ? 1 : 0;
          return passed * 7;  // millijoules: any change counts, not its size
        },
        [this] { return now_s; }, [this] { now_s += poll_s; }, limit_s, intervals);
  }
};

TEST(EnergyPeriod, AStepEveryTenthOfASecondIsMeasuredWithinOnePoll) {
  // The clock starts between two steps: the time before the first change is not an interval.
  SteppedCounter counter{{0.030, 0.130, 0.230, 0.330, 0.430, 0.530}};
  const auto period = counter.measure();
  ASSERT_TRUE(period.seconds.has_value()) << period.why_not;
  EXPECT_NEAR(*period.seconds, 0.1, counter.poll_s + 1e-12);
  EXPECT_EQ(period.intervals, 3);
  // Three whole intervals need four changes: it stopped at the fourth, not at the limit.
  EXPECT_NEAR(counter.now_s, 0.330, counter.poll_s + 1e-12);
}

TEST(EnergyPeriod, UnevenStepsAreJudgedByTheLongestInterval) {
  SteppedCounter counter{{0.010, 0.030, 0.190, 0.210, 0.400}};
  const auto period = counter.measure();
  ASSERT_TRUE(period.seconds.has_value()) << period.why_not;
  EXPECT_NEAR(*period.seconds, 0.160, counter.poll_s + 1e-12);
}

TEST(EnergyPeriod, ACounterThatMovesTooRarelyOrCannotBeReadHasNoPeriodAndSaysWhy) {
  SteppedCounter still{{}};
  auto period = still.measure(0.2);
  EXPECT_FALSE(period.seconds.has_value());
  EXPECT_NE(period.why_not.find("changed 0 times in 0.2 s"), std::string::npos) << period.why_not;
  EXPECT_NEAR(still.now_s, 0.2, still.poll_s + 1e-12);  // bounded by the limit

  SteppedCounter once{{0.05}};
  period = once.measure(0.2);
  EXPECT_FALSE(period.seconds.has_value());
  EXPECT_NE(period.why_not.find("changed 1 time in"), std::string::npos) << period.why_not;

  // Fewer intervals than asked within the limit: the longest of those seen.
  SteppedCounter slow{{0.05, 0.15}};
  period = slow.measure(0.2);
  ASSERT_TRUE(period.seconds.has_value()) << period.why_not;
  EXPECT_EQ(period.intervals, 1);

  SteppedCounter unreadable{{0.05, 0.15}};
  unreadable.readable = false;
  period = unreadable.measure();
  EXPECT_FALSE(period.seconds.has_value());
  EXPECT_NE(period.why_not.find("could not be read"), std::string::npos) << period.why_not;
}

TEST(EnergyPeriod, EnergyIsKeptOverTenStepsOfTheCounterAndNeverWithoutAKnownStep) {
  ASSERT_EQ(gpubench::EnergyRule::kMinUpdates, 10);
  EXPECT_FALSE(gpubench::energy_span_is_enough(0.065, 0.09));  // the H200's short rows
  EXPECT_FALSE(gpubench::energy_span_is_enough(0.899, 0.09));
  EXPECT_TRUE(gpubench::energy_span_is_enough(0.9, 0.09));
  EXPECT_TRUE(gpubench::energy_span_is_enough(11.9, 0.09));
  EXPECT_FALSE(gpubench::energy_span_is_enough(100.0, std::nullopt));
}

TEST(EnergyPeriod, WithoutAGpuThePeriodIsUnknownAndSaysWhy) {
  if (gpubench::nvml_device() != nullptr) GTEST_SKIP() << "NVML is loaded: the next test's case";
  const auto& period = gpubench::gpu_energy_update_period();
  EXPECT_FALSE(period.seconds.has_value());
  EXPECT_NE(period.why_not.find("no NVML"), std::string::npos) << period.why_not;
}

TEST(EnergyPeriod, AGpuWithAnEnergyCounterHasItsStepMeasuredWithinTheLimit) {
  const gpubench::NvmlDevice* device = gpubench::nvml_device();
  if (device == nullptr || !device->energy_mj()) GTEST_SKIP() << "no GPU energy counter here";
  const auto& period = gpubench::gpu_energy_update_period();
  ASSERT_TRUE(period.seconds.has_value()) << period.why_not;
  EXPECT_GT(*period.seconds, 0);
  EXPECT_LE(*period.seconds, gpubench::EnergyRule::kMeasureLimitS);
  std::cout << "energy counter step: " << *period.seconds << " s over " << period.intervals
            << " intervals\n";
}

TEST(GpuSamples, IdleSamplesGiveNoClockAndNoIdleReason) {
  gpubench::GpuSampleSummary summary;
  gpubench::GpuSample idle;
  idle.sm_clock_hz = 345e6;
  idle.clock_event_reasons = gpubench::kNvmlReasonGpuIdle;
  idle.power_w = 60;
  idle.temperature_c = 30;
  gpubench::GpuSample busy;
  busy.sm_clock_hz = 1980e6;
  busy.clock_event_reasons = gpubench::kNvmlReasonSwPowerCap;
  busy.power_w = 600;
  busy.temperature_c = 55;
  gpubench::GpuSample slower = busy;
  slower.sm_clock_hz = 1755e6;
  for (const auto& sample : {idle, busy, slower}) summary.add(sample);
  EXPECT_DOUBLE_EQ(*summary.sm_clock_min_hz, 1755e6);
  EXPECT_DOUBLE_EQ(*summary.sm_clock_max_hz, 1980e6);
  EXPECT_EQ(*summary.reasons, gpubench::kNvmlReasonSwPowerCap);
  EXPECT_DOUBLE_EQ(*summary.temperature_max_c, 55);
  EXPECT_DOUBLE_EQ(summary.power_sum_w / summary.power_samples, 420);
}

RepetitionConditions waited(double cores) {
  auto conditions = quiet();
  conditions.cpu_wait_cores = cores;
  return conditions;
}

TEST(Tally, EstimationCallsAreReplacedAndRepetitionsCounted) {
  gpubench::DisturbanceTally tally;
  // Row a: Google Benchmark estimates with 1, 10 and 100 iterations (only 100 is reported), then
  // runs two more repetitions of 100; row b: one call.
  tally.record("a", 1, waited(0.9), gpubench::kDisturbedByCpu);
  tally.record("a", 10, waited(0.8), gpubench::kDisturbedByCpu);
  tally.record("a", 100, waited(0.5), gpubench::kDisturbedByCpu);
  tally.record("a", 100, quiet(), 0);
  tally.record("a", 100, waited(0.3), gpubench::kDisturbedByCpu);
  tally.record("b", 5, quiet(), gpubench::kDisturbedBySteal);
  const gpubench::DisturbanceSummary summary = tally.summary();
  EXPECT_EQ(summary.repetitions, 4U);
  EXPECT_EQ(summary.disturbed, 3U);
  EXPECT_EQ(summary.by_cpu, 2U);
  EXPECT_EQ(summary.by_steal, 1U);
  EXPECT_EQ(summary.by_gpu, 0U);
  EXPECT_DOUBLE_EQ(summary.max_wait_cores, 0.5);  // the 0.9 and 0.8 calls were never reported
}

TEST(Nvml, AMissingLibraryIsNoDeviceWithAReasonThatNamesIt) {
  std::string why_not;
  const auto device =
      gpubench::NvmlDevice::open("00000000:01:00.0", &why_not, "libnvidia-ml-absent.so.1");
  EXPECT_EQ(device, nullptr);
  EXPECT_NE(why_not.find("cannot load libnvidia-ml-absent.so.1"), std::string::npos) << why_not;
}

TEST(Nvml, TheProcessDeviceIsThereOrSaysWhyNot) {
  if (gpubench::nvml_device() == nullptr) {
    EXPECT_FALSE(gpubench::nvml_unavailable_reason().empty());
  } else {
    EXPECT_TRUE(gpubench::nvml_unavailable_reason().empty());
  }
}

TEST(Window, ATimedLoopLeavesItsConditionsForTheRowOnce) {
  gpubench::forget_repetition_conditions();
  {
    gpubench::ConditionWindow window;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    volatile unsigned spin = 0;
    while (std::chrono::steady_clock::now() < until) spin = spin + 1;
    window.finish(1);
  }
  const auto conditions = gpubench::take_repetition_conditions();
  ASSERT_TRUE(conditions.has_value());
  EXPECT_GE(conditions->window_s, 0.03);
  EXPECT_TRUE(conditions->cpu_other_cores.has_value());  // /proc/stat is there on Linux
  EXPECT_TRUE(conditions->cpu_steal_cores.has_value());
  EXPECT_FALSE(gpubench::take_repetition_conditions().has_value());  // handed over once
}

// A process that keeps one CPU busy until the test ends.
class Burner {
 public:
  Burner() : pid_(fork()) {
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a test that crashed
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
  }
  ~Burner() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Burner(const Burner&) = delete;
  Burner& operator=(const Burner&) = delete;
  Burner(Burner&&) = delete;
  Burner& operator=(Burner&&) = delete;
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_;
};

TEST(BenchConditions, ABusyCoreMarksTheRowsItDisturbs) {
  const unsigned cpus = std::thread::hardware_concurrency();
  if (cpus < 2) GTEST_SKIP() << "one CPU: no all-core rows";
  // One burning core is a neighbour's share on 2 or 3 CPUs, not on more.
  const bool neighbour_part_fires = DisturbanceRule::max_other_cores(static_cast<int>(cpus)) < 0.9;
  Burner burner;
  ASSERT_TRUE(burner.running());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The smallest and a mid-size GEMM, with the quick start's 0.01 s repetitions: a loop of 10 ms
  // spans one /proc/stat tick, the case the extended span is for. Three runs rather than
  // --benchmark_repetitions=3: Google Benchmark writes the aggregates' coefficient of variation
  // of an all-zero counter as NaN, which is not JSON.
  int all_core_rows = 0;
  int one_core_rows = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto run = gpubench::testing::run_bench(
        "--benchmark_filter='^matmul/cpu/openblas/dtype:fp32/"
        "m:(16/n:16/k:16|256/n:256/k:256)/threads:' --benchmark_min_time=0.01");
    ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
    ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
    for (const auto& row : run.json["benchmarks"]) {
      const auto by = static_cast<unsigned>(row["disturbed_by"].get<double>());
      if (row["blas_threads"].get<double>() >= 2) {
        ++all_core_rows;
        EXPECT_EQ(row["disturbed"].get<double>(), 1.0) << row.dump();
        EXPECT_GT(row["cpu_other_cores"].get<double>(), DisturbanceRule::kMinOtherCores);
        // At 256^3 OpenBLAS runs every thread, and one waits for the CPU the burner holds (at
        // 16^3 it runs one thread whatever it is given: only a neighbour's share can tell).
        if (row["m"].get<double>() >= 256) {
          EXPECT_EQ(by & gpubench::kDisturbedByCpu, unsigned{gpubench::kDisturbedByCpu})
              << row.dump();
        }
      } else if (neighbour_part_fires) {
        // One thread beside the burner on two CPUs: half the machine taken by a neighbour, or,
        // while OpenBLAS's threads of the row before still spin, a wait for a CPU.
        ++one_core_rows;
        EXPECT_EQ(row["disturbed"].get<double>(), 1.0) << row.dump();
        EXPECT_NE(by & (gpubench::kDisturbedByNeighbour | gpubench::kDisturbedByCpu), 0U)
            << row.dump();
      }
    }
    EXPECT_NE(run.stderr_text.find("measured rows were disturbed"), std::string::npos)
        << run.stderr_text;
  }
  EXPECT_EQ(all_core_rows, 6);
  EXPECT_EQ(one_core_rows, neighbour_part_fires ? 6 : 0);
}

TEST(BenchConditions, OffRecordsNothingAndSaysSo) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1$' "
      "--benchmark_min_time=0.01",
      "GPUBENCH_CONDITIONS=off");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto& row = run.json["benchmarks"][0];
  for (const char* key : {"disturbed", "disturbed_by", "cpu_other_cores", "cpu_steal_cores"}) {
    EXPECT_FALSE(row.contains(key)) << key;
  }
  EXPECT_NE(run.json["context"]["conditions"].get<std::string>().find("off"), std::string::npos);
  EXPECT_NE(run.stderr_text.find("conditions not recorded"), std::string::npos) << run.stderr_text;
}

TEST(BenchConditions, EveryMeasuredRowCarriesItsVerdictAndTheContextItsRule) {
  const auto run = gpubench::testing::run_bench(
      "--benchmark_filter='^matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1$' "
      "--benchmark_min_time=0.01");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.json.is_object()) << run.stderr_text;
  const auto& row = run.json["benchmarks"][0];
  for (const char* key : {"disturbed", "disturbed_by", "cpu_other_cores", "cpu_steal_cores"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  const auto& context = run.json["context"];
  for (const char* key :
       {"conditions_rule", "disturbed_max_wait_cores", "cpu_affinity", "cpu_governor", "cpu_boost",
        "cpu_smt", "cpu_clock_per_row", "cpu_wait_source", "gpu_nvml"}) {
    ASSERT_TRUE(context.contains(key)) << key;
    EXPECT_FALSE(context[key].get<std::string>().empty()) << key;
  }
  // The end line: every run says how many rows were disturbed, even none.
  EXPECT_NE(run.stderr_text.find("measured rows"), std::string::npos) << run.stderr_text;
}

TEST(BenchConditions, BadSettingsStopWithUsage) {
  auto run = gpubench::testing::run_bench("--wait-idle=soon", "", false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.stderr_text.find("--wait-idle=soon is not a number of seconds"), std::string::npos)
      << run.stderr_text;
  run = gpubench::testing::run_bench("--wait-idle=-1", "", false);
  EXPECT_EQ(run.exit_code, 2);
  run = gpubench::testing::run_bench("", "GPUBENCH_CONDITIONS=maybe", false);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.stderr_text.find("GPUBENCH_CONDITIONS='maybe'"), std::string::npos)
      << run.stderr_text;
}

TEST(BenchConditions, WaitIdleWaitsItsBoundOnABusyMachineThenMeasures) {
  Burner burner;
  ASSERT_TRUE(burner.running());
  const auto start = std::chrono::steady_clock::now();
  const auto run = gpubench::testing::run_bench(
      "--wait-idle=1.5 "
      "--benchmark_filter='^matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1$' "
      "--benchmark_min_time=0.01");
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_GE(elapsed_s, 1.5);
  EXPECT_NE(run.stderr_text.find("--wait-idle=1.5: other processes still used"), std::string::npos)
      << run.stderr_text;
  ASSERT_TRUE(run.json.is_object());
  EXPECT_EQ(run.json["benchmarks"].size(), 1U);
}

}  // namespace

// --- CPU energy (harness/cpu_energy.hpp), over a powercap tree made in a temporary folder ------

class PowercapTree {
 public:
  PowercapTree() {
    char pattern[] = "/tmp/gpubench-powercap-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  ~PowercapTree() { std::filesystem::remove_all(root_); }
  PowercapTree(const PowercapTree&) = delete;
  PowercapTree& operator=(const PowercapTree&) = delete;
  PowercapTree(PowercapTree&&) = delete;
  PowercapTree& operator=(PowercapTree&&) = delete;
  void zone(const std::string& entry, const std::string& name, const std::string& energy_uj,
            const std::string& range_uj) const {
    std::filesystem::create_directories(root_ + "/" + entry);
    write(entry + "/name", name);
    write(entry + "/energy_uj", energy_uj);
    write(entry + "/max_energy_range_uj", range_uj);
  }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(root_ + "/" + file) << text << "\n";
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(CpuEnergy, PackageZonesAreSummedSubzonesLeftOutAndAWrapCounted) {
  PowercapTree tree;
  tree.zone("intel-rapl:0", "package-0", "1000000", "262143328850");
  tree.zone("intel-rapl:1", "package-1", "262143000000", "262143328850");
  tree.zone("intel-rapl:0:0", "core", "5", "262143328850");  // inside package-0's count
  const gpubench::CpuEnergyCounter counter(tree.root());
  ASSERT_TRUE(counter.usable()) << counter.reason();
  EXPECT_EQ(counter.zones_text(), "package-0 (intel-rapl:0), package-1 (intel-rapl:1)");
  const auto begin = counter.read_uj();
  ASSERT_TRUE(begin.has_value());
  // package-0 gains 2.5 J; package-1 wraps: 328850 uJ to its range, then 171150 more.
  tree.write("intel-rapl:0/energy_uj", "3500000");
  tree.write("intel-rapl:1/energy_uj", "171150");
  const auto end = counter.read_uj();
  ASSERT_TRUE(end.has_value());
  EXPECT_NEAR(*counter.joules_between(*begin, *end), 2.5 + 0.5, 1e-9);
}

TEST(CpuEnergy, NoPowercapOrAnUnreadableZoneIsNoCounterWithAReason) {
  const gpubench::CpuEnergyCounter absent("/nonexistent/powercap");
  EXPECT_FALSE(absent.usable());
  EXPECT_NE(absent.reason().find("virtual machines usually have none"), std::string::npos);
  EXPECT_FALSE(absent.read_uj().has_value());
  PowercapTree tree;
  tree.zone("intel-rapl:0", "package-0", "1000", "262143328850");
  tree.zone("intel-rapl:1", "package-1", "not a number", "262143328850");
  const gpubench::CpuEnergyCounter partial(tree.root());
  EXPECT_FALSE(partial.usable());  // a sum of one package of two would undercount
  EXPECT_NE(partial.reason().find("intel-rapl:1/energy_uj is not readable"), std::string::npos)
      << partial.reason();
  const PowercapTree empty;
  EXPECT_FALSE(gpubench::CpuEnergyCounter(empty.root()).usable());
}
