#include "benchmarks/run_conditions.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "benchmarks/command_line.hpp"

namespace gpubench {

namespace {

std::string cores_text(double cores) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", cores);
  return text;
}

// The value of --wait-idle=SECONDS taken out of argv, "" when absent.
std::optional<std::string> take_wait_idle(int* argc, char** argv) {
  constexpr const char* kPrefix = "--wait-idle=";
  for (int index = 1; index < *argc; ++index) {
    if (std::strncmp(argv[index], kPrefix, std::strlen(kPrefix)) != 0) continue;
    std::string value = argv[index] + std::strlen(kPrefix);
    for (int rest = index; rest + 1 < *argc; ++rest) argv[rest] = argv[rest + 1];
    --*argc;
    return value;
  }
  return std::nullopt;
}

// Waits as --wait-idle=VALUE asks; an exit code where VALUE is unusable.
std::optional<int> wait_idle(const std::string& value) {
  char* end = nullptr;
  const double limit_s = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(limit_s) || limit_s < 0 ||
      limit_s > kMaxWaitIdleSeconds) {
    std::cerr << "gpubench: --wait-idle=" << value << " is not a number of seconds from 0 to "
              << kMaxWaitIdleSeconds << "\n";
    return kExitUsage;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto waited_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::optional<double> others;
  // One-second readings: /proc/stat's 10 ms ticks are then 0.01 core.
  while (waited_s() < limit_s) {
    others = other_cpu_cores_over(std::min(1.0, limit_s - waited_s()));
    if (!others) {
      std::cerr << "gpubench: --wait-idle: /proc/stat is unreadable here; not waiting\n";
      return std::nullopt;
    }
    if (*others < DisturbanceRule::kMinOtherCores) {
      std::cerr << "gpubench: the machine is idle (other processes used " << cores_text(*others)
                << " core) after " << static_cast<long long>(waited_s()) << " s\n";
      return std::nullopt;
    }
  }
  std::cerr << "gpubench: --wait-idle=" << value << ": other processes still used "
            << (others ? cores_text(*others) : std::string("an unknown share of a"))
            << " core; measuring anyway (rows measured while disturbed are marked)\n";
  return std::nullopt;
}

}  // namespace

std::optional<int> prepare_run_conditions(int* argc, char** argv) {
  if (const auto error = conditions_setting_error()) {
    std::cerr << "gpubench: " << *error << "\n";
    return kExitUsage;
  }
  const auto value = take_wait_idle(argc, argv);
  if (value) {
    if (const auto stop = wait_idle(*value)) return stop;
  }
  // The first reading of the others' span (DisturbanceRule::kMinOtherSpanS), after any wait: the
  // first rows' spans reach back to here, over the start-up's ticks too.
  if (conditions_enabled()) cpu_reading_history().add(read_cpu_counters());
  return std::nullopt;
}

std::string disturbance_line(const DisturbanceSummary& summary, bool conditions_recorded) {
  if (!conditions_recorded) {
    return "gpubench: conditions not recorded (GPUBENCH_CONDITIONS=off): no row says whether the "
           "machine was quiet";
  }
  if (summary.repetitions == 0) return "";
  std::ostringstream line;
  if (summary.disturbed == 0) {
    line << "gpubench: conditions: none of " << summary.repetitions
         << " measured rows was disturbed (rule: docs/timing-method.md)";
    return line.str();
  }
  line << "gpubench: " << summary.disturbed << " of " << summary.repetitions
       << " measured rows were disturbed (";
  const char* separator = "";
  if (summary.by_cpu > 0) {
    line << summary.by_cpu << " waited for a CPU while other processes ran, up to "
         << cores_text(summary.max_wait_cores) << " core";
    separator = "; ";
  }
  if (summary.by_neighbour > 0) {
    line << separator << summary.by_neighbour
         << " ran while other processes used a large share of the CPUs, up to "
         << cores_text(summary.max_other_cores) << " core";
    separator = "; ";
  }
  if (summary.by_steal > 0) {
    line << separator << summary.by_steal << " lost CPU time to the hypervisor, up to "
         << cores_text(summary.max_steal_cores) << " core";
    separator = "; ";
  }
  if (summary.by_gpu > 0) {
    line << separator << summary.by_gpu << " ran on a GPU that slowed itself for heat or power";
  }
  line << "); they carry disturbed=1: stop what else runs and measure again, or start bench "
          "with --wait-idle=SECONDS";
  return line.str();
}

void print_disturbance_line() {
  const std::string line = disturbance_line(disturbance_tally().summary(), conditions_enabled());
  if (!line.empty()) std::cerr << line << "\n";
}

}  // namespace gpubench
