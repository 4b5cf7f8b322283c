#pragma once
// bench's --benchmark_out file and its stdout, which Google Benchmark writes through streams whose
// errors it ignores.
//
// Decisions:
// - The file is written whole or not at all: Google Benchmark writes into a temporary file beside
//   the target (same folder, so the rename stays on one file system), which after the run is read
//   back, synced to disk and renamed over the target. Two runs writing the same file leave one of
//   the two complete documents, never one spliced into the other; a run that fails or is
//   interrupted leaves the file that was there before.
// - The target's folder is created (parents included) before anything runs, so that a bad path
//   costs no sweep.
// - A run a signal stops (benchmarks/interruption.hpp) keeps the benchmarks whose rows were
//   written: the document is closed after the last of them (the one in progress is left out) and
//   its context gains "interrupted" (the signal's name), "benchmarks_finished" and
//   "benchmarks_selected", so that a reader knows it is cut off and by how much. A lock shared
//   with the file reporter keeps the close from landing inside a row being written.
// - A target that exists and is not a regular file (/dev/stdout, /dev/null, a pipe) cannot be
//   renamed over: it is written in place and judged by its stream's state only.
// - The read-back accepts exactly one JSON document with a "context" object and a "benchmarks"
//   array of named rows, and nothing after it but white space.

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace gpubench {

// What the file reporter shares with bench: whether a write failed, the benchmarks whose rows are
// written, and the lock held while it writes.
struct FileReporterState {
  std::mutex writing;
  bool write_failed = false;
  bool context_written = false;
  bool closed_early = false;  // closed by an interruption: rows that come later are dropped
  std::set<std::string> benchmarks_written;
  // Google Benchmark hands a benchmark's rows to the display first, then to the file, in one or
  // two calls each (repetitions, then aggregates). From the display's first call to the file's
  // last, the rows are shown but not yet written: an interruption waits for them, so that every
  // benchmark the console showed as finished is in the file, whole.
  bool rows_pending = false;
  std::condition_variable rows_written;
  void rows_shown() {
    const std::lock_guard<std::mutex> lock(writing);
    rows_pending = true;
  }
};

// The reporter Google Benchmark would make for --benchmark_out (by --benchmark_out_format), which
// after the run flushes the file and records whether the stream failed (a full disk, /dev/full).
struct CheckedFileReporter {
  std::unique_ptr<benchmark::BenchmarkReporter> reporter;
  std::shared_ptr<FileReporterState> state = std::make_shared<FileReporterState>();
  // Closes the document after the rows written so far, from any thread; later rows are dropped.
  // Returns how many benchmarks it holds, or nothing when not even the context was written.
  std::function<std::optional<std::size_t>()> close_early;
};
CheckedFileReporter make_checked_file_reporter(const std::vector<std::string>& arguments);

// Checks a written output file: it exists, is not empty and, in JSON format, is exactly one
// document (Google Benchmark's NaN and Infinity literals allowed) with a "context" object and a
// "benchmarks" array whose rows are objects with a "name" string, followed by nothing but white
// space. Files that cannot be read back (a device, a pipe) are checked only through
// `write_failed`. Returns the cause, or nothing when the file is complete.
std::optional<std::string> check_output_file(const std::string& path, const std::string& format,
                                             bool write_failed);

// The --benchmark_out target of one run.
class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&&) = delete;  // one owner removes the temporary file
  OutputFile& operator=(OutputFile&&) = delete;
  // Removes the temporary file unless it was published.
  ~OutputFile();

  // Creates the folder of `path` (parents included) and the temporary file beside it. Returns the
  // cause when either cannot be made, or when `path` is a folder.
  std::optional<std::string> open(const std::string& path);

  // The file to hand Google Benchmark as --benchmark_out: the temporary file, or the target
  // itself when that is a device or a pipe.
  const std::string& write_path() const { return write_path_; }

  // Whether Google Benchmark writes the target itself (a device or a pipe).
  bool in_place() const { return write_path_ == target_; }

  // After the run: checks the written file (check_output_file), syncs it to disk and renames it
  // over the target. Returns the cause when the results did not arrive whole; the temporary file
  // is then removed and the target is left as it was.
  std::optional<std::string> publish(const std::string& format, bool write_failed);

  // For a run a signal stopped: closes the reporter's document early, adds the interruption to a
  // JSON file's context and publishes it. Returns the benchmarks it holds, or the cause when the
  // rows could not be kept (the temporary file is then removed).
  struct Interrupted {
    std::string signal;  // "SIGTERM"
    std::size_t benchmarks_selected = 0;
  };
  std::variant<std::size_t, std::string> publish_interrupted(const std::string& format,
                                                             const CheckedFileReporter& reporter,
                                                             const Interrupted& interrupted);

 private:
  std::string target_;      // the user's path, through a symbolic link to the file it names
  std::string write_path_;  // the temporary file, or target_ when written in place
  int descriptor_ = -1;     // the temporary file's, kept to sync it
};

// Removes this run's temporary output file, if any; async-signal-safe (an unlink), for the
// handler of a second signal (benchmarks/interruption.hpp).
void remove_temporary_output_file() noexcept;

// Flushes std::cout and stdout. Returns what went wrong ("stdout was closed (Broken pipe)",
// "writing to stdout failed (No space left on device)") when anything written to stdout so far
// did not arrive, or nothing. bench ignores SIGPIPE, so a closed pipe shows here.
std::optional<std::string> stdout_write_error();

}  // namespace gpubench
