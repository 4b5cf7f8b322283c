#pragma once
// The parts of `bench`'s command line that Google Benchmark leaves unchecked: its --help (usage
// naming `bench`, then gpubench's own flags and environment variables), run flags it would accept
// and then run forever or abort on (a non-finite or non-positive --benchmark_min_time, a
// non-positive --benchmark_repetitions), and the --benchmark_out file, which it writes through an
// ofstream whose errors it ignores.

#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpubench {

// Exit codes of `bench` besides 0.
constexpr int kExitOutputLost = 1;  // --benchmark_out or stdout was not written completely
constexpr int kExitUsage = 2;       // a bad flag or value, or no benchmark ran

// Google Benchmark's --help with the usage line naming `bench`, followed by gpubench's flags,
// defaults, environment variables and exit codes, one line each. Google Benchmark calls it (the
// third argument of benchmark::Initialize) for --help and for an unknown --benchmark_format.
void print_help();

// The value of the last `--<name>=<value>` in `arguments` (Google Benchmark keeps the last one).
std::optional<std::string> flag_value(const std::vector<std::string>& arguments,
                                      const std::string& name);

// Whether the boolean flag `--<name>` is set, by Google Benchmark's rules: the last occurrence
// wins; bare, or with a value other than false, no, off, 0, f or n, it is true.
bool flag_is_set(const std::vector<std::string>& arguments, const std::string& name);

// Checks --benchmark_min_time, --benchmark_min_warmup_time, --benchmark_repetitions and the two
// format flags before anything runs, and rewrites --benchmark_min_time into the form the linked
// Google Benchmark parses (before 1.8 it takes plain seconds only, so "0.5s" becomes "0.5").
// Returns a one-line message naming the flag and what is wrong, or nothing when all are valid.
std::optional<std::string> check_run_flags(std::vector<std::string>* arguments);

// The --benchmark_min_time argument bench adds when none is given: 0.05 s per benchmark.
std::string default_min_time_argument();

// The reporter Google Benchmark would make for --benchmark_out (by --benchmark_out_format), which
// after the run flushes the file and records whether the stream failed (a full disk, /dev/full).
struct CheckedFileReporter {
  std::unique_ptr<benchmark::BenchmarkReporter> reporter;
  std::shared_ptr<bool> write_failed = std::make_shared<bool>(false);
};
CheckedFileReporter make_checked_file_reporter(const std::vector<std::string>& arguments);

// Checks the --benchmark_out file after the run: it exists, is not empty and, in JSON format,
// parses with a "benchmarks" array. Files that cannot be read back (a device, a pipe) are checked
// only through `write_failed`. Returns the cause, or nothing when the file is complete.
std::optional<std::string> check_output_file(const std::string& path, const std::string& format,
                                             bool write_failed);

}  // namespace gpubench
