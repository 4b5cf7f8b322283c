#pragma once
// The parts of one GPU iteration (docs/timing-method.md, "The overhead model"):
// T_wall = T_h2d + T_compute + T_d2h + T_overhead, in seconds per iteration. Filled by the timers,
// written by harness/result_row.hpp.

namespace gpubench {

enum class Phase { h2d, compute, d2h };

struct PhaseTimes {
  double h2d_s = 0;
  double compute_s = 0;
  double d2h_s = 0;
  double wall_s = 0;
  // Launch, API and synchronisation cost, and GPU idle time: what the events do not account for.
  double overhead_s() const { return wall_s - h2d_s - compute_s - d2h_s; }
  double& operator[](Phase phase) {
    return phase == Phase::h2d ? h2d_s : phase == Phase::compute ? compute_s : d2h_s;
  }
};

}  // namespace gpubench
