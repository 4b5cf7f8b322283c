#pragma once
// What the mixed-precision GPU trainers' loss-scaling tests share: stepping a trainer one step at a
// time, telling a host LossScaler each step's outcome, and comparing the device's state with it.

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "kernels/common/loss_scaler.hpp"

namespace gpubench::testing {

// Runs steps `first_step` to `last_step` (1-based, for the messages) one at a time; a step that
// left the weights exactly as they were was skipped. Feeds each outcome to `host` and returns how
// many steps were applied. Trainer: step_and_read_loss(), parameters().
template <typename Trainer>
int step_and_follow_on_host(Trainer& trainer, LossScaler& host, int first_step, int last_step) {
  std::vector<float> before = trainer.parameters();
  int applied = 0;
  for (int step = first_step; step <= last_step; ++step) {
    trainer.step_and_read_loss();
    const std::vector<float> after = trainer.parameters();
    const bool skipped = after == before;
    host.update(skipped);
    applied += skipped ? 0 : 1;
    before = after;
  }
  return applied;
}

// The device's loss-scale state equals the host scaler's: scale, skips, clean steps in a row.
inline void expect_state_equals_host(const std::optional<LossScaleState>& state,
                                     const LossScaler& host) {
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->skipped_steps, host.skipped_steps());
  EXPECT_EQ(state->scale, host.scale());
  EXPECT_EQ(state->clean_steps_in_a_row, host.clean_steps_in_a_row());
  EXPECT_EQ(state->steps, host.steps());
}

}  // namespace gpubench::testing
