#include "harness/conditions.hpp"

#include "harness/cpu_energy.hpp"

#include <benchmark/benchmark.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

namespace gpubench {

namespace {

// The whole of a small /proc or /sys file, or absent.
std::optional<std::string> read_small_file(const char* path) {
  const int descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(descriptor, buffer, sizeof buffer);
    if (got < 0) {
      ::close(descriptor);
      return std::nullopt;
    }
    if (got == 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(descriptor);
  return text;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// The CPUs this process may run on, and whether that is every CPU /proc/stat lists (then its
// aggregate `cpu` line, rounded once, is read instead of the sum of per-CPU lines).
struct Affinity {
  std::vector<int> cpus;
  bool all = false;
};

const Affinity& affinity() {
  static const Affinity cached = [] {
    Affinity result;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) result.cpus.push_back(cpu);
      }
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    result.all = result.cpus.empty() || static_cast<long>(result.cpus.size()) >= online;
    return result;
  }();
  return cached;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  // "0-3,8": consecutive CPUs as ranges, like /sys's lists.
  std::string text;
  for (std::size_t index = 0; index < cpus.size();) {
    std::size_t last = index;
    while (last + 1 < cpus.size() && cpus[last + 1] == cpus[last] + 1) ++last;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[index]);
    if (last > index) text += "-" + std::to_string(cpus[last]);
    index = last + 1;
  }
  return text;
}

std::optional<std::map<long, double>> read_thread_waits() {
  DIR* directory = opendir("/proc/self/task");
  if (directory == nullptr) return std::nullopt;
  std::map<long, double> waits;
  bool readable = true;
  while (const dirent* entry = readdir(directory)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/schedstat";
    const auto text = read_small_file(path.c_str());
    if (!text) {
      // A thread that ended between readdir and open; a missing schedstat on the main thread
      // means the kernel does not keep it.
      if (std::strtol(entry->d_name, nullptr, 10) == static_cast<long>(getpid())) readable = false;
      continue;
    }
    unsigned long long run_ns = 0;
    unsigned long long wait_ns = 0;
    if (std::sscanf(text->c_str(), "%llu %llu", &run_ns, &wait_ns) != 2) {
      readable = false;
      continue;
    }
    waits[std::strtol(entry->d_name, nullptr, 10)] = 1e-9 * static_cast<double>(wait_ns);
  }
  closedir(directory);
  if (!readable) return std::nullopt;
  return waits;
}

const char* kClockPathPattern = "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq";

std::optional<double> current_cpu_clock_hz() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return std::nullopt;
  char path[96];
  std::snprintf(path, sizeof path, kClockPathPattern, cpu);
  const auto text = read_small_file(path);
  if (!text) return std::nullopt;
  const double khz = std::strtod(text->c_str(), nullptr);
  return khz > 0 ? std::optional<double>(khz * 1e3) : std::nullopt;
}

std::optional<RepetitionConditions>& current_slot() {
  thread_local std::optional<RepetitionConditions> slot;
  return slot;
}

std::string setting() {
  const char* value = std::getenv("GPUBENCH_CONDITIONS");
  return value != nullptr ? value : "";
}

}  // namespace

double proc_stat_tick_s() {
  static const double tick_s = [] {
    const long ticks_per_s = sysconf(_SC_CLK_TCK);
    return ticks_per_s > 0 ? 1.0 / static_cast<double>(ticks_per_s) : 0.01;
  }();
  return tick_s;
}

