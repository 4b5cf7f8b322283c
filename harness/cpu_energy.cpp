#include "harness/cpu_energy.hpp"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>

namespace gpubench {

namespace {

std::optional<std::string> first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return line;
}

std::optional<std::uint64_t> number_in(const std::string& path) {
  const auto line = first_line(path);
  if (!line) return std::nullopt;
  std::istringstream stream(*line);
  std::uint64_t value = 0;
  if (!(stream >> value)) return std::nullopt;
  return value;
}

// "intel-rapl:0" is a package zone; "intel-rapl:0:1" is a subzone (core, uncore, dram) whose
// energy the package already counts.
bool is_package_zone(const std::string& entry) {
  constexpr std::string_view kPrefix = "intel-rapl:";
  if (entry.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  const std::string rest = entry.substr(kPrefix.size());
  return !rest.empty() &&
         std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

CpuEnergyCounter::CpuEnergyCounter(const std::string& powercap_root) {
  DIR* directory = opendir(powercap_root.c_str());
  if (directory == nullptr) {
    reason_ = powercap_root +
              " does not exist (no powercap/RAPL driver; virtual machines usually have none)";
    return;
  }
  std::vector<std::string> entries;
  while (const dirent* entry = readdir(directory)) entries.emplace_back(entry->d_name);
  closedir(directory);
  std::sort(entries.begin(), entries.end());
  std::string unreadable;
  for (const std::string& entry : entries) {
    if (!is_package_zone(entry)) continue;
    std::string zone_path = powercap_root;
    zone_path.append("/").append(entry);
    Zone zone;
    zone.name = first_line(zone_path + "/name").value_or("?");
    zone.name.append(" (").append(entry).append(")");
    zone.energy_path = zone_path + "/energy_uj";
    const auto range = number_in(zone_path + "/max_energy_range_uj");
    if (!number_in(zone.energy_path) || !range || *range == 0) {
      unreadable = zone.energy_path;
      continue;
    }
    zone.range_uj = *range;
    zones_.push_back(std::move(zone));
  }
  if (!zones_.empty() && unreadable.empty()) return;
  if (!unreadable.empty()) {
    zones_.clear();  // a partial sum would undercount the machine
    reason_ = unreadable +
              " is not readable (root only since Linux 5.10, CVE-2020-8694; run as root or "
              "grant read access to record CPU energy)";
  } else {
    reason_ = powercap_root +
              " has no intel-rapl package zone (no RAPL driver; virtual machines usually have "
              "none)";
  }
}

std::string CpuEnergyCounter::zones_text() const {
  std::string text;
  for (const Zone& zone : zones_) text += (text.empty() ? "" : ", ") + zone.name;
  return text;
}

std::optional<std::vector<std::uint64_t>> CpuEnergyCounter::read_uj() const {
  if (zones_.empty()) return std::nullopt;
  std::vector<std::uint64_t> counts;
  for (const Zone& zone : zones_) {
    const auto count = number_in(zone.energy_path);
    if (!count) return std::nullopt;
    counts.push_back(*count);
  }
  return counts;
}

std::optional<double> CpuEnergyCounter::joules_between(
    const std::vector<std::uint64_t>& begin, const std::vector<std::uint64_t>& end) const {
  if (begin.size() != zones_.size() || end.size() != zones_.size()) return std::nullopt;
  double microjoules = 0;
  for (std::size_t index = 0; index < zones_.size(); ++index) {
    // A count below the one before wrapped at the zone's range, once: the range is hundreds of
    // kilojoules on current parts, many minutes at full power, far longer than a repetition.
    const std::uint64_t delta = end[index] >= begin[index]
                                    ? end[index] - begin[index]
                                    : zones_[index].range_uj - begin[index] + end[index];
    microjoules += static_cast<double>(delta);
  }
  return 1e-6 * microjoules;
}

const CpuEnergyCounter& cpu_energy_counter() {
  static const CpuEnergyCounter counter;
  return counter;
}

}  // namespace gpubench
