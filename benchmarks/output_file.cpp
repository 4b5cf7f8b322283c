#include "benchmarks/output_file.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <utility>

#include "benchmarks/command_line.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

std::string error_text(int error_number) { return std::strerror(error_number); }

// The temporary file of this run, for the exit handler below and a signal's
// (remove_temporary_output_file). A fixed buffer, since a signal handler may call only
// async-signal-safe functions (unlink).
char temporary_path[PATH_MAX] = "";

void remove_temporary_file() { remove_temporary_output_file(); }

// Keeps `path` to be removed if the process ends before it is published, also through
// Google Benchmark's std::exit on an error.
void guard_temporary_file(const std::string& path) {
  std::snprintf(temporary_path, sizeof temporary_path, "%s", path.c_str());
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::atexit(remove_temporary_file);
}

// Google Benchmark writes NaN and Infinity for such values, which strict JSON lacks. Outside
// strings they become numbers of the same length (0.0, 0.000000; a sign before them stays), so
// that the file's structure can be checked and a parse error's byte offset is the file's.
std::string with_non_finite_as_numbers(const std::string& text) {
  std::string result = text;
  bool in_string = false;
  for (std::size_t index = 0; index < result.size(); ++index) {
    const char c = result[index];
    if (in_string) {
      if (c == '\\') {
        ++index;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (result.compare(index, 3, "NaN") == 0) {
      result.replace(index, 3, "0.0");
      index += 2;
    } else if (result.compare(index, 8, "Infinity") == 0) {
      result.replace(index, 8, "0.000000");
      index += 7;
    }
  }
  return result;
}

// The cause when `json` is not a bench document: a "context" object and a "benchmarks" array of
// objects, each with a "name" string.
std::optional<std::string> structure_error(const nlohmann::json& json) {
  if (!json.is_object()) return "it is not a JSON object";
  if (!json.contains("context") || !json["context"].is_object()) {
    return "it has no \"context\" object";
  }
  if (!json.contains("benchmarks") || !json["benchmarks"].is_array()) {
    return "it has no \"benchmarks\" array";
  }
  const auto& rows = json["benchmarks"];
  for (std::size_t index = 0; index < rows.size(); ++index) {
    if (!rows[index].is_object() || !rows[index].contains("name") ||
        !rows[index]["name"].is_string()) {
      return "benchmarks[" + std::to_string(index) + "] has no \"name\" string";
    }
  }
  return std::nullopt;
}

// A reporter of Google Benchmark's that writes under the state's lock, records the benchmarks
// whose rows it wrote and, once the last row is written (or an interruption closes the document
// early), flushes the stream the library gave it and records whether any write failed (the
// stream's state is sticky).
template <class Reporter>
class FlushCheckingReporter final : public Reporter {
 public:
  template <class... Arguments>
  explicit FlushCheckingReporter(std::shared_ptr<FileReporterState> state, Arguments... arguments)
      : Reporter(arguments...), state_(std::move(state)) {}

  bool ReportContext(const benchmark::BenchmarkReporter::Context& context) override {
    const std::lock_guard<std::mutex> lock(state_->writing);
    if (state_->closed_early) return true;
    state_->context_written = true;
    return Reporter::ReportContext(context);
  }

  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    const std::lock_guard<std::mutex> lock(state_->writing);
    if (state_->closed_early) return;
    Reporter::ReportRuns(runs);
    for (const auto& run : runs) state_->benchmarks_written.insert(run.run_name.str());
    // The benchmark's last call: its aggregates, or its only repetition.
    if (!runs.empty() && (runs.back().run_type == benchmark::BenchmarkReporter::Run::RT_Aggregate ||
                          runs.front().repetitions <= 1)) {
      state_->rows_pending = false;
      state_->rows_written.notify_all();
    }
  }

  void Finalize() override {
    const std::lock_guard<std::mutex> lock(state_->writing);
    if (state_->closed_early) return;
    finalize_and_flush();
  }

  std::optional<std::size_t> close_early() {
    std::unique_lock<std::mutex> lock(state_->writing);
    // Writing rows takes microseconds; a benchmark whose repetitions are reported one at a time
    // (--benchmark_enable_random_interleaving) or without aggregates stays pending while the next
    // runs, so the wait is bounded.
    constexpr std::chrono::seconds kLongestWait{1};
    state_->rows_written.wait_for(lock, kLongestWait, [this] { return !state_->rows_pending; });
    if (!state_->context_written || state_->closed_early) return std::nullopt;
    finalize_and_flush();
    state_->closed_early = true;
    return state_->benchmarks_written.size();
  }

 private:
  void finalize_and_flush() {
    Reporter::Finalize();
    std::ostream& stream = this->GetOutputStream();
    stream.flush();
    if (stream.fail()) state_->write_failed = true;
  }

  std::shared_ptr<FileReporterState> state_;
};

// Makes the reporter of `checked` and its close_early.
template <class Reporter, class... Arguments>
void make_reporter(CheckedFileReporter* checked, Arguments... arguments) {
  auto reporter = std::make_unique<FlushCheckingReporter<Reporter>>(checked->state, arguments...);
  auto* raw = reporter.get();
  checked->close_early = [raw] { return raw->close_early(); };
  checked->reporter = std::move(reporter);
}

// The document's context with the interruption's keys added first, or nothing when `text` has no
// "context" object where a Google Benchmark JSON document has it.
std::optional<std::string> with_interruption(std::string text, const std::string& signal,
                                             std::size_t finished, std::size_t selected) {
  constexpr const char* kContextOpening = "\"context\": {";
  const auto at = text.find(kContextOpening);
  if (at == std::string::npos) return std::nullopt;
  const std::string keys = "\n    \"interrupted\": \"" + signal +
                           "\",\n    \"benchmarks_finished\": " + std::to_string(finished) +
                           ",\n    \"benchmarks_selected\": " + std::to_string(selected) + ",";
  text.insert(at + std::strlen(kContextOpening), keys);
  return text;
}

}  // namespace