int allowed_cpu_count() {
  const Affinity& allowed = affinity();
  if (!allowed.cpus.empty()) return static_cast<int>(allowed.cpus.size());
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

unsigned disturbed_by(const RepetitionConditions& conditions, double tick_s, int allowed_cpus) {
  using Rule = DisturbanceRule;
  unsigned bits = 0;
  if (conditions.cpu_other_cores) {
    const double other = *conditions.cpu_other_cores;
    // /proc/stat rounds each field to a tick, so the others' seconds count beyond two ticks only.
    const double span_s = std::max(conditions.other_span_s, conditions.window_s);
    const bool others_measured = other * span_s > Rule::kMinOtherTicks * tick_s;
    if (conditions.cpu_wait_cores && *conditions.cpu_wait_cores > Rule::kMaxWaitCores &&
        other > Rule::kMinOtherCores && others_measured) {
      bits |= kDisturbedByCpu;
    }
    if (other > Rule::max_other_cores(allowed_cpus) && others_measured) {
      bits |= kDisturbedByNeighbour;
    }
  }
  if (conditions.cpu_steal_cores && *conditions.cpu_steal_cores > Rule::kMaxStealCores &&
      *conditions.cpu_steal_cores * conditions.window_s > tick_s) {
    bits |= kDisturbedBySteal;
  }
  if (conditions.gpu_clock_event_reasons &&
      (*conditions.gpu_clock_event_reasons & Rule::kGpuReasons)) {
    bits |= kDisturbedByGpu;
  }
  return bits;
}

UpdatePeriod measure_update_period(const std::function<std::optional<std::uint64_t>()>& read,
                                   const std::function<double()>& now_s,
                                   const std::function<void()>& pause, double limit_s,
                                   int intervals) {
  UpdatePeriod result;
  std::optional<std::uint64_t> previous = read();
  if (!previous) {
    result.why_not = "the counter could not be read";
    return result;
  }
  const double start_s = now_s();
  std::optional<double> last_change_s;
  double longest_s = 0;
  int changes = 0;
  while (result.intervals < intervals && now_s() - start_s < limit_s) {
    pause();
    const std::optional<std::uint64_t> value = read();
    const double at_s = now_s();
    if (!value) {
      result.why_not = "the counter could not be read";
      return result;
    }
    if (*value == *previous) continue;
    ++changes;
    previous = value;
    if (last_change_s) {
      longest_s = std::max(longest_s, at_s - *last_change_s);
      ++result.intervals;
    }
    last_change_s = at_s;
  }
  if (result.intervals == 0) {
    std::ostringstream why;
    why << "the counter changed " << changes << (changes == 1 ? " time" : " times") << " in "
        << limit_s << " s, too few to time one step";
    result.why_not = why.str();
    return result;
  }
  result.seconds = longest_s;
  return result;
}

bool energy_span_is_enough(double span_s, const std::optional<double>& period_s) {
  return period_s && span_s >= EnergyRule::kMinUpdates * *period_s;
}

const UpdatePeriod& gpu_energy_update_period() {
  static const UpdatePeriod period = [] {
    UpdatePeriod unknown;
    const NvmlDevice* device = nvml_device();
    if (device == nullptr) {
      unknown.why_not = "no NVML: " + nvml_unavailable_reason();
      return unknown;
    }
    if (!device->energy_mj()) {
      unknown.why_not = "the GPU has no energy counter (Volta and newer have one)";
      return unknown;
    }
    return measure_update_period(
        [device] { return device->energy_mj(); }, steady_seconds,
        [] { std::this_thread::sleep_for(std::chrono::duration<double>(EnergyRule::kPollS)); },
        EnergyRule::kMeasureLimitS, EnergyRule::kIntervals);
  }();
  return period;
}

std::optional<ProcStatTimes> parse_proc_stat(const std::string& text, const std::vector<int>& cpus,
                                             double tick_s) {
  // Each `cpu` line: the name, then user nice system idle iowait irq softirq steal (guest and
  // guest_nice, where present, are already inside user and nice).
  std::map<std::string, ProcStatTimes> lines;
  std::istringstream input(text);
  std::string line;
  while (std::getline(input, line)) {
    if (line.compare(0, 3, "cpu") != 0) continue;
    std::istringstream fields_text(line);
    std::string name;
    unsigned long long fields[8] = {};
    fields_text >> name;
    bool complete = true;
    for (unsigned long long& field : fields) complete = complete && (fields_text >> field);
    if (!complete) continue;
    const unsigned long long busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6];
    lines[name] = {static_cast<double>(busy) * tick_s, static_cast<double>(fields[7]) * tick_s};
  }
  std::vector<std::string> names;
  if (cpus.empty()) names.emplace_back("cpu");
  for (int cpu : cpus) names.push_back("cpu" + std::to_string(cpu));
  ProcStatTimes sum;
  for (const std::string& name : names) {
    const auto found = lines.find(name);
    if (found == lines.end()) return std::nullopt;
    sum.busy_s += found->second.busy_s;
    sum.steal_s += found->second.steal_s;
  }
  return sum;
}

