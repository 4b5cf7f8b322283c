#include "harness/cpu_bandwidth.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>

#include "kernels/common/worker_threads.hpp"

namespace gpubench {

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;
// STREAM's rule: each array at least four times the caches it must not fit in.
constexpr std::size_t kCacheMultiple = 4;
// Where the last-level cache is unknown: arrays larger than any LLC of a single socket today.
constexpr std::size_t kUnknownLlcArrayBytes = 256 * kMiB;
// The memory levels' arrays: at most 1 GiB each and an eighth of the memory available (the two
// arrays then take at most a quarter of it).
constexpr std::size_t kArrayCapBytes = kGiB;
constexpr std::size_t kAvailableFraction = 8;
// a = b + s * a with b = 1, s = 0.5 from a = 0: after N passes every element is 2 - 2^(1-N), exact
// in binary floating point, between 1 and 2 and the same in every element (the check after the
// trials: an element a pass did not write is still 0, or differs from the others).
constexpr double kScalar = 0.5;
constexpr double kB = 1.0;
constexpr double kLowest = 1.0;
constexpr double kHighest = 2.0;
// The cache level: enough passes per trial that a trial moves about 8 MiB (tens of microseconds,
// long against the steady clock's resolution), and more trials than the memory levels, since each
// is short.
constexpr double kCacheTrialBytes = 8.0 * kMiB;
constexpr int kMemoryRepetitions = 5;
constexpr int kCacheRepetitions = 20;
constexpr double kOneThreadBudgetS = 0.4;
constexpr double kAllCoresBudgetS = 0.3;
constexpr double kCacheBudgetS = 0.05;

std::string read_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// "32768K", "1024K", "32M" (sysfs's cache sizes) in bytes; 0 when unreadable.
std::size_t parse_cache_size(const std::string& text) {
  std::size_t value = 0;
  std::size_t index = 0;
  while (index < text.size() && text[index] >= '0' && text[index] <= '9') {
    value = value * 10 + static_cast<std::size_t>(text[index] - '0');
    ++index;
  }
  if (index == 0) return 0;
  if (index < text.size() && (text[index] == 'K' || text[index] == 'k')) return value << 10;
  if (index < text.size() && (text[index] == 'M' || text[index] == 'm')) return value << 20;
  if (index < text.size() && (text[index] == 'G' || text[index] == 'g')) return value << 30;
  return value;
}

// The number of CPUs in a list such as "0-1,4,6-7"; 0 when unreadable.
int count_cpu_list(const std::string& text) {
  int count = 0;
  std::istringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        std::stoi(part);
        ++count;
      } else {
        count += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
      }
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

std::size_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib << 10;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page)
                               : 0;
}

std::string size_text(double bytes) {
  std::ostringstream text;
  text.precision(4);
  if (bytes >= kMiB) {
    text << bytes / kMiB << " MiB";
  } else {
    text << bytes / 1024 << " KiB";
  }
  return text.str();
}

// The time of one call of `task`, in seconds.
template <typename Task>
double seconds_of(Task&& task) {
  const auto start = std::chrono::steady_clock::now();
  task();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count();
}

// Worker `worker`'s share [begin, end) of `count` elements split evenly among `workers`.
std::pair<std::size_t, std::size_t> share(std::size_t count, int workers, int worker) {
  const auto parts = static_cast<std::size_t>(workers);
  const auto index = static_cast<std::size_t>(worker);
  return {count * index / parts, count * (index + 1) / parts};
}

// The two arrays, first touched (a = 2, b = 1) by `touch_threads` workers in the split the trials
// use, so each worker's pages lie where it runs.
struct TriadArrays {
  std::size_t count = 0;
  std::unique_ptr<double[]> a, b;
  TriadArrays(std::size_t elements, int touch_threads)
      // Default-initialised (not zeroed): the pages are first touched by the workers below.
      : count(elements),
        a(new (std::nothrow) double[elements]),
        b(new (std::nothrow) double[elements]) {
    if (!allocated()) return;
    const int workers = std::max(1, touch_threads);
    cpu::run_on_workers(workers, [&](int worker) {
      const auto [begin, end] = share(count, workers, worker);
      std::fill(a.get() + begin, a.get() + end, 0.0);
      std::fill(b.get() + begin, b.get() + end, kB);
    });
  }
  bool allocated() const { return a && b; }
};

}  // namespace

// Out of line and not inlined, so each pass is a call the compiler cannot merge with the next or
// drop (a is read afterwards); the loop vectorises (harness/CMakeLists.txt builds this file -O3).
__attribute__((noinline)) void inplace_triad(double* __restrict a, const double* __restrict b,
                                             double scalar, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) a[i] = b[i] + scalar * a[i];
}

