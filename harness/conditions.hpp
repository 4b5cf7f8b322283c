#pragma once
// Measurement policy: every repetition records the conditions it was measured under, and one rule
// calls it disturbed. The timers (harness/*_timer.hpp) open a ConditionWindow just before their
// timed loop and finish it just after, outside every clock; the row writer
// (harness/result_row.hpp) writes what the window saw as counters of that repetition. Fixtures do
// nothing for it.
//
// Per repetition (the window is the whole timed loop, preparations between iterations included):
// - CPU, from /proc/stat over the CPUs this process may run on (sched_getaffinity): the CPU time
//   other processes used (busy time less this process's own, CLOCK_PROCESS_CPUTIME_ID) and the
//   time the hypervisor stole, both in cores (seconds per second of the window); from
//   /proc/self/task/*/schedstat the time this process's threads waited on a run queue for a CPU,
//   in cores; cpufreq's current clock of the CPU the timing thread ran on, where cpufreq exists.
// - CPU energy, from RAPL's package counters (harness/cpu_energy.hpp) at both ends, where readable.
// - GPU, through NVML (harness/nvml.hpp) where it loads: a sampler thread reads the SM clock, the
//   clock event reasons, temperature and power every kGpuSamplePeriod; the energy counter is read
//   at both ends, and its difference kept where the window spans enough of its steps (EnergyRule).
// Decisions:
// - Sampling at the window's two ends only on the CPU side: nothing runs during the loop, so the
//   row's time cannot change (scripts/measure_conditions.py measures it). The GPU side needs a
//   thread (the clock's minimum over the row), started only where NVML is usable.
// - /proc/stat counts in ticks of 1/USER_HZ (10 ms): over a 50 ms window a figure from it is
//   uncertain by a few tenths of a core. The run-queue wait is kept by the scheduler in
//   nanoseconds; the rule therefore triggers on the wait and uses the other processes' CPU only
//   to confirm that someone else was there (a row whose own threads outnumber its CPUs waits on
//   itself, which is no disturbance).
// - GPUBENCH_CONDITIONS=off turns all of it off (no window reads, no counters), for measuring
//   what it costs.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/nvml.hpp"

namespace gpubench {

// The rule that calls a repetition disturbed (docs/timing-method.md, "Disturbed repetitions").
// Why these thresholds (measured on the shared 2-core VM): 1-thread GEMM rows beside one busy
// process waited 0.000-0.003 core, 2-thread rows beside it 1.0 core; a tenth of a core is far from
// both. Yet 1-thread rows beside that process also ran up to 27% slower without waiting (the two
// vCPUs share one physical core's caches and memory path on the host): hence part (2). The
// reasons for each part are in docs/timing-method.md.
struct DisturbanceRule {
  // The other processes' share is read over the timed loop extended back to at least this long
  // before its end: /proc/stat counts in 10 ms ticks, so over a 10 ms loop it could not tell a
  // busy neighbour from rounding (one tick is a whole core there); over 0.25 s one tick is 0.04
  // core. The extension looks back at what ran just before the loop, as a neighbour that runs
  // through the loop also ran then.
  static constexpr double kMinOtherSpanS = 0.25;
  // (1) CPU contention: this process's threads waited on a run queue for more than this many
  // cores on average, while other processes used more than kMinOtherCores, and more than
  // kMinOtherTicks ticks of /proc/stat in all (a row alone on its CPUs reads a tick or two of
  // "others" from rounding, which must not confirm that row's wait on its own threads).
  static constexpr double kMaxWaitCores = 0.10;
  static constexpr double kMinOtherCores = 0.10;
  static constexpr double kMinOtherTicks = 2;
  // (2) A busy neighbour: other processes used more than kMaxOtherShare of the CPUs this process
  // may run on, and at least kMaxOtherCoresFloor cores, whether or not this row waited. The
  // floor keeps a 2-CPU machine at half a core (above /proc/stat's rounding); the share keeps a
  // 64-core host from calling every row disturbed because a daemon took one core.
  static constexpr double kMaxOtherShare = 0.25;
  static constexpr double kMaxOtherCoresFloor = 0.5;
  // (3) The hypervisor stole more than this many cores from the CPUs this process may use, and
  // more than one /proc/stat tick in all (a single tick is a rounding step, not a measurement).
  static constexpr double kMaxStealCores = 0.10;
  // (4) The GPU slowed itself for heat or power protection: any of these NVML clock event
  // reasons during the row. The software power cap (0x4) is not among them: a GPU that runs at
  // its power limit under a heavy kernel is the workload's own behaviour, not a disturbance.
  static constexpr std::uint64_t kGpuReasons =
      kNvmlReasonHwSlowdown | kNvmlReasonSwThermal | kNvmlReasonHwThermal | kNvmlReasonHwPowerBrake;

