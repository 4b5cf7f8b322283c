#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <sstream>
#include <string>

#include "harness/gpu_bandwidth.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/stream_triad.hpp"

namespace gpubench {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kCacheMultiple = 4;  // STREAM's rule: each array 4x the cache
constexpr std::size_t kMinimumArrayBytes = 64 * kMiB;
constexpr std::size_t kFreeFraction = 8;  // three arrays take at most 3/8 of the free memory
constexpr int kRepetitions = 10;
constexpr double kScalar = 3.0;
constexpr double kB = 1.0;
constexpr double kC = 2.0;
constexpr double kExpected = kB + kScalar * kC;  // exact in binary floating point
constexpr std::size_t kSamples = 64;

std::string mib_text(double bytes) {
  std::ostringstream text;
  text.precision(4);
  text << bytes / static_cast<double>(kMiB) << " MiB";
  return text.str();
}

}  // namespace

GpuBandwidthReading measure_gpu_bandwidth(const GpuInfo& gpu) {
  try {
    GPUBENCH_CUDA_CHECK(cudaSetDevice(gpu.device));
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    GPUBENCH_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    std::size_t array_bytes =
        std::max<std::size_t>(kCacheMultiple * gpu.l2_cache_bytes, kMinimumArrayBytes);
    std::string sizing = "4x the " + mib_text(static_cast<double>(gpu.l2_cache_bytes)) + " L2";
    if (array_bytes == kMinimumArrayBytes) sizing += ", at least 64 MiB";
    if (array_bytes > free_bytes / kFreeFraction) {
      array_bytes = free_bytes / kFreeFraction;
      sizing += ", capped at an eighth of the free memory";
    }
    const std::size_t count = array_bytes / sizeof(double);
    if (count < kSamples) return {0, "not measured: too little free device memory"};

    Stream stream;
    DeviceBuffer a(count * sizeof(double));
    DeviceBuffer b(count * sizeof(double));
    DeviceBuffer c(count * sizeof(double));
    Event start;
    Event end;
    GPUBENCH_CUDA_CHECK(cuda::launch_fill_doubles(a.as<double>(), count, 0.0, stream.get()));
    GPUBENCH_CUDA_CHECK(cuda::launch_fill_doubles(b.as<double>(), count, kB, stream.get()));
    GPUBENCH_CUDA_CHECK(cuda::launch_fill_doubles(c.as<double>(), count, kC, stream.get()));
    const auto triad = [&] {
      GPUBENCH_CUDA_CHECK(cuda::launch_stream_triad(a.as<double>(), b.as<double>(), c.as<double>(),
                                                    kScalar, count, stream.get()));
    };
    triad();  // untimed: the kernel loaded (lazy loading), the clocks up
    double best_s = 0;
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
      start.record(stream.get());
      triad();
      end.record(stream.get());
      end.synchronize();
      const double seconds = Event::seconds_between(start, end);
      best_s = repetition == 0 ? seconds : std::min(best_s, seconds);
    }
    // Every element was written: check a spread of them, each copied on the probe's stream.
    std::array<double, kSamples> samples{};
    for (std::size_t sample = 0; sample < kSamples; ++sample) {
      const std::size_t index = (count - 1) * sample / (kSamples - 1);
      GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(&samples[sample], a.as<double>() + index, sizeof(double),
                                          cudaMemcpyDeviceToHost, stream.get()));
    }
    stream.synchronize();
    for (std::size_t sample = 0; sample < kSamples; ++sample) {
      if (samples[sample] != kExpected) {
        return {0, "not measured: the triad wrote " + std::to_string(samples[sample]) + " where " +
                       std::to_string(kExpected) + " was due"};
      }
    }
    if (!(best_s > 0)) return {0, "not measured: the fastest launch took no measurable time"};
    return {24.0 * static_cast<double>(count) / best_s,
            "measured: STREAM triad a = b + s*c over doubles, 24 B per element (2 reads + 1 "
            "write), 3 arrays of " +
                mib_text(static_cast<double>(array_bytes)) + " (" + sizing +
                "), CUDA events, best of " + std::to_string(kRepetitions) + " launches"};
  } catch (const std::exception& error) {
    return {0, std::string("not measured: ") + error.what()};
  }
}

}  // namespace gpubench