RepetitionConditions cpu_conditions_between(const CpuCounters& begin, const CpuCounters& end,
                                            const CpuCounters* others_from) {
  RepetitionConditions conditions;
  conditions.window_s = end.wall_s - begin.wall_s;
  if (conditions.window_s <= 0) return conditions;
  const double window_s = conditions.window_s;
  const CpuCounters& from =
      others_from != nullptr && others_from->wall_s < begin.wall_s ? *others_from : begin;
  conditions.other_span_s = end.wall_s - from.wall_s;
  if (from.busy_s && end.busy_s) {
    const double own_s = end.own_cpu_s - from.own_cpu_s;
    conditions.cpu_other_cores =
        std::max(0.0, (*end.busy_s - *from.busy_s - own_s) / conditions.other_span_s);
  }
  if (begin.steal_s && end.steal_s) {
    conditions.cpu_steal_cores = std::max(0.0, (*end.steal_s - *begin.steal_s) / window_s);
  }
  if (begin.wait_s_by_thread && end.wait_s_by_thread) {
    // A thread born during the window waited only inside it; one that ended took its count along.
    double wait_s = 0;
    for (const auto& [thread, seconds] : *end.wait_s_by_thread) {
      const auto before = begin.wait_s_by_thread->find(thread);
      wait_s += seconds - (before != begin.wait_s_by_thread->end() ? before->second : 0.0);
    }
    conditions.cpu_wait_cores = std::max(0.0, wait_s / window_s);
  }
  return conditions;
}

void CpuReadingHistory::add(const CpuCounters& reading) {
  CpuCounters kept = reading;
  kept.wait_s_by_thread.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  readings_.push_back(std::move(kept));
  // Keep the newest reading that is a whole span old, and everything after it.
  const double cutoff = reading.wall_s - DisturbanceRule::kMinOtherSpanS;
  std::size_t first_kept = 0;
  for (std::size_t index = 0; index < readings_.size(); ++index) {
    if (readings_[index].wall_s <= cutoff) first_kept = index;
  }
  readings_.erase(readings_.begin(), readings_.begin() + static_cast<std::ptrdiff_t>(first_kept));
}

std::optional<CpuCounters> CpuReadingHistory::reading_before(double end_wall_s,
                                                             double span_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (readings_.empty()) return std::nullopt;
  std::optional<CpuCounters> found = readings_.front();
  for (const CpuCounters& reading : readings_) {
    if (reading.wall_s <= end_wall_s - span_s) found = reading;
  }
  return found;
}

CpuReadingHistory& cpu_reading_history() {
  static CpuReadingHistory history;
  return history;
}

CpuCounters read_cpu_counters() {
  CpuCounters counters;
  counters.wait_s_by_thread = read_thread_waits();
  if (const auto text = read_small_file("/proc/stat")) {
    const Affinity& allowed = affinity();
    const auto times =
        parse_proc_stat(*text, allowed.all ? std::vector<int>{} : allowed.cpus, proc_stat_tick_s());
    if (times) {
      counters.busy_s = times->busy_s;
      counters.steal_s = times->steal_s;
    }
  }
  counters.own_cpu_s = process_cpu_seconds();
  counters.wall_s = steady_seconds();
  return counters;
}

std::optional<std::string> conditions_setting_error() {
  const std::string value = setting();
  if (value.empty() || value == "on" || value == "off") return std::nullopt;
  return "GPUBENCH_CONDITIONS='" + value + "' is neither 'on' nor 'off'";
}

bool conditions_enabled() {
  static const bool enabled = setting() != "off";
  return enabled;
}

void GpuSampleSummary::add(const GpuSample& sample) {
  const bool idle =
      sample.clock_event_reasons && (*sample.clock_event_reasons & kNvmlReasonGpuIdle);
  if (sample.clock_event_reasons) {
    reasons = reasons.value_or(0) | (*sample.clock_event_reasons & ~kNvmlReasonGpuIdle);
  }
  // An idle GPU lowers its clock by design: only samples of a working GPU say what it ran at.
  if (sample.sm_clock_hz && !idle) {
    sm_clock_min_hz = std::min(sm_clock_min_hz.value_or(*sample.sm_clock_hz), *sample.sm_clock_hz);
    sm_clock_max_hz = std::max(sm_clock_max_hz.value_or(*sample.sm_clock_hz), *sample.sm_clock_hz);
  }
  if (sample.temperature_c) {
    temperature_max_c =
        std::max(temperature_max_c.value_or(*sample.temperature_c), *sample.temperature_c);
  }
  if (sample.power_w) {
    power_sum_w += *sample.power_w;
    ++power_samples;
  }
}

