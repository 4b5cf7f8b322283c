#pragma once
// A run told to stop keeps what it measured.
//
// Decisions:
// - SIGINT (Ctrl-C), SIGTERM (`timeout`, a CI job's time limit, a scheduler), SIGHUP (a closed
//   terminal or SSH session), SIGXCPU (a CPU-time limit) and SIGUSR1/SIGUSR2 (a scheduler's
//   warning before its limit) stop the run; interruption.cpp says why each. The benchmark in
//   progress is abandoned, not finished: one row can take minutes (the largest-batch rows), longer
//   than a CI runner or `timeout -k` waits between SIGTERM and SIGKILL. What finished before the
//   signal is kept by the caller's `stop` (benchmarks/output_file.hpp writes it as a complete
//   document marked interrupted).
// - The handler only counts the signal and wakes a watcher thread (sem_post is async-signal-safe);
//   the file is written on that thread, since writing allocates and takes locks, which a handler
//   must not. The benchmark thread runs on meanwhile, and the watcher ends the process with _exit
//   once the file is written.
// - A second signal ends the process at once by the signal's default action, after removing the
//   temporary output file: the target is only ever replaced by a rename, so it is never left
//   half-written, whichever signal wins.
// - A signal the caller ignores (nohup's SIGHUP, SIGINT of a job a non-interactive shell started in
//   the background) stays ignored, as without these handlers.
// - The exit status is 128 + the signal's number, the shells' convention for a process a signal
//   ended (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP, 152 for SIGXCPU).

#include <functional>
#include <optional>
#include <string>

namespace gpubench {

// Installs the handlers. At the first stop signal, `stop(signal_number)` runs on a
// watcher thread, and the process then ends with exit status 128 + signal_number.
void stop_on_signal(std::function<void(int signal_number)> stop);

// From now on the first signal no longer abandons the run (its results are being published); a
// second still ends the process. Returns the signal received before or during this call, if any,
// for the exit status.
std::optional<int> stop_handling_signals();

// "SIGINT", "SIGTERM", ... for the stop signals, else "signal N".
std::string signal_name(int signal_number);

// The exit status of a run a signal stopped: 128 + its number.
constexpr int exit_status_after_signal(int signal_number) { return 128 + signal_number; }

}  // namespace gpubench
