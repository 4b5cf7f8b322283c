#pragma once
// bench's side of the per-repetition conditions (harness/conditions.hpp): before the run, the
// GPUBENCH_CONDITIONS check and the bounded wait for an idle machine (--wait-idle=SECONDS); after
// it, one line on stderr saying how many rows were measured while disturbed, by what, and what to
// do about it.

#include <optional>
#include <string>

#include "harness/conditions.hpp"

namespace gpubench {

// The longest --wait-idle bench accepts, in seconds.
inline constexpr double kMaxWaitIdleSeconds = 3600;

// Takes --wait-idle=SECONDS out of argv and waits, at most that long, until other processes use
// less than DisturbanceRule::kMinOtherCores over one second; says on stderr how it ended. Returns
// the exit code to stop with (after printing why) for a bad value or a bad GPUBENCH_CONDITIONS,
// else nullopt.
std::optional<int> prepare_run_conditions(int* argc, char** argv);

// The end-of-run line (without the newline); empty when no row was measured.
std::string disturbance_line(const DisturbanceSummary& summary, bool conditions_recorded);

// Prints disturbance_line for this run's rows to stderr, if it is not empty.
void print_disturbance_line();

}  // namespace gpubench