// Samples the GPU every kGpuSamplePeriod on its own thread, and once at each end.
class ConditionWindow::GpuSampler {
 public:
  explicit GpuSampler(const NvmlDevice& device) : device_(device) {
    summary_.add(device_.sample());
    thread_ = std::thread([this] { run(); });
  }
  ~GpuSampler() { stop(); }
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  GpuSampler(GpuSampler&&) = delete;  // its thread holds `this`
  GpuSampler& operator=(GpuSampler&&) = delete;

  GpuSampleSummary stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
      }
      wake_.notify_one();
      thread_.join();
      summary_.add(device_.sample());
    }
    return summary_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, kGpuSamplePeriod, [this] { return stopping_; })) {
      lock.unlock();
      const GpuSample sample = device_.sample();
      lock.lock();
      summary_.add(sample);
    }
  }

  const NvmlDevice& device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  GpuSampleSummary summary_;
  std::thread thread_;
};

ConditionWindow::ConditionWindow() : enabled_(conditions_enabled()) {
  if (!enabled_) return;
  if (const NvmlDevice* device = nvml_device()) {
    begin_energy_mj_ = device->energy_mj();
    begin_energy_s_ = steady_seconds();
    try {
      gpu_sampler_ = std::make_unique<GpuSampler>(*device);
    } catch (const std::system_error&) {
      // No thread for the sampler: the row is measured without GPU conditions.
    }
  }
  begin_cpu_energy_uj_ = cpu_energy_counter().read_uj();
  begin_ = read_cpu_counters();  // last, closest to the loop
  cpu_reading_history().add(begin_);
}

ConditionWindow::~ConditionWindow() = default;

void ConditionWindow::finish(std::int64_t iterations) {
  if (!enabled_) return;
  const CpuCounters end = read_cpu_counters();
  const auto others_from =
      cpu_reading_history().reading_before(end.wall_s, DisturbanceRule::kMinOtherSpanS);
  RepetitionConditions conditions =
      cpu_conditions_between(begin_, end, others_from ? &*others_from : nullptr);
  cpu_reading_history().add(end);
  if (begin_cpu_energy_uj_ && iterations > 0) {
    if (const auto end_uj = cpu_energy_counter().read_uj()) {
      if (const auto joules = cpu_energy_counter().joules_between(*begin_cpu_energy_uj_, *end_uj)) {
        conditions.cpu_energy_per_iteration_j = *joules / static_cast<double>(iterations);
      }
    }
  }
  conditions.cpu_clock_hz = current_cpu_clock_hz();
  if (gpu_sampler_) {
    const GpuSampleSummary gpu = gpu_sampler_->stop();
    conditions.gpu_sm_clock_min_hz = gpu.sm_clock_min_hz;
    conditions.gpu_sm_clock_max_hz = gpu.sm_clock_max_hz;
    conditions.gpu_clock_event_reasons = gpu.reasons;
    conditions.gpu_temperature_max_c = gpu.temperature_max_c;
    if (gpu.power_samples > 0) conditions.gpu_power_mean_w = gpu.power_sum_w / gpu.power_samples;
    const auto end_energy_mj = nvml_device()->energy_mj();
    const double energy_span_s = steady_seconds() - begin_energy_s_;
    if (begin_energy_mj_ && end_energy_mj && iterations > 0 &&
        *end_energy_mj >= *begin_energy_mj_) {
      const std::optional<double>& period_s = gpu_energy_update_period().seconds;
      if (energy_span_is_enough(energy_span_s, period_s)) {
        conditions.gpu_energy_per_iteration_j =
            1e-3 * static_cast<double>(*end_energy_mj - *begin_energy_mj_) /
            static_cast<double>(iterations);
      } else if (period_s) {
        conditions.gpu_energy_too_short = true;
      }
    }
  }
  current_slot() = conditions;
}

std::optional<RepetitionConditions> take_repetition_conditions() {
  return std::exchange(current_slot(), std::nullopt);
}

