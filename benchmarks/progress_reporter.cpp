#include "benchmarks/progress_reporter.hpp"

#include <regex.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace gpubench {

ProgressReporter::ProgressReporter(std::size_t total)
    : display_(benchmark::CreateDefaultDisplayReporter()), total_(total) {
  if (const char* seconds = std::getenv("GPUBENCH_PROGRESS_SECONDS")) {
    seconds_between_lines_ = std::strtod(seconds, nullptr);
  }
}

bool ProgressReporter::ReportContext(const Context& context) {
  start_ = std::chrono::steady_clock::now();
  last_line_ = start_;
  return display_->ReportContext(context);
}

void ProgressReporter::ReportRuns(const std::vector<Run>& reports) {
  display_->ReportRuns(reports);
  for (const Run& run : reports) done_.insert(run.run_name.str());
  const auto now = std::chrono::steady_clock::now();
  if (!reports.empty() &&
      std::chrono::duration<double>(now - last_line_).count() >= seconds_between_lines_) {
    last_line_ = now;
    print_line(reports.back().run_name.str());
  }
}

void ProgressReporter::Finalize() {
  display_->Finalize();
  if (std::chrono::duration<double>(last_line_ - start_).count() > 0) print_line("done");
}

void ProgressReporter::print_line(const std::string& current) const {
  const auto elapsed_s = static_cast<long long>(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  std::fprintf(stderr, "gpubench: %zu/%zu benchmarks, %lld:%02lld elapsed, %s\n", done_.size(),
               total_, elapsed_s / 60, elapsed_s % 60, current.c_str());
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
