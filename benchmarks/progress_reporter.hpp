#pragma once
// Progress of a long sweep on stderr: "gpubench: 120/490 benchmarks, 1:02 elapsed, now <name>",
// at most one line every kSecondsBetweenLines (GPUBENCH_PROGRESS_SECONDS overrides it) and one at
// the end, so a short run prints nothing. It wraps the display reporter Google Benchmark would have
// made for
// --benchmark_format and forwards everything to it, so the console and JSON outputs are unchanged.

#include <benchmark/benchmark.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace gpubench {

class ProgressReporter : public benchmark::BenchmarkReporter {
 public:
  static constexpr double kSecondsBetweenLines = 10.0;
  // `total`: the benchmarks the filter selects.
  explicit ProgressReporter(std::size_t total);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& reports) override;
  void Finalize() override;

 private:
  void print_line(const std::string& current) const;

  // Google Benchmark's own reporter for --benchmark_format (one static instance the library
  // creates once and never frees while a custom display reporter is in use), so it is not deleted
  // here. Make a ProgressReporter only for a run that passes it to RunSpecifiedBenchmarks: a run
  // without one takes ownership of that same instance and deletes it.
  benchmark::BenchmarkReporter* display_;
  std::size_t total_;
  std::set<std::string> done_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_ = start_;
  double seconds_between_lines_ = kSecondsBetweenLines;
};

// How many of `names` Google Benchmark's filter selects (a POSIX extended regular expression
// searched in the name; a leading '-' negates it; empty or "all" selects everything). Returns 0
// for an invalid expression.
std::size_t count_selected(const std::vector<std::string>& names, const std::string& filter);

}  // namespace gpubench