void forget_repetition_conditions() { current_slot().reset(); }

void DisturbanceTally::record(const std::string& row, std::int64_t iterations,
                              const RepetitionConditions& conditions, unsigned disturbed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool replaces_estimate =
      pending_ && pending_->row == row && iterations > pending_->iterations;
  if (pending_ && !replaces_estimate) add(&committed_, *pending_);
  pending_ = Pending{row, iterations, conditions, disturbed};
}

DisturbanceSummary DisturbanceTally::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  DisturbanceSummary summary = committed_;
  if (pending_) add(&summary, *pending_);
  return summary;
}

void DisturbanceTally::add(DisturbanceSummary* summary, const Pending& pending) {
  ++summary->repetitions;
  if (pending.disturbed == 0) return;
  ++summary->disturbed;
  if (pending.disturbed & kDisturbedByCpu) {
    ++summary->by_cpu;
    summary->max_wait_cores =
        std::max(summary->max_wait_cores, pending.conditions.cpu_wait_cores.value_or(0.0));
  }
  if (pending.disturbed & kDisturbedBySteal) {
    ++summary->by_steal;
    summary->max_steal_cores =
        std::max(summary->max_steal_cores, pending.conditions.cpu_steal_cores.value_or(0.0));
  }
  if (pending.disturbed & kDisturbedByGpu) ++summary->by_gpu;
  if (pending.disturbed & kDisturbedByNeighbour) {
    ++summary->by_neighbour;
    summary->max_other_cores =
        std::max(summary->max_other_cores, pending.conditions.cpu_other_cores.value_or(0.0));
  }
}

DisturbanceTally& disturbance_tally() {
  static DisturbanceTally tally;
  return tally;
}

std::optional<double> other_cpu_cores_over(double seconds) {
  const CpuCounters begin = read_cpu_counters();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return cpu_conditions_between(begin, read_cpu_counters()).cpu_other_cores;
}

namespace {
// A context value as bench writes numbers (6 significant digits).
std::string context_number(double value) {
  std::ostringstream stream;
  stream << value;
  return stream.str();
}
}  // namespace