CacheSizes read_cache_sizes() {
  CacheSizes sizes;
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  int sharing_llc = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string folder = base + std::to_string(index) + "/";
    const std::string level_text = read_line(folder + "level");
    if (level_text.empty()) continue;
    const std::string type = read_line(folder + "type");
    if (type == "Instruction") continue;
    const int level = std::atoi(level_text.c_str());
    const std::size_t bytes = parse_cache_size(read_line(folder + "size"));
    if (bytes == 0) continue;
    if (level == 2) sizes.l2_bytes = bytes;
    if (level >= sizes.llc_level) {
      sizes.llc_level = level;
      sizes.llc_bytes = bytes;
      sharing_llc = count_cpu_list(read_line(folder + "shared_cpu_list"));
    }
  }
  if (sizes.llc_bytes > 0) {
    sizes.source = "sysfs";
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sharing_llc > 0 && online > sharing_llc) {
      sizes.llc_instances = static_cast<int>((online + sharing_llc - 1) / sharing_llc);
    }
    return sizes;
  }
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l2 > 0) sizes.l2_bytes = static_cast<std::size_t>(l2);
  if (l3 > 0) {
    sizes.llc_bytes = static_cast<std::size_t>(l3);
    sizes.llc_level = 3;
  } else if (l2 > 0) {
    sizes.llc_bytes = sizes.l2_bytes;
    sizes.llc_level = 2;
  }
  sizes.source = sizes.llc_bytes > 0 ? "sysconf" : "unknown";
  return sizes;
}

namespace {

// The trials over arrays already touched; trials.elements is not read (the arrays' count is).
TriadResult run_triad(const TriadArrays& arrays, const TriadTrials& trials) {
  TriadResult result;
  const int workers = std::max(1, trials.threads);
  const std::size_t count = arrays.count;
  if (!arrays.allocated()) {
    result.why = "cannot allocate 2 arrays of " + size_text(8.0 * count);
    return result;
  }
  double* a = arrays.a.get();
  const double* b = arrays.b.get();
  const auto pass = [&](int worker) {
    const auto [begin, end] = share(count, workers, worker);
    for (int p = 0; p < trials.passes; ++p) {
      inplace_triad(a + begin, b + begin, kScalar, end - begin);
    }
  };
  // One untimed round: the thread pool started, the caches and TLBs in their steady state.
  cpu::run_on_workers(workers, pass);
  double best_s = 0;
  double spent_s = 0;
  for (int repetition = 0; repetition < std::max(1, trials.repetitions); ++repetition) {
    const double seconds = seconds_of([&] { cpu::run_on_workers(workers, pass); });
    best_s = result.repetitions_run == 0 ? seconds : std::min(best_s, seconds);
    ++result.repetitions_run;
    spent_s += seconds;
    if (result.repetitions_run >= 2 && spent_s > trials.budget_s) break;
  }
  // Every element was written by every pass: a spread of them holds one value in [1, 2].
  constexpr std::size_t kSamples = 64;
  for (std::size_t sample = 0; sample < kSamples; ++sample) {
    const std::size_t index = (count - 1) * sample / (kSamples - 1);
    if (!(a[index] >= kLowest && a[index] <= kHighest && a[index] == a[0])) {
      result.why = "a[" + std::to_string(index) + "] = " + std::to_string(a[index]) +
                   " after the triad, where a[0] = " + std::to_string(a[0]) +
                   " and every element is the same value in [1, 2]";
      return result;
    }
  }
  if (!(best_s > 0)) {
    result.why = "the fastest trial took no measurable time";
    return result;
  }
  result.bytes_per_s = triad_bytes(count) * trials.passes / best_s;
  return result;
}

}  // namespace

TriadResult measure_triad(const TriadTrials& trials) {
  if (trials.elements < static_cast<std::size_t>(std::max(1, trials.threads))) {
    TriadResult result;
    result.why = "fewer elements than threads";
    return result;
  }
  const TriadArrays arrays(trials.elements, trials.threads);
  return run_triad(arrays, trials);
}