  // Part (2)'s threshold, in cores, for a process that may run on `allowed_cpus` CPUs.
  static constexpr double max_other_cores(int allowed_cpus) {
    const double share = kMaxOtherShare * allowed_cpus;
    return share > kMaxOtherCoresFloor ? share : kMaxOtherCoresFloor;
  }
};

// When a repetition carries its GPU energy (docs/timing-method.md, "GPU energy"). NVML's energy
// counter (nvmlDeviceGetTotalEnergyConsumption) moves in steps: on an H200 (2026-11-27) windows
// of about 65 ms read 0 in 16 of 60 repetitions, a step of about 90 ms. The difference of two
// readings is the energy between the last steps before each, an interval whose length differs
// from the window's by less than one step: wrong by up to one step's energy, about 1/N of the
// whole over a window of N steps at a steady power. At kMinUpdates steps that is at most a tenth;
// below it the repetition has no gpu_energy_j and carries gpu_energy_too_short = 1 instead. NVML
// has no query for the step, so bench measures it once at start (measure_update_period).
struct EnergyRule {
  static constexpr double kMinUpdates = 10;
  // The measurement: the counter is read every kPollS until kIntervals whole intervals between
  // its changes were seen, for at most kMeasureLimitS (a GPU whose counter moves less often keeps
  // no energy at all: its step is unknown). The longest interval is the step: a counter whose
  // steps are uneven is judged by its longest.
  static constexpr double kPollS = 0.0005;
  static constexpr int kIntervals = 3;
  static constexpr double kMeasureLimitS = 1.0;
};

// The update period of a counter that moves in steps, from `read` polled with `pause` between
// reads and timed by `now_s`: the longest of the first `intervals` intervals between two changes
// (the time before the first change is part of an interval and is not used), within `limit_s`.
// `seconds` is absent, with the reason in `why_not`, when the counter is unreadable or changed too
// few times to give one interval.
struct UpdatePeriod {
  std::optional<double> seconds;
  int intervals = 0;  // how many intervals the longest was taken over
  std::string why_not;
};
UpdatePeriod measure_update_period(const std::function<std::optional<std::uint64_t>()>& read,
                                   const std::function<double()>& now_s,
                                   const std::function<void()>& pause, double limit_s,
                                   int intervals);

// EnergyRule: whether an energy difference over `span_s` is kept, given the counter's period (an
// unknown period keeps none).
bool energy_span_is_enough(double span_s, const std::optional<double>& period_s);

// The process's GPU's energy counter period, measured once on first use (about three steps of the
// counter, at most EnergyRule::kMeasureLimitS); absent with the reason where there is no NVML, no
// counter, or no measurement.
const UpdatePeriod& gpu_energy_update_period();

// The bits of the disturbed_by counter: which part of the rule fired.
enum DisturbedBy : unsigned {
  kDisturbedByCpu = 1,        // part (1): waited for a CPU while others ran
  kDisturbedBySteal = 2,      // part (3)
  kDisturbedByGpu = 4,        // part (4)
  kDisturbedByNeighbour = 8,  // part (2): others took a large share of the CPUs
};

// What one window saw; a figure is absent where its source was unreadable.
struct RepetitionConditions {
  double window_s = 0;
  // Others' CPU over the loop extended back to DisturbanceRule::kMinOtherSpanS (other_span_s).
  std::optional<double> cpu_other_cores;
  double other_span_s = 0;
  std::optional<double> cpu_wait_cores;
  std::optional<double> cpu_steal_cores;
  std::optional<double> cpu_clock_hz;
  std::optional<double> gpu_sm_clock_min_hz;  // over samples where the GPU was not idle
  std::optional<double> gpu_sm_clock_max_hz;
  std::optional<std::uint64_t> gpu_clock_event_reasons;  // OR of all samples, idle bit removed
  std::optional<double> gpu_temperature_max_c;
  std::optional<double> gpu_power_mean_w;
  // Absent, with gpu_energy_too_short set, where the window spans fewer than EnergyRule's steps of
  // the counter.
  std::optional<double> gpu_energy_per_iteration_j;
  bool gpu_energy_too_short = false;
  std::optional<double> cpu_energy_per_iteration_j;  // RAPL's package energy (cpu_energy.hpp)
};

// The rule: the DisturbedBy bits that fire for `conditions`; 0 is undisturbed. `tick_s` is one
// /proc/stat tick; `allowed_cpus` the CPUs this process may run on. An absent figure never fires.
unsigned disturbed_by(const RepetitionConditions& conditions, double tick_s, int allowed_cpus);

// Cumulative CPU counters at one instant.
struct CpuCounters {
  double wall_s = 0;              // steady clock
  std::optional<double> busy_s;   // user + nice + system + irq + softirq over the allowed CPUs
  std::optional<double> steal_s;  // steal over the allowed CPUs
  double own_cpu_s = 0;           // this process, every thread
  // run_delay (seconds) of each of this process's threads by thread id; absent where schedstat is
  // unreadable.
  std::optional<std::map<long, double>> wait_s_by_thread;
};

// The busy and steal seconds of /proc/stat `text`: the `cpu` line when `cpus` is empty (every
// CPU), else the sum of the `cpuN` lines for N in `cpus`. Absent when a line is missing or short.
struct ProcStatTimes {
  double busy_s = 0;
  double steal_s = 0;
};
std::optional<ProcStatTimes> parse_proc_stat(const std::string& text, const std::vector<int>& cpus,
                                             double tick_s);

// The CPU figures of a window from its two ends (others' CPU clamped at 0: the two sources round
// differently). The others' share is read from `others_from` (at or before `begin`; `begin` when
// absent) to `end`: the extension of DisturbanceRule::kMinOtherSpanS.
RepetitionConditions cpu_conditions_between(const CpuCounters& begin, const CpuCounters& end,
                                            const CpuCounters* others_from = nullptr);

// Recent CPU readings of the process's windows, newest last, for the others' extended span.
class CpuReadingHistory {
 public:
  void add(const CpuCounters& reading);
  // The newest reading at least `span_s` before `end_wall_s`, else the oldest one kept; absent
  // when none is kept.
  std::optional<CpuCounters> reading_before(double end_wall_s, double span_s) const;

