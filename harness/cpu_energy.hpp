#pragma once
// The CPU's energy counter: RAPL through the kernel's powercap interface
// (/sys/class/powercap/intel-rapl:N, one zone per CPU package; AMD's Zen parts are exposed under
// the same name since Linux 5.8). Each package zone's energy_uj counts microjoules since an
// arbitrary start and wraps at max_energy_range_uj. The count covers the whole package (every
// core, every process, the uncore), as NVML's energy counter covers the whole GPU: a row's energy
// is the machine's energy while the row ran.
//
// Where it is absent: virtual machines expose no RAPL; and since Linux 5.10 energy_uj is readable
// by root only (a side channel, CVE-2020-8694), so a user run on bare metal often has none either.
// The counter is then absent and the context's `cpu_energy_counter` says why.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpubench {

class CpuEnergyCounter {
 public:
  // The package zones under `powercap_root`; unusable (reason()) when none is readable.
  explicit CpuEnergyCounter(const std::string& powercap_root = "/sys/class/powercap");

  bool usable() const { return !zones_.empty(); }
  // "" when usable, else why not.
  const std::string& reason() const { return reason_; }
  // The zones read, e.g. "package-0 (intel-rapl:0)".
  std::string zones_text() const;

  // Each zone's count now, in microjoules; absent when one cannot be read.
  std::optional<std::vector<std::uint64_t>> read_uj() const;
  // Joules between two readings of read_uj(), counting a zone that wrapped once.
  std::optional<double> joules_between(const std::vector<std::uint64_t>& begin,
                                       const std::vector<std::uint64_t>& end) const;

 private:
  struct Zone {
    std::string name;
    std::string energy_path;
    std::uint64_t range_uj = 0;  // max_energy_range_uj: where the count wraps to 0
  };
  std::vector<Zone> zones_;
  std::string reason_;
};

// The process's counter over the real /sys/class/powercap, opened once.
const CpuEnergyCounter& cpu_energy_counter();

}  // namespace gpubench