namespace {

const char* const kConvention =
    "in-place triad a = b + s*a over doubles, 24 B per element (2 reads + 1 write, each line "
    "written was read first: no write-allocate traffic)";

CpuBandwidthLevel level_of(const TriadResult& result, const std::string& what) {
  if (result.bytes_per_s <= 0) return {0, "not measured: " + what + ": " + result.why};
  return {result.bytes_per_s, std::string("measured: ") + kConvention + ", " + what + ", best of " +
                                  std::to_string(result.repetitions_run)};
}

std::string llc_text(const CacheSizes& caches, int instances) {
  std::string text = "L" + std::to_string(caches.llc_level);
  if (instances > 1)
    text = std::to_string(instances) + " x the " + size_text(caches.llc_bytes) + " " + text;
  else
    text = "the " + size_text(caches.llc_bytes) + " " + text;
  return text;
}

// Per-array bytes for a memory level covering `instances` last-level caches, with the words that
// say how they were chosen.
std::pair<std::size_t, std::string> memory_array(const CacheSizes& caches, int instances,
                                                 std::size_t cap) {
  std::size_t bytes = kUnknownLlcArrayBytes;
  std::string why = "the last-level cache's size is unknown";
  if (caches.llc_bytes > 0) {
    bytes = kCacheMultiple * caches.llc_bytes * static_cast<std::size_t>(instances);
    why = "4x " + llc_text(caches, instances);
  }
  if (bytes > cap) {
    bytes = cap;
    std::ostringstream ratio;
    ratio.precision(3);
    if (caches.llc_bytes > 0) {
      ratio << static_cast<double>(cap) /
                   (static_cast<double>(caches.llc_bytes) * static_cast<double>(instances));
      why = ratio.str() + "x " + llc_text(caches, instances) +
            ", capped at 1 GiB and an eighth of the available memory";
    } else {
      why += ", capped at 1 GiB and an eighth of the available memory";
    }
  }
  return {bytes, why};
}

}  // namespace

CpuBandwidth measure_cpu_bandwidth(int threads) {
  CpuBandwidth bandwidth;
  const auto start = std::chrono::steady_clock::now();
  bandwidth.caches = read_cache_sizes();
  const CacheSizes& caches = bandwidth.caches;
  const std::size_t available = available_memory_bytes();
  const std::size_t cap =
      available > 0 ? std::min(kArrayCapBytes, available / kAvailableFraction) : kArrayCapBytes;
  bandwidth.all_cores_threads = std::max(1, threads);

  {
    const auto [one_bytes, one_why] = memory_array(caches, 1, cap);
    const auto [all_bytes, all_why] = memory_array(caches, caches.llc_instances, cap);
    TriadTrials one;
    one.elements = one_bytes / sizeof(double);
    one.threads = 1;
    one.repetitions = kMemoryRepetitions;
    one.budget_s = kOneThreadBudgetS;
    TriadTrials all;
    all.elements = all_bytes / sizeof(double);
    all.threads = bandwidth.all_cores_threads;
    all.repetitions = kMemoryRepetitions;
    all.budget_s = kAllCoresBudgetS;
    const std::string one_what =
        "1 thread, 2 arrays of " + size_text(one_bytes) + " (" + one_why + ")";
    const std::string all_what = std::to_string(all.threads) + " threads, 2 arrays of " +
                                 size_text(all_bytes) + " (" + all_why + ")";
    if (one.elements == all.elements && all.elements >= static_cast<std::size_t>(all.threads)) {
      // One last-level cache: both levels over the same arrays, allocated and touched once
      // (by the all-cores split, which on a machine with one such cache is one memory node's).
      const TriadArrays arrays(all.elements, all.threads);
      bandwidth.one_thread = level_of(run_triad(arrays, one), one_what);
      bandwidth.all_cores = level_of(run_triad(arrays, all), all_what);
    } else {
      bandwidth.one_thread = level_of(measure_triad(one), one_what);
      bandwidth.all_cores = level_of(measure_triad(all), all_what);
    }
  }
  if (caches.l2_bytes > 0) {
    // Two arrays in half of L2: the other half for whatever else the core keeps there.
    TriadTrials trials;
    trials.elements = caches.l2_bytes / 2 / (2 * sizeof(double));
    trials.threads = 1;
    trials.passes = std::max(1, static_cast<int>(kCacheTrialBytes / triad_bytes(trials.elements)));
    trials.repetitions = kCacheRepetitions;
    trials.budget_s = kCacheBudgetS;
    bandwidth.cache = level_of(measure_triad(trials),
                               "1 thread, 2 arrays of " + size_text(8.0 * trials.elements) +
                                   " (half the " + size_text(caches.l2_bytes) + " L2 in all), " +
                                   std::to_string(trials.passes) + " passes per trial");
  } else {
    bandwidth.cache = {0, "not measured: the L2 cache's size is unknown"};
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  bandwidth.probe_s = elapsed.count();
  return bandwidth;
}

}  // namespace gpubench
