// benchmarks/runner.hpp says what the runner does.
#include "benchmarks/runner.hpp"

#include <benchmark/benchmark.h>

#include <regex.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "benchmarks/command_line.hpp"
#include "benchmarks/interruption.hpp"
#include "benchmarks/output_file.hpp"
#include "benchmarks/progress_reporter.hpp"
#include "benchmarks/run_conditions.hpp"
#include "benchmarks/workload_rows.hpp"
#include "harness/conditions.hpp"
#include "harness/context.hpp"
#include "harness/gpu_info.hpp"
#include "harness/openblas_core.hpp"
#include "harness/schema.hpp"

namespace {

// Removes `flag` from argv if present; true if it was there.
bool take_flag(int* argc, char** argv, const char* flag) {
  for (int index = 1; index < *argc; ++index) {
    if (std::strcmp(argv[index], flag) != 0) continue;
    for (int rest = index; rest + 1 < *argc; ++rest) argv[rest] = argv[rest + 1];
    --*argc;
    return true;
  }
  return false;
}

// Whether everything written to stdout (the console table, a listing) reached it; if not, says so
// on stderr unless `already_said`.
bool stdout_complete(bool already_said = false) {
  const auto error = gpubench::stdout_write_error();
  if (error && !already_said) {
    std::cerr << "gpubench: " << *error << "; the console output is incomplete\n";
  }
  return !error;
}

// What a signal's stop keeps: the --benchmark_out file closed after the benchmarks that finished
// (none without one), said on stderr. Runs on the watcher thread (benchmarks/interruption.hpp).
void keep_finished_benchmarks(int signal_number, const std::string& out_path,
                              gpubench::OutputFile* out_file,
                              const gpubench::CheckedFileReporter& file_reporter,
                              const std::string& format, std::size_t selected) {
  const std::string signal = gpubench::signal_name(signal_number);
  std::string said = "gpubench: interrupted by " + signal + "; ";
  if (out_path.empty()) {
    said += "the benchmarks that finished are above";
  } else {
    const auto kept = out_file->publish_interrupted(format, file_reporter, {signal, selected});
    if (const auto* finished = std::get_if<std::size_t>(&kept)) {
      said += "--benchmark_out=" + out_path + " holds the " + std::to_string(*finished) + " of " +
              std::to_string(selected) + " benchmarks that finished, marked interrupted";
    } else {
      said += "--benchmark_out=" + out_path + " not written: " + std::get<std::string>(kept);
    }
  }
  said +=
      "; exit status " + std::to_string(gpubench::exit_status_after_signal(signal_number)) + "\n";
  std::fputs(said.c_str(), stderr);
}

// The name a user's program was started by, for its --help's usage line.
std::string program_name(const char* argv0) {
  const std::string path = argv0 != nullptr ? argv0 : "";
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Replaces every --benchmark_out=... in `arguments` by `replacement` (none when empty).
void replace_out_flag(std::vector<std::string>* arguments, const std::string& replacement) {
  std::vector<std::string> kept;
  for (std::string& argument : *arguments) {
    if (argument.rfind("--benchmark_out=", 0) != 0) kept.push_back(std::move(argument));
  }
  if (!replacement.empty()) kept.push_back("--benchmark_out=" + replacement);
  *arguments = std::move(kept);
}

}  // namespace

namespace gpubench {

int run_benchmarks(int argc, char** argv, Program program, const RowRegistration& register_rows) {
  // A closed stdout (`bench ... | head`) must not kill the run before --benchmark_out is written:
  // the failed write shows in the stream's state instead (benchmarks/output_file.hpp).
  std::signal(SIGPIPE, SIG_IGN);
  // A workload declared through the public API that could not be added: said, nothing run.
  for (const std::string& error : gpubench::start_up_errors()) {
    std::cerr << "gpubench: " << error << "; nothing was run\n";
  }
  if (!gpubench::start_up_errors().empty()) return gpubench::kExitUsage;
  // A mis-detected CPU would make OpenBLAS run SSE3 kernels (harness/openblas_core.hpp). The kernel
  // set is fixed when the library loads, so set OPENBLAS_CORETYPE and restart once.
  if (const auto coretype = gpubench::better_openblas_coretype()) {
    std::cerr << "gpubench: OpenBLAS chose its generic kernels for this CPU; restarting with "
                 "OPENBLAS_CORETYPE="
              << *coretype << " (set OPENBLAS_CORETYPE yourself to choose)\n";
    setenv("OPENBLAS_CORETYPE", coretype->c_str(), 1);
    execv("/proc/self/exe", argv);
    std::cerr << "gpubench: restart failed; measuring with OpenBLAS's own choice\n";
  }
  if (take_flag(&argc, argv, "--schema")) {
    errno = 0;
    std::cout << gpubench::schema_json() << "\n";
    return stdout_complete() ? 0 : gpubench::kExitOutputLost;
  }
  if (const auto stop = gpubench::prepare_run_conditions(&argc, argv)) return *stop;
  const bool list_all = take_flag(&argc, argv, "--list-all");
  const bool all_counters = take_flag(&argc, argv, "--all-counters");
  // A program's declared points are its whole sweep: --full is an unknown flag there, and
  // GPUBENCH_FULL is not read.
  const bool full = program == Program::suite && gpubench::take_full_sweep_flag(&argc, argv);
  gpubench::choose_help(program, program == Program::suite ? "bench" : program_name(argv[0]));

  std::vector<std::string> arguments(argv, argv + argc);
  if (const auto error = gpubench::check_run_flags(&arguments)) {
    std::cerr << "gpubench: " << *error << "\n";
    return gpubench::kExitUsage;
  }
  if (const auto error = gpubench::check_environment()) {
    std::cerr << "gpubench: " << *error << "\n";
    return gpubench::kExitUsage;
  }
  if (const auto error = gpubench::ceilings_setting_error()) {
    std::cerr << "gpubench: " << *error << "\n";
    return gpubench::kExitUsage;
  }
  if (!gpubench::flag_value(arguments, "benchmark_min_time")) {
    arguments.push_back(gpubench::default_min_time_argument());
  }
  const bool listing = list_all || gpubench::flag_is_set(arguments, "benchmark_list_tests");
  if (list_all) arguments.emplace_back("--benchmark_list_tests=true");
  // Google Benchmark writes --benchmark_out into the file it is given, truncating it first (a
  // listing too, which leaves it empty): it gets a temporary file beside the target instead.
  const std::string out_path = gpubench::flag_value(arguments, "benchmark_out").value_or("");
  gpubench::OutputFile out_file;
  if (listing) {
    replace_out_flag(&arguments, "");  // a listing writes no results: the file stays as it is
  } else if (!out_path.empty()) {
    if (const auto cause = out_file.open(out_path)) {
      std::cerr << "gpubench: --benchmark_out=" << out_path << ": " << *cause
                << "; nothing was run\n";
      return gpubench::kExitUsage;
    }
    replace_out_flag(&arguments, out_file.write_path());
  }
  std::vector<char*> pointers;
  pointers.reserve(arguments.size() + 1);
  for (std::string& argument : arguments) pointers.push_back(argument.data());
  int argument_count = static_cast<int>(pointers.size());
  pointers.push_back(nullptr);

  benchmark::Initialize(&argument_count, pointers.data(), gpubench::print_help);
  if (benchmark::ReportUnrecognizedArguments(argument_count, pointers.data())) {
    return gpubench::kExitUsage;
  }

  gpubench::add_custom_context(full ? "full" : "default");
  if (!listing) {  // seconds of probes a listing does not need
    gpubench::add_ceiling_context();
    gpubench::add_energy_period_context();
  }
  const gpubench::Sweep sweep = gpubench::make_sweep(full);
  const bool has_gpu = gpubench::gpu_info().has_value();
  register_rows(sweep, has_gpu || list_all);
  if (!has_gpu && !list_all) {
    std::cerr << "gpubench: GPU benchmarks skipped: " << gpubench::gpu_unavailable_reason() << "\n";
  }

  // The console, progress on stderr and a closed stdout are the ProgressReporter's
  // (benchmarks/progress_reporter.hpp); a listing has none of them.
  const std::string filter = gpubench::flag_value(arguments, "benchmark_filter").value_or("");
  const std::string out_format =
      gpubench::flag_value(arguments, "benchmark_out_format").value_or("json");
  gpubench::CheckedFileReporter file_reporter;
  std::size_t ran = 0;
  bool stdout_failure_said = false;
  if (listing) {
    errno = 0;
    ran = benchmark::RunSpecifiedBenchmarks();
  } else {
    const std::size_t selected = gpubench::count_selected(gpubench::registered_names(), filter);
    gpubench::ProgressReporter progress(
        selected,
        all_counters ? gpubench::ConsoleCounters::all : gpubench::ConsoleCounters::measured,
        out_path);
    if (!out_path.empty()) {
      file_reporter = gpubench::make_checked_file_reporter(arguments);
      progress.show_rows_before(file_reporter.state);
    }
    gpubench::stop_on_signal([&](int signal_number) {
      keep_finished_benchmarks(signal_number, out_path, &out_file, file_reporter, out_format,
                               selected);
    });
    ran = file_reporter.reporter
              ? benchmark::RunSpecifiedBenchmarks(&progress, file_reporter.reporter.get())
              : benchmark::RunSpecifiedBenchmarks(&progress);
    stdout_failure_said = progress.stdout_failed();
  }
  // A signal from here on finds every benchmark finished: the file is published whole, and the
  // exit status still says the run was told to stop.
  const auto late_signal = gpubench::stop_handling_signals();
  benchmark::Shutdown();
  if (!listing) gpubench::print_disturbance_line();  // how many rows were disturbed, by what
  if (ran == 0) {
    // Google Benchmark compiles the filter as a POSIX extended regular expression.
    regex_t compiled;
    if (regcomp(&compiled, filter.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
      std::cerr << "gpubench: --benchmark_filter='" << filter
                << "' is not a valid regular expression\n";
      return gpubench::kExitUsage;
    }
    regfree(&compiled);
    std::cerr << "gpubench: no benchmark matches --benchmark_filter='" << filter << "'"
              << (has_gpu ? "" : " (GPU benchmarks are not available in this run)")
              << "; list the names with --benchmark_list_tests\n";
    return gpubench::kExitUsage;
  }
  // Google Benchmark writes --benchmark_out through an ofstream and never checks it.
  if (file_reporter.reporter) {
    if (const auto cause = out_file.publish(out_format, file_reporter.state->write_failed)) {
      std::cerr << "gpubench: --benchmark_out=" << out_path << ": " << *cause
                << (out_file.in_place() ? "; the results are lost or incomplete\n"
                                        : "; the results are lost, a file already there is "
                                          "left as it was\n");
      return gpubench::kExitOutputLost;
    }
  }
  if (!stdout_complete(stdout_failure_said)) return gpubench::kExitOutputLost;
  if (late_signal) return gpubench::exit_status_after_signal(*late_signal);
  return 0;
}

}  // namespace gpubench
