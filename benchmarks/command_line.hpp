#pragma once
// The parts of `bench`'s command line that Google Benchmark leaves unchecked: its --help (usage
// naming `bench`, then gpubench's own flags and environment variables), run flags it would accept
// and then run forever or abort on (a non-finite or non-positive --benchmark_min_time, a
// non-positive --benchmark_repetitions). The --benchmark_out file and stdout are
// benchmarks/output_file.hpp's.

#include <benchmark/benchmark.h>

#include <optional>
#include <string>
#include <vector>

namespace gpubench {

// Exit codes of `bench` besides 0.
constexpr int kExitOutputLost = 1;  // --benchmark_out or stdout was not written completely
constexpr int kExitUsage =
    2;  // a bad flag or value, an unusable --benchmark_out, or no benchmark ran

// Which program runs: the suite's `bench` (its default and full sweeps, its data folders), or a
// program built against the installed package, whose declared points are its whole sweep (no
// --full, no data folders).
enum class Program { suite, declared_workloads };

// Google Benchmark's --help with the usage line naming the program, followed by gpubench's flags,
// defaults, environment variables and exit codes, one line each: those of the program
// choose_help() named (bench's until then). Google Benchmark calls it (the third argument of
// benchmark::Initialize) for --help and for an unknown --benchmark_format.
void choose_help(Program program, const std::string& program_name);
void print_help();

// The value of the last `--<name>=<value>` in `arguments` (Google Benchmark keeps the last one).
std::optional<std::string> flag_value(const std::vector<std::string>& arguments,
                                      const std::string& name);

// Whether the boolean flag `--<name>` is set, by Google Benchmark's rules: the last occurrence
// wins; bare, or with a value other than false, no, off, 0, f or n, it is true.
bool flag_is_set(const std::vector<std::string>& arguments, const std::string& name);

// Checks --benchmark_min_time, --benchmark_min_warmup_time, --benchmark_repetitions, --v and the
// two format flags before anything runs, and rewrites --benchmark_min_time into the form the linked
// Google Benchmark parses (before 1.8 it takes plain seconds only, so "0.5s" becomes "0.5").
// Returns a one-line message naming the flag and what is wrong, or nothing when all are valid.
std::optional<std::string> check_run_flags(std::vector<std::string>* arguments);

// Checks the variables bench reads as numbers or switches (GPUBENCH_PROGRESS_SECONDS: seconds
// from 0 to a day; GPUBENCH_FULL: 0 or 1) before anything runs. Returns a one-line message naming
// the variable, its value and what it takes, or nothing when all are valid or unset.
std::optional<std::string> check_environment();

// The --benchmark_min_time argument bench adds when none is given: 0.05 s per benchmark.
std::string default_min_time_argument();

}  // namespace gpubench