 private:
  mutable std::mutex mutex_;
  std::vector<CpuCounters> readings_;  // without their per-thread waits; a few dozen at most
};
CpuReadingHistory& cpu_reading_history();

// The number of CPUs this process may run on (sched_getaffinity), at least 1.
int allowed_cpu_count();

// Reads the counters now.
CpuCounters read_cpu_counters();

// Whether conditions are recorded (GPUBENCH_CONDITIONS unset or "on"; "off" turns them off). An
// unusable value yields a message for bench to print and exit with.
bool conditions_enabled();
std::optional<std::string> conditions_setting_error();

// Aggregates NVML samples of one window; the sampler thread feeds it.
struct GpuSampleSummary {
  std::optional<double> sm_clock_min_hz;
  std::optional<double> sm_clock_max_hz;
  std::optional<std::uint64_t> reasons;
  std::optional<double> temperature_max_c;
  double power_sum_w = 0;
  int power_samples = 0;
  void add(const GpuSample& sample);
};

// One repetition's window: construct just before the timed loop, finish() just after it.
class ConditionWindow {
 public:
  static constexpr std::chrono::milliseconds kGpuSamplePeriod{10};
  ConditionWindow();
  ~ConditionWindow();
  ConditionWindow(const ConditionWindow&) = delete;
  ConditionWindow& operator=(const ConditionWindow&) = delete;
  ConditionWindow(ConditionWindow&&) = delete;
  ConditionWindow& operator=(ConditionWindow&&) = delete;
  // Ends the window over `iterations` iterations; its conditions become the current repetition's
  // (take_repetition_conditions).
  void finish(std::int64_t iterations);

