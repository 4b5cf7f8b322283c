#include "benchmarks/command_line.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <utility>

// The linked Google Benchmark's version, from CMake's find_package (benchmarks/CMakeLists.txt);
// 0.0 when its package does not say, which keeps to the forms every version parses.
#ifndef GPUBENCH_BENCHMARK_VERSION_MAJOR
#define GPUBENCH_BENCHMARK_VERSION_MAJOR 0
#define GPUBENCH_BENCHMARK_VERSION_MINOR 0
#endif
#ifndef GPUBENCH_BENCHMARK_VERSION
#define GPUBENCH_BENCHMARK_VERSION "unknown"
#endif

namespace gpubench {
namespace {

// Google Benchmark 1.8 made --benchmark_min_time take "<seconds>s" or "<iterations>x"; before it
// the flag is a plain number of seconds and anything else is an unrecognised flag.
constexpr bool kMinTimeTakesSuffixes = GPUBENCH_BENCHMARK_VERSION_MAJOR > 1 ||
                                       (GPUBENCH_BENCHMARK_VERSION_MAJOR == 1 &&
                                        GPUBENCH_BENCHMARK_VERSION_MINOR >= 8);
constexpr const char* kDefaultMinTimeSeconds = "0.05";

// Google Benchmark's own help text: PrintDefaultHelp writes it to `stdout`, which glibc lets a
// program point at another stream for the call.
std::string google_benchmark_help() {
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* capture = open_memstream(&buffer, &size);
  if (capture == nullptr) return "";
  std::fflush(stdout);
  FILE* const terminal = stdout;
  stdout = capture;
  benchmark::PrintDefaultHelp();
  stdout = terminal;
  std::fclose(capture);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

// Its usage line names "benchmark"; the program is `program_name` (`bench`, or a user's program),
// and the continuation lines are indented to line up under the first "[".
std::string renamed_usage(const std::string& help, const std::string& program_name) {
  const std::string library_name = "benchmark ";
  if (help.rfind(library_name, 0) != 0) return help;
  const std::string indent(library_name.size(), ' ');
  const std::string program_indent(program_name.size() + 1, ' ');
  std::istringstream lines(help.substr(library_name.size()));
  std::string renamed = program_name + " ";
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    if (!first && line.rfind(indent, 0) == 0) {
      renamed += program_indent;
      line.erase(0, indent.size());
    }
    renamed += line;
    renamed += '\n';
    first = false;
  }
  return renamed;
}

bool is_truthy(const std::string& value) {
  // Google Benchmark's rule for boolean flags: empty is true; one character is true unless it is
  // 0, f, F, n or N; longer values are true unless false, no or off.
  if (value.empty()) return true;
  if (value.size() == 1) {
    return std::isalnum(static_cast<unsigned char>(value[0])) != 0 &&
           std::strchr("0fFnN", value[0]) == nullptr;
  }
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower != "false" && lower != "no" && lower != "off";
}

// The longest time a time flag or variable may ask for: a day. Longer values are typing mistakes
// (1e308, an extra digit) that would otherwise run, or sleep, past any job's limit.
constexpr int kLongestRunFlagSeconds = 86400;

// The whole of `text` as a double, or nothing when it is empty or has trailing characters.
std::optional<double> parse_double(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return value;
}

// The whole of `text` as a count from 1 to `largest`, digits only.
std::optional<long long> parse_count(const std::string& text, long long largest) {
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  const long long value = std::stoll(text);
  if (value < 1 || value > largest) return std::nullopt;
  return value;
}

// --benchmark_min_time's value in the linked library's form, or an error message.
std::pair<std::string, std::string> normalised_min_time(const std::string& value) {
  const std::string flag = "--benchmark_min_time=" + value;
  const std::string accepted =
      kMinTimeTakesSuffixes
          ? "give a positive number of seconds (0.5 or 0.5s) or of iterations (100x)"
          : "give a positive number of seconds (0.5 or 0.5s)";
  if (!value.empty() && value.back() == 'x') {
    const auto iterations = parse_count(value.substr(0, value.size() - 1), 1LL << 62);
    if (!iterations) return {"", flag + " is not a valid time: " + accepted};
    if (!kMinTimeTakesSuffixes) {
      return {"", flag +
                      ": an iteration count needs Google Benchmark 1.8 or later and bench links " +
                      GPUBENCH_BENCHMARK_VERSION + "; " + accepted};
    }
    return {value, ""};
  }
  const std::string number =
      !value.empty() && value.back() == 's' ? value.substr(0, value.size() - 1) : value;
  const auto seconds = parse_double(number);
  if (!seconds || !std::isfinite(*seconds) || *seconds <= 0) {
    return {"", flag + " is not a valid time: " + accepted};
  }
  if (*seconds > kLongestRunFlagSeconds) {
    return {"", flag + " is not a valid time: at most " + std::to_string(kLongestRunFlagSeconds) +
                    " seconds (a day) per benchmark"};
  }
  return {kMinTimeTakesSuffixes ? number + "s" : number, ""};
}

std::optional<std::string> check_value(const std::string& name, std::string* value) {
  const std::string flag = "--" + name + "=" + *value;
  if (name == "benchmark_min_time") {
    auto [normalised, error] = normalised_min_time(*value);
    if (!error.empty()) return error;
    *value = normalised;
  } else if (name == "benchmark_min_warmup_time") {
    const auto seconds = parse_double(*value);
    if (!seconds || !std::isfinite(*seconds) || *seconds < 0 || *seconds > kLongestRunFlagSeconds) {
      return flag + " is not a valid time: give a number of seconds from 0 to " +
             std::to_string(kLongestRunFlagSeconds);
    }
  } else if (name == "benchmark_repetitions") {
    if (!parse_count(*value, 2147483647LL)) {
      return flag + " is not a valid count: give a whole number of repetitions, 1 or more";
    }
  } else if (name == "v") {
    // Google Benchmark's verbosity: it refuses what is not a 32-bit integer in two lines of its
    // own and takes any integer; a level beyond a few changes nothing.
    if (!parse_count(*value, 100) && *value != "0") {
      return flag + " is not a verbosity level: give a whole number from 0 to 100";
    }
  } else if (name == "benchmark_format" || name == "benchmark_out_format") {
    if (*value != "console" && *value != "json" && *value != "csv") {
      return flag + " is not a format: give console, json or csv";
    }
  }
  return std::nullopt;
}

// Whose help print_help() prints (choose_help).
Program help_program = Program::suite;
std::string help_program_name = "bench";

}  // namespace

void choose_help(Program program, const std::string& program_name) {
  help_program = program;
  help_program_name = program_name;
}

void print_help() {
  const bool suite = help_program == Program::suite;
  std::cout
      << renamed_usage(google_benchmark_help(), help_program_name) << "\ngpubench flags:\n"
      << (suite ? "  --full                     the full sweep: larger sizes, every shape (also "
                  "GPUBENCH_FULL=1)\n"
                : "")
      << "  --schema                   print the counter keys, units, directions and label "
         "keys as JSON\n"
         "  --list-all                 list every benchmark name, GPU ones included without "
         "a GPU\n"
         "  --wait-idle=SECONDS        wait up to SECONDS for other processes to leave the "
         "CPUs idle\n"
         "  --all-counters             console rows show every counter and the label (default: "
         "rates, times, errors)\n"
         "  --benchmark_out            written whole or not at all (a temporary file beside "
         "it, renamed); its folder is created; a signal keeps the benchmarks that finished\n"
         "  --benchmark_min_time       default "
      << kDefaultMinTimeSeconds << " s per benchmark; "
      << (kMinTimeTakesSuffixes ? "0.5, 0.5s (seconds) or 100x (iterations)"
                                : "0.5 or 0.5s (seconds)")
      << "\nenvironment:\n"
      << (suite ? "  GPUBENCH_FULL              1: the same as --full\n" : "")
      << "  GPUBENCH_PROGRESS_SECONDS  seconds between progress lines on stderr (10; 0: "
         "each benchmark)\n"
      << (suite ? "  GPUBENCH_CIFAR10_DIR       CIFAR-10's binary batches for the rows that train "
                  "on images (unset: synthetic)\n"
                  "  GPUBENCH_DATA_DIR          the folder with iris.csv and digits.csv (unset: "
                  "the source's data/)\n"
                : "")
      << "  GPUBENCH_CONDITIONS        off: record no per-row conditions (unset or on: "
         "record them)\n"
         "  GPUBENCH_CEILINGS          off: measure no memory bandwidths for the context (unset "
         "or on: measure them)\n"
         "  OPENBLAS_CORETYPE          OpenBLAS's kernels (unset: the program sets it if "
         "OpenBLAS picks generic)\n"
         "  CUDA_VISIBLE_DEVICES       the GPUs CUDA shows; empty hides them all, only CPU "
         "rows run\n"
         "exit codes: 0 done, "
      << kExitOutputLost << " output lost (--benchmark_out, or stdout closed or full), "
      << kExitUsage
      << " bad flag or value, unusable --benchmark_out, or no benchmark ran, 128+N stopped by "
         "signal N (SIGINT, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2: the benchmarks that "
         "finished "
         "are kept)\n"
         "Google Benchmark "
      << GPUBENCH_BENCHMARK_VERSION << "\n";
}

std::optional<std::string> flag_value(const std::vector<std::string>& arguments,
                                      const std::string& name) {
  const std::string prefix = "--" + name + "=";
  std::optional<std::string> value;
  for (std::size_t index = 1; index < arguments.size(); ++index) {
    if (arguments[index].rfind(prefix, 0) == 0) value = arguments[index].substr(prefix.size());
  }
  return value;
}

std::optional<std::string> check_environment() {
  if (const char* text = std::getenv("GPUBENCH_PROGRESS_SECONDS")) {
    const auto seconds = parse_double(text);
    if (!seconds || !std::isfinite(*seconds) || *seconds < 0 || *seconds > kLongestRunFlagSeconds) {
      return std::string("GPUBENCH_PROGRESS_SECONDS='") + text +
             "' is not a number of seconds from 0 to " + std::to_string(kLongestRunFlagSeconds);
    }
  }
  if (const char* text = std::getenv("GPUBENCH_FULL")) {
    if (std::strcmp(text, "") != 0 && std::strcmp(text, "0") != 0 && std::strcmp(text, "1") != 0) {
      return std::string("GPUBENCH_FULL='") + text + "' is neither 1 (the full sweep) nor 0";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_run_flags(std::vector<std::string>* arguments) {
  for (std::size_t index = 1; index < arguments->size(); ++index) {
    std::string& argument = (*arguments)[index];
    for (const char* name :
         {"benchmark_min_time", "benchmark_min_warmup_time", "benchmark_repetitions",
          "benchmark_format", "benchmark_out_format", "v"}) {
      const std::string prefix = std::string("--") + name + "=";
      if (argument.rfind(prefix, 0) != 0) continue;
      std::string value = argument.substr(prefix.size());
      if (auto error = check_value(name, &value)) return error;
      argument = prefix + value;
    }
  }
  return std::nullopt;
}

std::string default_min_time_argument() {
  return std::string("--benchmark_min_time=") + kDefaultMinTimeSeconds +
         (kMinTimeTakesSuffixes ? "s" : "");
}

bool flag_is_set(const std::vector<std::string>& arguments, const std::string& name) {
  const std::string bare = "--" + name;
  bool set = false;
  for (std::size_t index = 1; index < arguments.size(); ++index) {
    if (arguments[index] == bare) set = true;
    if (arguments[index].rfind(bare + "=", 0) == 0) {
      set = is_truthy(arguments[index].substr(bare.size() + 1));
    }
  }
  return set;
}

}  // namespace gpubench
