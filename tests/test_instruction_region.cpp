// The instruction regions of the timers (harness/instruction_region.hpp) outside Valgrind: they
// must do nothing, so bench's rows are the same with them as without. (Under Valgrind they are
// tested end to end by tests/tools/test_instruction_lane.py.)

#include "harness/instruction_region.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpubench {
namespace {

TEST(InstructionRegion, NotUnderValgrindWhenRunNatively) {
  // CTest runs this natively; a run under valgrind (any tool) would say otherwise.
  EXPECT_FALSE(InstructionRegion::running_on_valgrind());
}

TEST(InstructionRegion, OpensPausesAndFinishesWithoutEffectNatively) {
  volatile int work = 0;
  {
    InstructionRegion region;
    for (int i = 0; i < 10; ++i) {
      region.pause();
      region.resume();
      work = work + i;
    }
    region.finish(10);
    region.finish(10);  // a second finish is harmless
  }
  { InstructionRegion left_by_an_exception; }
  EXPECT_EQ(work, 45);
}

TEST(InstructionRegionLabel, NamesTheRowAndRestoresTheOuterName) {
  EXPECT_EQ(InstructionRegionLabel::current(), "");
  {
    const InstructionRegionLabel outer("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1");
    {
      const InstructionRegionLabel inner("mlp/cpu/small/data:iris");
      EXPECT_EQ(InstructionRegionLabel::current(), "mlp/cpu/small/data:iris");
    }
    EXPECT_EQ(InstructionRegionLabel::current(),
              "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1");
  }
  EXPECT_EQ(InstructionRegionLabel::current(), "");
}

}  // namespace
}  // namespace gpubench
