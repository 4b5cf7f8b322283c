#pragma once
// What a person running `bench` sees: the display reporter Google Benchmark makes for
// --benchmark_format (stdout), wrapped.
//
// Decisions:
// - Console rows are compact: after the time columns they show a few measured counters
//   (is_console_counter), not the ones that repeat the name (sizes, counts, bytes) nor the
//   per-operation times `t_op:*`, and not the label (it repeats the name too), so that a row fits
//   a terminal instead of 2 KB. A counter whose value is not a number is left out: Google
//   Benchmark's coefficient of variation of a counter that is 0 in every repetition is 0/0, which
//   it prints as "-nan%". --all-counters shows every counter and the label; the JSON and CSV
//   formats and the --benchmark_out file always carry every counter.
// - Progress of a long sweep goes to stderr: "gpubench: 120/490 benchmarks, 1:02 elapsed, about
//   3:10 left, <name>", at most one line every kSecondsBetweenLines (GPUBENCH_PROGRESS_SECONDS
//   overrides it) and one at the end, so a short run prints nothing. The time left is the
//   benchmarks not yet run at the average pace of those run so far.
// - stdout is flushed after every row, before any progress line: with stdout and stderr in one
//   log (`bench >log 2>&1`) a progress line never lands inside a half-written row.
// - A write to stdout that fails (a pipe closed by `| head`, a full disk) is said once on stderr
//   when it happens. With a --benchmark_out file the run goes on for the file; without one the
//   results have nowhere to go and bench stops at once. Either way bench exits with
//   kExitOutputLost.
// - Google Benchmark's "***WARNING*** Library was built as DEBUG" (the distributions build its
//   library without NDEBUG) is followed by one line saying what it means for the numbers.

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/output_file.hpp"

namespace gpubench {

enum class ConsoleCounters { measured, all };

class ProgressReporter : public benchmark::BenchmarkReporter {
 public:
  static constexpr double kSecondsBetweenLines = 10.0;
  // `total`: the benchmarks the filter selects. `out_file`: the --benchmark_out path that also
  // receives the results, or empty when stdout is the only output.
  ProgressReporter(std::size_t total, ConsoleCounters console_counters, std::string out_file);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& reports) override;
  void Finalize() override;

  // The --benchmark_out file's reporter state, told when rows are shown before the file has them
  // (FileReporterState::rows_pending).
  void show_rows_before(std::shared_ptr<FileReporterState> file_state) {
    file_state_ = std::move(file_state);
  }

  // Whether a write to stdout failed; it was said on stderr when it happened.
  bool stdout_failed() const { return stdout_failed_; }

 private:
  void check_stdout();
  void print_line(const std::string& current) const;

  // Google Benchmark's own reporter for --benchmark_format (one static instance the library
  // creates once and never frees while a custom display reporter is in use), so it is not deleted
  // here. Make a ProgressReporter only for a run that passes it to RunSpecifiedBenchmarks: a run
  // without one takes ownership of that same instance and deletes it.
  benchmark::BenchmarkReporter* display_;
  std::shared_ptr<FileReporterState> file_state_;
  bool compact_console_;  // the display is the console and --all-counters was not given
  std::string out_file_;
  bool stdout_failed_ = false;
  std::size_t total_;
  std::set<std::string> done_;
  bool line_due_ = false;  // a benchmark finished since the last progress line
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_line_ = start_;
  double seconds_between_lines_ = kSecondsBetweenLines;
};

// The line bench prints after Google Benchmark's warning that its library was built as DEBUG.
extern const char* const kDebugLibraryNote;

// Whether the console shows the counter `key` by default: FLOP/s, pct_peak, samples_per_s,
// bytes_per_s, t_step, t_epoch, t_h2d, t_compute, t_d2h, t_overhead, the launch and sync probes'
// times, test_accuracy, max_error_over_bound and skipped_steps.
bool is_console_counter(const std::string& key);

// How many of `names` Google Benchmark's filter selects (a POSIX extended regular expression
// searched in the name; a leading '-' negates it; empty or "all" selects everything). Returns 0
// for an invalid expression.
std::size_t count_selected(const std::vector<std::string>& names, const std::string& filter);

}  // namespace gpubench