 private:
  class GpuSampler;
  bool enabled_;
  CpuCounters begin_;
  std::optional<std::uint64_t> begin_energy_mj_;
  double begin_energy_s_ = 0;  // steady clock, just after begin_energy_mj_ was read
  std::optional<std::vector<std::uint64_t>> begin_cpu_energy_uj_;
  std::unique_ptr<GpuSampler> gpu_sampler_;
};

// The conditions of the calling thread's last finished window, handed over once; the row writer
// takes them. forget_repetition_conditions() drops a window a failed fixture left behind.
std::optional<RepetitionConditions> take_repetition_conditions();
void forget_repetition_conditions();

// How many repetitions of the run were measured with conditions and how many were disturbed, by
// which part of the rule.
struct DisturbanceSummary {
  std::size_t repetitions = 0;
  std::size_t disturbed = 0;
  std::size_t by_cpu = 0;
  std::size_t by_steal = 0;
  std::size_t by_gpu = 0;
  std::size_t by_neighbour = 0;
  double max_other_cores = 0;  // the largest others' share among neighbour-disturbed repetitions
  double max_wait_cores = 0;   // the largest wait among disturbed repetitions
  double max_steal_cores = 0;  // likewise for steal
};

// Counts what Google Benchmark reports. It calls a fixture several times for one repetition while
// it estimates the iteration count, with strictly more iterations each time, and reports only the
// last call; later repetitions reuse that count. So a call of the same row with more iterations
// than the one before replaces it, and any other call keeps it.
class DisturbanceTally {
 public:
  void record(const std::string& row, std::int64_t iterations,
              const RepetitionConditions& conditions, unsigned disturbed);
  DisturbanceSummary summary() const;

 private:
  struct Pending {
    std::string row;
    std::int64_t iterations = 0;
    RepetitionConditions conditions;
    unsigned disturbed = 0;
  };
  static void add(DisturbanceSummary* summary, const Pending& pending);
  mutable std::mutex mutex_;
  DisturbanceSummary committed_;
  std::optional<Pending> pending_;
};
DisturbanceTally& disturbance_tally();

// Seconds of one /proc/stat tick (1 / sysconf(_SC_CLK_TCK)).
double proc_stat_tick_s();

// Machine-wide facts for the JSON context: the rule's thresholds, CPU governor, boost, SMT, the
// CPUs this process may run on, where the per-row CPU clock comes from, and the GPU's persistence
// mode, application clocks, ECC and MIG (each "unavailable: <why>" where unreadable).
void add_condition_context();
// The GPU energy counter's step and the window a row needs (EnergyRule), measured once; a run
// calls it, a listing does not (it polls the counter for up to a second).
void add_energy_period_context();

// The other processes' CPU, in cores, over `seconds` from now (for bench's --wait-idle).
std::optional<double> other_cpu_cores_over(double seconds);

}  // namespace gpubench
