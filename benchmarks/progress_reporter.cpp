#include "benchmarks/progress_reporter.hpp"

#include <regex.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "benchmarks/command_line.hpp"
#include "benchmarks/output_file.hpp"
#include "harness/schema.hpp"

namespace gpubench {
namespace {

constexpr const char* kDebugLibraryWarning = "Library was built as DEBUG";

// "1:02", or "1:02:03" from an hour on.
std::string minutes_and_seconds(double seconds) {
  const auto whole = static_cast<long long>(std::llround(std::max(seconds, 0.0)));
  char text[32];
  if (whole >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", whole / 3600, whole / 60 % 60,
                  whole % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", whole / 60, whole % 60);
  }
  return text;
}

// The console's copy of a run: the counters it shows, no label unless every counter is shown.
benchmark::BenchmarkReporter::Run console_row(const benchmark::BenchmarkReporter::Run& run,
                                              bool compact) {
  benchmark::BenchmarkReporter::Run shown = run;
  shown.counters.clear();
  for (const auto& [key, counter] : run.counters) {
    if (!std::isfinite(counter.value)) continue;
    if (compact && !is_console_counter(key)) continue;
    shown.counters.emplace(key, counter);
  }
  if (compact) shown.report_label.clear();
  return shown;
}

}  // namespace

const char* const kDebugLibraryNote =
    "gpubench: that warning is about Google Benchmark's own library (the distribution builds it "
    "without NDEBUG), not the code measured: bench's timed loops are its own Release code "
    "(docs/running-bench.md)";

bool is_console_counter(const std::string& key) {
  // What a row measured, a few numbers a person reads at a glance: the rate of work, training
  // throughput and step time, where a GPU row's time goes (the transfer and launch overheads), the
  // probes' results and whether the result was right. The rest repeats the name (sizes, counts),
  // the Time column (t_wall) or another counter (images_per_s is samples_per_s under its older
  // name; t_epoch_cifar is t_step times the steps of an epoch).
  static constexpr Counter kShown[] = {
      Counter::flop_per_s,
      Counter::pct_peak,
      Counter::samples_per_s,
      Counter::bytes_per_s,
      Counter::t_step,
      Counter::t_epoch,
      Counter::t_h2d,
      Counter::t_compute,
      Counter::t_d2h,
      Counter::t_overhead,
      Counter::t_per_launch,
      Counter::t_issue_per_launch,
      Counter::t_per_node,
      Counter::t_event_record,
      Counter::t_sync,
      Counter::test_accuracy,
      Counter::max_error_over_bound,
      Counter::skipped_steps,
  };
  static const std::set<std::string, std::less<>> keys = [] {
    std::set<std::string, std::less<>> shown;
    for (const Counter counter : kShown) shown.emplace(counter_spec(counter).key);
    return shown;
  }();
  return keys.count(key) > 0;
}

ProgressReporter::ProgressReporter(std::size_t total, ConsoleCounters console_counters,
                                   std::string out_file)
    : display_(benchmark::CreateDefaultDisplayReporter()),
      compact_console_(console_counters == ConsoleCounters::measured),
      out_file_(std::move(out_file)),
      total_(total) {
  if (const char* seconds = std::getenv("GPUBENCH_PROGRESS_SECONDS")) {
    seconds_between_lines_ = std::strtod(seconds, nullptr);
  }
}

bool ProgressReporter::ReportContext(const Context& context) {
  start_ = std::chrono::steady_clock::now();
  last_line_ = start_;
  // The console and CSV reporters write the context to their error stream (stderr); it passes
  // through here so that the DEBUG warning gets its note on the next line.
  std::ostream& error_stream = display_->GetErrorStream();
  std::ostringstream context_text;
  display_->SetErrorStream(&context_text);
  errno = 0;
  const bool go_on = display_->ReportContext(context);
  display_->SetErrorStream(&error_stream);
  std::istringstream lines(context_text.str());
  std::string line;
  while (std::getline(lines, line)) {
    error_stream << line << "\n";
    if (line.find(kDebugLibraryWarning) != std::string::npos)
      error_stream << kDebugLibraryNote << "\n";
  }
  error_stream.flush();
  check_stdout();
  return go_on;
}

void ProgressReporter::ReportRuns(const std::vector<Run>& reports) {
  if (file_state_) file_state_->rows_shown();
  if (!stdout_failed_) {
    const bool console = dynamic_cast<benchmark::ConsoleReporter*>(display_) != nullptr;
    errno = 0;
    if (console) {
      std::vector<Run> shown;
      shown.reserve(reports.size());
      for (const Run& run : reports) shown.push_back(console_row(run, compact_console_));
      display_->ReportRuns(shown);
    } else {
      display_->ReportRuns(reports);
    }
    check_stdout();
  }
  const std::size_t done_before = done_.size();
  for (const Run& run : reports) done_.insert(run.run_name.str());
  if (done_.size() > done_before) line_due_ = true;
  // Google Benchmark reports a benchmark's repetitions, then their aggregates when at least two
  // of them ran without error: the line waits for the aggregates, so that it follows every row of
  // its benchmark.
  const auto ran = std::count_if(reports.begin(), reports.end(), [](const Run& run) {
    return run.run_type == Run::RT_Iteration && !run.error_occurred;
  });
  if (ran >= 2 || !line_due_) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_line_).count() >= seconds_between_lines_) {
    last_line_ = now;
    line_due_ = false;
    print_line(reports.back().run_name.str());
  }
}

void ProgressReporter::Finalize() {
  if (!stdout_failed_) {
    errno = 0;
    display_->Finalize();
    check_stdout();
  }
  if (std::chrono::duration<double>(last_line_ - start_).count() > 0) print_line("done");
}

void ProgressReporter::check_stdout() {
  if (stdout_failed_) return;
  display_->GetOutputStream().flush();
  const auto error = stdout_write_error();
  if (!error) return;
  stdout_failed_ = true;
  if (out_file_.empty()) {
    std::fprintf(stderr,
                 "gpubench: %s and no --benchmark_out file takes the results: stopping (exit "
                 "code %d)\n",
                 error->c_str(), kExitOutputLost);
    std::fflush(stderr);
    std::_Exit(kExitOutputLost);
  }
  std::fprintf(stderr,
               "gpubench: %s: the console table stops here; the run goes on and writes "
               "--benchmark_out=%s (exit code %d at the end)\n",
               error->c_str(), out_file_.c_str(), kExitOutputLost);
  std::fflush(stderr);
}

void ProgressReporter::print_line(const std::string& current) const {
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::size_t done = done_.size();
  std::string left;
  if (done > 0 && done < total_) {
    const double left_s =
        elapsed_s / static_cast<double>(done) * static_cast<double>(total_ - done);
    left = ", about " + minutes_and_seconds(left_s) + " left";
  }
  std::fprintf(stderr, "gpubench: %zu/%zu benchmarks, %s elapsed%s, %s\n", done, total_,
               minutes_and_seconds(elapsed_s).c_str(), left.c_str(), current.c_str());
  std::fflush(stderr);
}

std::size_t count_selected(const std::vector<std::string>& names, const std::string& filter) {
  if (filter.empty() || filter == "all") return names.size();
  const bool negated = filter.front() == '-';
  const std::string expression = negated ? filter.substr(1) : filter;
  regex_t compiled;
  if (regcomp(&compiled, expression.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return 0;
  std::size_t selected = 0;
  for (const std::string& name : names) {
    const bool matches = regexec(&compiled, name.c_str(), 0, nullptr, 0) == 0;
    if (matches != negated) ++selected;
  }
  regfree(&compiled);
  return selected;
}

}  // namespace gpubench