void add_condition_context() {
  using benchmark::AddCustomContext;
  const auto number = context_number;
  const auto file_or = [](const char* path, const std::string& otherwise) {
    const auto text = read_small_file(path);
    return text ? trimmed(*text) : otherwise;
  };
  if (!conditions_enabled()) {
    AddCustomContext("conditions", "off (GPUBENCH_CONDITIONS=off): no row records its conditions");
  } else {
    AddCustomContext("conditions", "recorded per repetition over the timed loop");
  }
  using Rule = DisturbanceRule;
  AddCustomContext(
      "conditions_rule",
      "disturbed when this process's threads waited for a CPU more than " +
          number(Rule::kMaxWaitCores) + " core while other processes used more than " +
          number(Rule::kMinOtherCores) + " core and " + number(Rule::kMinOtherTicks) +
          " /proc/stat ticks, or other processes used more than " + number(Rule::kMaxOtherShare) +
          " of the allowed CPUs (at least " + number(Rule::kMaxOtherCoresFloor) + " core; here " +
          number(Rule::max_other_cores(allowed_cpu_count())) +
          "), others read over the timed loop extended back to " + number(Rule::kMinOtherSpanS) +
          " s; or steal above " + number(Rule::kMaxStealCores) +
          " core and one tick, or the GPU reported a thermal, hardware-slowdown or power-brake "
          "clock event (NVML reasons 0xe8); docs/timing-method.md");
  AddCustomContext("disturbed_max_wait_cores", number(Rule::kMaxWaitCores));
  AddCustomContext("disturbed_min_other_cores", number(Rule::kMinOtherCores));
  AddCustomContext("disturbed_min_other_ticks", number(Rule::kMinOtherTicks));
  AddCustomContext("disturbed_max_other_cores", number(Rule::max_other_cores(allowed_cpu_count())));
  AddCustomContext("disturbed_min_other_span_s", number(Rule::kMinOtherSpanS));
  AddCustomContext("disturbed_max_steal_cores", number(Rule::kMaxStealCores));
  AddCustomContext("disturbed_gpu_reasons", "0xe8");

  const Affinity& allowed = affinity();
  AddCustomContext("cpu_affinity", cpu_list_text(allowed.cpus));
  AddCustomContext("cpu_affinity_count", std::to_string(allowed.cpus.size()));
  const int first_cpu = allowed.cpus.empty() ? 0 : allowed.cpus.front();
  const std::string cpufreq =
      "/sys/devices/system/cpu/cpu" + std::to_string(first_cpu) + "/cpufreq";
  const std::string no_cpufreq = "unavailable: " + cpufreq +
                                 " does not exist (no cpufreq driver; virtual machines usually "
                                 "have none)";
  AddCustomContext("cpu_governor", file_or((cpufreq + "/scaling_governor").c_str(), no_cpufreq));
  AddCustomContext("cpu_clock_per_row",
                   read_small_file((cpufreq + "/scaling_cur_freq").c_str())
                       ? "cpufreq scaling_cur_freq of the CPU the timing thread ran on, at the "
                         "end of the timed loop (cpu_clock_hz)"
                       : no_cpufreq);
  std::string boost;
  if (const auto text = read_small_file("/sys/devices/system/cpu/cpufreq/boost")) {
    boost = trimmed(*text) == "1" ? "on" : "off";
  } else if (const auto no_turbo =
                 read_small_file("/sys/devices/system/cpu/intel_pstate/no_turbo")) {
    boost = trimmed(*no_turbo) == "0" ? "on" : "off";
  } else {
    boost =
        "unavailable: neither /sys/devices/system/cpu/cpufreq/boost nor "
        "/sys/devices/system/cpu/intel_pstate/no_turbo exists";
  }
  AddCustomContext("cpu_boost", boost);
  AddCustomContext("cpu_smt", file_or("/sys/devices/system/cpu/smt/control",
                                      "unavailable: /sys/devices/system/cpu/smt/control does not "
                                      "exist"));
  const CpuEnergyCounter& cpu_energy = cpu_energy_counter();
  AddCustomContext("cpu_energy_counter", cpu_energy.usable()
                                             ? "RAPL powercap: " + cpu_energy.zones_text()
                                             : "unavailable: " + cpu_energy.reason());
  AddCustomContext("cpu_wait_source", read_thread_waits()
                                          ? "/proc/self/task/*/schedstat (run_delay)"
                                          : "unavailable: /proc/self/task/*/schedstat is not "
                                            "readable (kernel without CONFIG_SCHED_INFO)");

  const NvmlDevice* device = nvml_device();
  if (device == nullptr) {
    AddCustomContext("gpu_nvml", "unavailable: " + nvml_unavailable_reason());
    return;
  }
  AddCustomContext("gpu_nvml", "loaded");
  const GpuFacts facts = device->facts();
  AddCustomContext("gpu_persistence_mode", facts.persistence_mode);
  AddCustomContext("gpu_applications_graphics_clock_hz", facts.applications_graphics_clock_hz);
  AddCustomContext("gpu_applications_memory_clock_hz", facts.applications_memory_clock_hz);
  AddCustomContext("gpu_nvml_max_sm_clock_hz", facts.max_sm_clock_hz);
  AddCustomContext("gpu_ecc", facts.ecc);
  AddCustomContext("gpu_mig", facts.mig);
  AddCustomContext("gpu_energy_counter",
                   device->energy_mj() ? "nvmlDeviceGetTotalEnergyConsumption"
                                       : "unavailable: the GPU has no energy counter (Volta and "
                                         "newer have one)");
}

void add_energy_period_context() {
  // Measured at start, before any row, and only for a run (a listing measures nothing): the rule
  // for each row's gpu_energy_j (EnergyRule). Up to EnergyRule::kMeasureLimitS of polling.
  using benchmark::AddCustomContext;
  const auto number = context_number;
  if (!conditions_enabled() || nvml_device() == nullptr) return;
  const UpdatePeriod& energy_period = gpu_energy_update_period();
  if (energy_period.seconds) {
    AddCustomContext("gpu_energy_update_period_s", number(*energy_period.seconds));
    AddCustomContext("gpu_energy_min_window_s",
                     number(EnergyRule::kMinUpdates * *energy_period.seconds));
  } else {
    AddCustomContext("gpu_energy_update_period_s",
                     "unavailable: " + energy_period.why_not + "; no row carries gpu_energy_j");
  }
}

}  // namespace gpubench