CheckedFileReporter make_checked_file_reporter(const std::vector<std::string>& arguments) {
  // The reporter Google Benchmark makes for --benchmark_out when given none.
  CheckedFileReporter checked;
  const std::string format = flag_value(arguments, "benchmark_out_format").value_or("json");
  if (format == "csv") {
    // Deprecated by Google Benchmark, which still makes one for --benchmark_out_format=csv.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    make_reporter<benchmark::CSVReporter>(&checked);
#pragma GCC diagnostic pop
  } else if (format == "console") {
    const auto options = flag_is_set(arguments, "benchmark_counters_tabular")
                             ? benchmark::ConsoleReporter::OO_Tabular
                             : benchmark::ConsoleReporter::OO_None;
    make_reporter<benchmark::ConsoleReporter>(&checked, options);
  } else {
    make_reporter<benchmark::JSONReporter>(&checked);
  }
  return checked;
}

std::optional<std::string> check_output_file(const std::string& path, const std::string& format,
                                             bool write_failed) {
  if (write_failed) return "writing it failed (a full disk or a device error)";
  struct stat status {};
  if (stat(path.c_str(), &status) != 0) {
    return std::string("it is missing after the run: ") + error_text(errno);
  }
  // A device or a pipe (/dev/stdout) cannot be read back; its writes were checked above.
  if (!S_ISREG(status.st_mode)) return std::nullopt;
  if (status.st_size == 0) return "it is empty";
  if (format != "json") return std::nullopt;
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  const std::string size = std::to_string(text.size()) + " bytes";
  // nlohmann::json stops at a NUL byte as at the end of its input, so a complete document
  // followed by NUL bytes and another run's tail would otherwise pass.
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    return "it is not one JSON document: byte " + std::to_string(nul) + " of " + size +
           " is a NUL byte (another run writing the same file?)";
  }
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(with_non_finite_as_numbers(text));
  } catch (const nlohmann::json::parse_error& error) {
    if (error.byte > text.size()) {
      return "it is not valid JSON: the document is cut off at byte " + std::to_string(text.size());
    }
    if (std::string(error.what()).find("expected end of input") != std::string::npos) {
      return "it is not one JSON document: a complete document is followed by other bytes at "
             "byte " +
             std::to_string(error.byte - 1) + " of " + size + " (another run writing it?)";
    }
    return "it is not valid JSON: a syntax error at byte " + std::to_string(error.byte - 1) +
           " of " + size;
  }
  return structure_error(json);
}

OutputFile::~OutputFile() {
  if (descriptor_ >= 0) close(descriptor_);
  if (write_path_ != target_) remove_temporary_file();
}

