#include "benchmarks/interruption.hpp"

#include <semaphore.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <thread>
#include <utility>

#include "benchmarks/output_file.hpp"

namespace gpubench {
namespace {

// Every signal whose default action ends the process quietly and that a person, a shell or a
// scheduler sends to stop a job: SIGINT (Ctrl-C), SIGTERM (timeout, CI job limits, Slurm, PBS,
// Kubernetes, docker stop), SIGHUP (a closed terminal), SIGXCPU (the soft limit of `ulimit -t`;
// the hard limit's SIGKILL follows), SIGUSR1 and SIGUSR2 (Slurm's --signal, LSF's warning action).
// SIGQUIT (Ctrl-\) keeps its core dump: asking for one is its purpose.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGXCPU, SIGUSR1, SIGUSR2};

// Shared with the handler: a lock-free atomic and the semaphore. 0: no signal yet.
std::atomic<int> first_signal{0};
sem_t wake_watcher;

// The watcher's side, behind a mutex: whether a signal still abandons the run, and how.
std::mutex watcher_mutex;
bool abandon_run = true;
std::function<void(int)> stop_run;

extern "C" void on_stop_signal(int signal_number) {
  int none = 0;
  if (first_signal.compare_exchange_strong(none, signal_number)) {
    sem_post(&wake_watcher);
    return;
  }
  // The second signal: at once, by the default action (unlink, sigaction and raise are
  // async-signal-safe).
  remove_temporary_output_file();
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal_number, &fallback, nullptr);
  raise(signal_number);
}

void watch() {
  while (sem_wait(&wake_watcher) != 0 && errno == EINTR) {
  }
  const int signal_number = first_signal.load();
  const std::lock_guard<std::mutex> lock(watcher_mutex);
  if (!abandon_run) return;  // the run has finished; main says how it ended
  stop_run(signal_number);
  _exit(exit_status_after_signal(signal_number));
}

}  // namespace

void stop_on_signal(std::function<void(int signal_number)> stop) {
  {
    const std::lock_guard<std::mutex> lock(watcher_mutex);
    stop_run = std::move(stop);
  }
  sem_init(&wake_watcher, 0, 0);
  std::thread(watch).detach();
  for (const int signal_number : kStopSignals) {
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, nullptr);
  }
}

std::optional<int> stop_handling_signals() {
  const std::lock_guard<std::mutex> lock(watcher_mutex);
  abandon_run = false;
  const int signal_number = first_signal.load();
  if (signal_number == 0) return std::nullopt;
  return signal_number;
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

}  // namespace gpubench
