#include "harness/cpu_info.hpp"

#include "harness/cpu_clock.hpp"
#include "harness/cpu_fma.hpp"
#include "harness/instruction_region.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

namespace gpubench {

namespace {

constexpr double kHighestPlausibleClockHz = 6.5e9;
// Table and measurement differing by more than this factor put a warning in the context.
constexpr double kDisagreementRatio = 1.25;

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  const auto end = text.find_last_not_of(" \t\r\n");
  return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
}

// A measured clock above 6.5 GHz, or above twice the nominal one, is not a real core's.
bool plausible_measured_clock(double measured_hz, double nominal_hz) {
  return measured_hz > 0 && measured_hz <= kHighestPlausibleClockHz &&
         (nominal_hz <= 0 || measured_hz <= 2 * nominal_hz);
}

// The peak's clock is the highest of three readings, each of which can be low: "cpu MHz" is the
// nominal clock in a virtual machine and the current one on bare metal; cpufreq's
// cpuinfo_max_freq is absent in most virtual machines and is the base clock under acpi-cpufreq;
// the measured clock is that of one busy core now (another tenant's load can lower it), and is
// not used when it is not plausible.
void choose_peak_clock(CpuInfo* info) {
  info->clock_hz = info->nominal_clock_hz;
  info->clock_source = "/proc/cpuinfo cpu MHz";
  std::ifstream max_frequency("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (max_frequency >> khz && khz * 1e3 > info->clock_hz) {
    info->clock_hz = khz * 1e3;
    info->clock_source = "cpufreq cpuinfo_max_freq";
  }
  // Under Valgrind (the gate's instruction lane) the loop measures the emulator, not the core.
  if (InstructionRegion::running_on_valgrind()) return;
  const double measured = measure_core_clock_hz();
  if (plausible_measured_clock(measured, info->nominal_clock_hz) && measured > info->clock_hz) {
    info->clock_hz = measured;
    info->clock_source = "measured: dependent-add chain on one busy core";
  }
}

std::string short_number(double value) {
  std::ostringstream stream;
  stream.precision(4);
  stream << value;
  return stream.str();
}

// Measures every FMA level the CPU's flags allow and uses the fastest for the peak; the table is
// the fallback and the cross-check.
void choose_flop_per_cycle(CpuInfo* info) {
  info->fp32_flop_per_cycle_per_core = info->fp32_flop_per_cycle_table;
  info->fp64_flop_per_cycle_per_core = info->fp64_flop_per_cycle_table;
  if (InstructionRegion::running_on_valgrind()) {
    info->flop_per_cycle_source =
        "table: running under Valgrind, whose emulated CPU's FMA rate "
        "is not the machine's";
    return;
  }
  FmaLevelsToRun to_run;
  to_run.avx2_fma = info->has_avx2 && info->has_fma;
  to_run.avx512f = info->has_avx512f;
  info->fma = measure_fma_throughput(to_run);
  if (!to_run.avx2_fma && !to_run.avx512f) {
    info->flop_per_cycle_source = "table: no FMA loop for this CPU's ISA (AVX2+FMA or AVX-512F)";
    return;
  }
  if (!plausible_measured_clock(info->fma.clock_hz, info->nominal_clock_hz)) {
    info->flop_per_cycle_source = "table: the clock read between the FMA loops (" +
                                  short_number(info->fma.clock_hz / 1e9) +
                                  " GHz) is not a real core's";
    return;
  }
  if (info->fma.levels.empty()) {
    info->flop_per_cycle_source = "table: the FMA loops returned wrong sums";
    return;
  }
  const FmaLevelThroughput* best = nullptr;
  for (const FmaLevelThroughput& level : info->fma.levels) {
    const double fp32 =
        snap_flop_per_cycle(level.fp32_flop_per_cycle, fma_lanes(level.level, false));
    const double fp64 =
        snap_flop_per_cycle(level.fp64_flop_per_cycle, fma_lanes(level.level, true));
    // On a tie the wider level is named: the one a BLAS built for the CPU runs.
    if (fp32 >= info->fp32_flop_per_cycle_measured) best = &level;
    info->fp32_flop_per_cycle_measured = std::max(info->fp32_flop_per_cycle_measured, fp32);
    info->fp64_flop_per_cycle_measured = std::max(info->fp64_flop_per_cycle_measured, fp64);
  }
  info->fp32_flop_per_cycle_per_core = info->fp32_flop_per_cycle_measured;
  info->fp64_flop_per_cycle_per_core = info->fp64_flop_per_cycle_measured;
  info->flop_per_cycle_source =
      "measured: " + best->name + " " + std::to_string(best->width_bits) + "-bit FMA loop";
  for (const bool double_precision : {false, true}) {
    const double measured =
        double_precision ? info->fp64_flop_per_cycle_measured : info->fp32_flop_per_cycle_measured;
    const double table =
        double_precision ? info->fp64_flop_per_cycle_table : info->fp32_flop_per_cycle_table;
    if (std::max(measured, table) <= kDisagreementRatio * std::min(measured, table)) continue;
    if (!info->peak_warning.empty()) info->peak_warning += "; ";
    info->peak_warning += std::string(double_precision ? "fp64" : "fp32") +
                          " FLOP/cycle/core measured " + short_number(measured) + ", table " +
                          short_number(table);
  }
  if (!info->peak_warning.empty()) {
    info->peak_warning +=
        " (the peak uses the measured values; the table does not know this CPU, "
        "or the measurement shared its core with another busy thread)";
  }
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  info.logical_cpus = std::max(1U, std::thread::hardware_concurrency());
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::string flags;
  double mhz = 0;
  std::string vendor;
  int family = 0;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical_id;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "flags" && flags.empty()) flags = value;
    if (key == "cpu MHz" && mhz == 0) mhz = std::atof(value.c_str());
    if (key == "vendor_id" && vendor.empty()) vendor = value;
    if (key == "cpu family" && family == 0) family = std::atoi(value.c_str());
    if (key == "physical id") physical_id = value;
    if (key == "core id") cores.insert({physical_id, value});
  }
  if (info.model.empty()) info.model = "unknown";
  info.physical_cores =
      cores.empty() ? info.logical_cpus : std::min<int>(info.logical_cpus, cores.size());
  std::istringstream words(flags);
  for (std::string word; words >> word;) info.flags.insert(word);
  info.has_avx2 = info.has_flag("avx2");
  info.has_fma = info.has_flag("fma");
  info.has_avx512f = info.has_flag("avx512f");
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"}) {
    if (info.has_flag(flag))
      info.isa_flags += std::string(info.isa_flags.empty() ? "" : " ") + flag;
  }
  // AMD's Zen 4 (family 0x19) runs AVX-512 on 256-bit units, two passes per instruction: the same
  // 32 FLOP/cycle as AVX2 (AMD, "Software Optimization Guide for the AMD Zen4 Microarchitecture").
  // Zen 5 (family 0x1A) server and desktop parts have full 512-bit FMA units.
  const bool half_width_avx512 = vendor == "AuthenticAMD" && family == 0x19;
  if (info.has_avx512f && !half_width_avx512) {
    info.fp32_flop_per_cycle_table = 64;
  } else if (info.has_avx2 && info.has_fma) {
    info.fp32_flop_per_cycle_table = 32;
  }
  info.fp64_flop_per_cycle_table = info.fp32_flop_per_cycle_table / 2;
  info.nominal_clock_hz = mhz * 1e6;
  choose_peak_clock(&info);
  // After the clock measurement, which has woken the core up from idle.
  choose_flop_per_cycle(&info);
  return info;
}

}  // namespace

const CpuInfo& cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

double cpu_peak_flops(int threads, bool double_precision) {
  const CpuInfo& info = cpu_info();
  const int cores = std::max(1, std::min(threads, info.physical_cores));
  const double flop_per_cycle =
      double_precision ? info.fp64_flop_per_cycle_per_core : info.fp32_flop_per_cycle_per_core;
  return cores * flop_per_cycle * info.clock_hz;
}

double cpu_peak_bf16_flops(int threads) {
  // VDPBF16PS does two bf16 multiply-adds into each fp32 lane at the FMA's width and rate.
  const bool dot_product = cpu_info().has_flag("avx512_bf16");
  return (dot_product ? 2.0 : 1.0) * cpu_peak_flops(threads, false);
}

}  // namespace gpubench
