// The device-memory meter and the largest-batch search (harness/device_memory.hpp), without a
// device: the meter reads free bytes through a reader the test controls, and the timers sample it
// where harness/host_clock_timer.hpp says, inside a Google Benchmark run of this process.

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/device_memory.hpp"
#include "harness/host_clock_timer.hpp"

namespace {

using gpubench::DeviceMemoryInfo;
using gpubench::DeviceMemoryMeter;
using gpubench::largest_fitting_batch;
using gpubench::usable_device_bytes;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;

// A device of 1000 bytes of which `held` are in use, as the reader reports it.
struct FakeDevice {
  std::size_t held = 0;
  int reads = 0;
  DeviceMemoryMeter::Reader reader() {
    return [this] {
      ++reads;
      return DeviceMemoryInfo{1000 - held, 1000};
    };
  }
};

TEST(DeviceMemoryMeter, PeakIsTheBaselineLessTheLowestFreeCountSeen) {
  FakeDevice device;
  device.held = 100;  // before the meter: not the row's
  DeviceMemoryMeter meter(device.reader());
  EXPECT_EQ(device.reads, 1);  // the baseline, read on creation
  EXPECT_EQ(meter.baseline_free_bytes(), 900U);
  EXPECT_EQ(meter.total_bytes(), 1000U);
  EXPECT_EQ(meter.peak_bytes(), 0U);
  device.held = 400;
  meter.sample();
  device.held = 250;  // freed again: the peak stays
  meter.sample();
  EXPECT_EQ(meter.samples(), 2);
  EXPECT_EQ(meter.lowest_free_bytes(), 600U);
  EXPECT_EQ(meter.peak_bytes(), 300U);
  device.held = 130;
  meter.sample();
  EXPECT_EQ(meter.peak_bytes(), 300U);
}

TEST(DeviceMemoryMeter, MemoryFreedBySomeoneElseIsNotANegativePeak) {
  FakeDevice device;
  device.held = 500;
  DeviceMemoryMeter meter(device.reader());
  device.held = 0;  // another process freed 500 bytes
  meter.sample();
  EXPECT_EQ(meter.lowest_free_bytes(), 500U);
  EXPECT_EQ(meter.peak_bytes(), 0U);
}

TEST(DeviceMemoryMeter, WithoutAReaderItReadsTheDriverOrSaysWhyNot) {
  // On a machine without a GPU (or a build without CUDA) the default reader throws with the reason
  // instead of inventing numbers; with a GPU it reads a plausible count.
  try {
    const DeviceMemoryMeter meter;
    EXPECT_GT(meter.total_bytes(), 0U);
    EXPECT_LE(meter.baseline_free_bytes(), meter.total_bytes());
  } catch (const std::exception& error) {
    EXPECT_FALSE(std::string(error.what()).empty());
  }
}

TEST(UsableDeviceBytes, LeavesFivePercentAnd256MiB) {
  EXPECT_EQ(usable_device_bytes(0), 0U);
  EXPECT_EQ(usable_device_bytes(256 * kMiB), 0U);  // the margin alone is more than that
  EXPECT_EQ(usable_device_bytes(20 * kGiB), 20 * kGiB - kGiB - 256 * kMiB);
  const std::size_t h100_free = 81'000'000'000;
  EXPECT_EQ(usable_device_bytes(h100_free), h100_free - 4'050'000'000 - 256 * kMiB);
}

// The reference: the largest fitting batch by trying every batch.
int brute_force(const gpubench::BytesAtBatch& bytes_at, std::size_t budget, int max_batch) {
  int largest = 0;
  for (int batch = 1; batch <= max_batch; ++batch) {
    if (bytes_at(batch) <= budget) largest = batch;
  }
  return largest;
}

TEST(LargestFittingBatch, AgreesWithTryingEveryBatch) {
  // Affine, as a trainer's buffers are (a fixed part and a part per sample), and a staircase with
  // flat stretches, as page-rounded or block-counted sizes are.
  const gpubench::BytesAtBatch affine = [](int batch) {
    return 1000 + 37 * static_cast<std::size_t>(batch);
  };
  const gpubench::BytesAtBatch staircase = [](int batch) {
    return 64 * ((static_cast<std::size_t>(batch) + 9) / 10);
  };
  for (const auto* bytes_at : {&affine, &staircase}) {
    for (std::size_t budget : {0, 63, 64, 65, 1036, 1037, 1073, 1074, 5000, 9999, 100000}) {
      for (int max_batch : {1, 2, 3, 7, 64, 100, 1000}) {
        EXPECT_EQ(largest_fitting_batch(*bytes_at, budget, max_batch),
                  brute_force(*bytes_at, budget, max_batch))
            << "budget " << budget << ", max_batch " << max_batch;
      }
    }
  }
}

TEST(LargestFittingBatch, ABatchThatNeedsExactlyTheBudgetFits) {
  const gpubench::BytesAtBatch per_sample = [](int batch) {
    return 100 * static_cast<std::size_t>(batch);
  };
  EXPECT_EQ(largest_fitting_batch(per_sample, 5000), 50);
  EXPECT_EQ(largest_fitting_batch(per_sample, 4999), 49);
  EXPECT_EQ(largest_fitting_batch(per_sample, 99), 0);  // not even batch 1
  EXPECT_EQ(largest_fitting_batch(per_sample, 100), 1);
}

TEST(LargestFittingBatch, StopsAtTheLargestBatchAskedForAndNeverGoesBeyondIt) {
  std::vector<int> asked;
  const gpubench::BytesAtBatch tiny = [&](int batch) {
    asked.push_back(batch);
    return std::size_t{1};
  };
  EXPECT_EQ(largest_fitting_batch(tiny, 10, 10485), 10485);
  for (int batch : asked) {
    EXPECT_GE(batch, 1);
    EXPECT_LE(batch, 10485);
  }
  asked.clear();
  // The whole int range, doubling up to 2^30 and then bisecting to INT_MAX, without overflow.
  EXPECT_EQ(largest_fitting_batch(tiny, 10), INT_MAX);
  for (int batch : asked) EXPECT_GE(batch, 1);
  EXPECT_LE(asked.size(), 2U * 32U);
}

TEST(LargestFittingBatch, ASaturatingModelNearIntMaxAndAFewEvaluations) {
  // 1 GiB a sample, saturating where it would wrap: the model of a net far larger than any device.
  int evaluations = 0;
  const gpubench::BytesAtBatch huge = [&](int batch) {
    ++evaluations;
    const auto samples = static_cast<std::size_t>(batch);
    const std::size_t limit = std::numeric_limits<std::size_t>::max();
    return samples > limit / kGiB ? limit : samples * kGiB;
  };
  EXPECT_EQ(largest_fitting_batch(huge, 80 * kGiB), 80);
  EXPECT_LE(evaluations, 2 * 8);  // doubling to 128, then bisecting 64..128
  EXPECT_EQ(largest_fitting_batch(huge, std::numeric_limits<std::size_t>::max()), INT_MAX);
}

TEST(LargestFittingBatch, RejectsAnEmptyRange) {
  const gpubench::BytesAtBatch any = [](int) { return std::size_t{0}; };
  EXPECT_THROW(largest_fitting_batch(any, 100, 0), std::invalid_argument);
}

// ---- The timers' sampling points, in a Google Benchmark run of this process. ----

FakeDevice timed_device;
int samples_taken = 0;
std::size_t peak_seen = 0;

// Each iteration's preparation allocates 300 bytes and its body frees them (the freeing probes of
// benchmarks/alloc_probes.cpp); or the other way round (the allocating probes).
void allocation_held_between_prepare_and_body(benchmark::State& state, bool prepare_allocates,
                                              gpubench::HostClockTimer::Report report) {
  timed_device = FakeDevice{};
  DeviceMemoryMeter meter(timed_device.reader());
  gpubench::HostClockTimer timer(report, &meter);
  const std::size_t allocation = 300;
  timer.run(
      state, [&] { timed_device.held = prepare_allocates ? allocation : 0; },
      [&] { timed_device.held = prepare_allocates ? 0 : allocation; });
  samples_taken = meter.samples();
  peak_seen = meter.peak_bytes();
}

void run_benchmark(const std::string& name) {
  // An explicit reporter: Google Benchmark 1.7.1's RunSpecifiedBenchmarks(spec) without one crashed
  // here on its second call.
  benchmark::ConsoleReporter reporter;
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&reporter, "^" + name + "(/|$)"), 1U) << name;
}