std::optional<std::string> OutputFile::open(const std::string& path) {
  std::error_code error;
  fs::path target = path;
  // Through a symbolic link the file it names is replaced, and the link stays.
  if (fs::is_symlink(target, error) && fs::exists(target, error)) {
    target = fs::canonical(target, error);
    if (error) return "cannot resolve the symbolic link: " + error.message();
  }
  target_ = target.string();
  if (!target.has_filename()) return "it names a folder (it ends with /); give a file name";
  struct stat status {};
  const bool exists = stat(target_.c_str(), &status) == 0;
  if (exists && S_ISDIR(status.st_mode)) return "it is a folder; give a file name";
  if (exists && !S_ISREG(status.st_mode)) {
    write_path_ = target_;  // a device or a pipe: written in place
    return std::nullopt;
  }
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(folder, error);
  if (error) return "cannot create the folder '" + folder.string() + "': " + error.message();

  std::string pattern = (folder / ("." + target.filename().string() + ".XXXXXX")).string();
  descriptor_ = mkstemp(pattern.data());
  if (descriptor_ < 0) {
    return "cannot create a file in the folder '" + folder.string() + "': " + error_text(errno);
  }
  write_path_ = pattern;
  guard_temporary_file(write_path_);
  // mkstemp makes the file private (0600); the result gets the target's permissions, or those
  // of a new file under the umask.
  mode_t mode = 0;
  if (exists) {
    mode = status.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  fchmod(descriptor_, mode);
  return std::nullopt;
}

std::optional<std::string> OutputFile::publish(const std::string& format, bool write_failed) {
  if (write_path_ == target_) return check_output_file(target_, format, write_failed);
  if (auto cause = check_output_file(write_path_, format, write_failed)) return cause;
  if (fsync(descriptor_) != 0) return "syncing it to disk failed: " + error_text(errno);
  close(descriptor_);
  descriptor_ = -1;
  if (std::rename(write_path_.c_str(), target_.c_str()) != 0) {
    return "renaming the finished file '" + write_path_ + "' over it failed: " + error_text(errno);
  }
  temporary_path[0] = '\0';
  write_path_ = target_;
  // The rename itself reaches the disk with the folder's entry; a failure here loses nothing
  // that a crash of the machine would not, so it is not an error.
  const fs::path folder =
      fs::path(target_).has_parent_path() ? fs::path(target_).parent_path() : fs::path(".");
  const int folder_descriptor = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (folder_descriptor >= 0) {
    fsync(folder_descriptor);
    close(folder_descriptor);
  }
  return std::nullopt;
}

std::variant<std::size_t, std::string> OutputFile::publish_interrupted(
    const std::string& format, const CheckedFileReporter& reporter,
    const Interrupted& interrupted) {
  // The process ends with _exit after this (benchmarks/interruption.hpp): no destructor and no
  // exit handler removes a temporary file that was not published, so this does.
  struct RemoveUnpublished {
    RemoveUnpublished() = default;
    RemoveUnpublished(const RemoveUnpublished&) = delete;
    RemoveUnpublished& operator=(const RemoveUnpublished&) = delete;
    RemoveUnpublished(RemoveUnpublished&&) = delete;
    RemoveUnpublished& operator=(RemoveUnpublished&&) = delete;
    ~RemoveUnpublished() { remove_temporary_output_file(); }  // a no-op once published
  } remove_unpublished;
  const auto finished = reporter.close_early();
  if (!finished) return std::string("no benchmark had finished");
  if (format == "json" && !in_place()) {
    std::ifstream written(write_path_, std::ios::binary);
    std::stringstream buffer;
    buffer << written.rdbuf();
    const auto marked = with_interruption(buffer.str(), interrupted.signal, *finished,
                                          interrupted.benchmarks_selected);
    if (!marked) return std::string("the file has no \"context\" object to mark as interrupted");
    std::ofstream rewritten(write_path_, std::ios::binary | std::ios::trunc);
    rewritten << *marked;
    rewritten.flush();
    if (rewritten.fail()) return "rewriting it failed: " + error_text(errno);
  }
  if (auto cause = publish(format, reporter.state->write_failed)) return *cause;
  return *finished;
}

void remove_temporary_output_file() noexcept {
  if (temporary_path[0] == '\0') return;
  unlink(temporary_path);
  temporary_path[0] = '\0';
}

std::optional<std::string> stdout_write_error() {
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int cause = errno;  // as the failing write left it: callers reset errno before writing
  if (flushed && std::ferror(stdout) == 0 && !std::cout.fail()) return std::nullopt;
  if (cause == EPIPE) return "stdout was closed (" + error_text(cause) + ")";
  if (cause != 0) return "writing to stdout failed (" + error_text(cause) + ")";
  return "writing to stdout failed";
}

}  // namespace gpubench