TEST(TimerSampling, HostClockTimerSeesMemoryHeldOnlyBetweenPreparationAndBody) {
  using Report = gpubench::HostClockTimer::Report;
  for (Report report : {Report::manual, Report::benchmark_clock}) {
    for (bool prepare_allocates : {true, false}) {
      const std::string name = std::string("sampling/") +
                               (report == Report::manual ? "manual" : "clock") +
                               (prepare_allocates ? "/prepare_allocates" : "/body_allocates");
      auto* registered = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        allocation_held_between_prepare_and_body(state, prepare_allocates, report);
      });
      registered->Iterations(3);
      if (report == Report::manual) registered->UseManualTime();
      run_benchmark(name);
      // Start, after the first preparation, after the first body, after the loop.
      EXPECT_EQ(samples_taken, 4) << name;
      EXPECT_EQ(peak_seen, 300U) << name;
    }
  }
}

TEST(TimerSampling, WithoutAPreparationTheClockedLoopIsSampledAtItsEndsOnly) {
  // The benchmark-clock loop without a preparation reads the clock once per loop, so the meter is
  // not read inside it: memory the body holds only while it runs is not seen; memory it keeps is.
  for (bool body_keeps : {false, true}) {
    const std::string name =
        std::string("sampling/clock/no_prepare/") + (body_keeps ? "body_keeps" : "body_frees");
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      timed_device = FakeDevice{};
      DeviceMemoryMeter meter(timed_device.reader());
      gpubench::HostClockTimer timer(gpubench::HostClockTimer::Report::benchmark_clock, &meter);
      timer.run(state, [&] {
        timed_device.held = 200;
        if (!body_keeps) timed_device.held = 0;
      });
      samples_taken = meter.samples();
      peak_seen = meter.peak_bytes();
    })->Iterations(3);
    run_benchmark(name);
    EXPECT_EQ(samples_taken, 2) << name;
    EXPECT_EQ(peak_seen, body_keeps ? 200U : 0U) << name;
  }
}

}  // namespace
