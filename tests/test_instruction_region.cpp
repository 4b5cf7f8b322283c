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
  EXPECT_EQ(InstructionRegionLabel::current().name, "");
  {
    const InstructionRegionLabel outer("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1");
    {
      const InstructionRegionLabel inner("saxpy/cpu/loop/n:1024", 1);
      EXPECT_EQ(InstructionRegionLabel::current().name, "saxpy/cpu/loop/n:1024");
      EXPECT_EQ(InstructionRegionLabel::current().threads, 1);
    }
    EXPECT_EQ(InstructionRegionLabel::current().name,
              "matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1");
    EXPECT_EQ(InstructionRegionLabel::current().threads, 0);
  }
  EXPECT_EQ(InstructionRegionLabel::current().name, "");
}

// The dump's text, which tools/gpubench_tools/instructions reads (dumps.py's TRIGGER, counts.py's
// thread suffix): the name alone where the thread count is not known, ";threads=T" after it where
// it is.
TEST(InstructionRegionLabel, DescribesTheRegionWithItsThreadsWhereKnown) {
  {
    const InstructionRegionLabel row("matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/threads:1");
    EXPECT_EQ(InstructionRegionLabel::description(3),
              "gpubench-region iterations=3 name=matmul/cpu/openblas/dtype:fp32/m:64/n:64/k:64/"
              "threads:1");
  }
  {
    const InstructionRegionLabel row("saxpy/cpu/loop/n:1024", 1);
    EXPECT_EQ(InstructionRegionLabel::description(1),
              "gpubench-region iterations=1 name=saxpy/cpu/loop/n:1024;threads=1");
  }
  const InstructionRegionLabel four("softmax/cpu/loop/rows:64/threads:4", 4);
  EXPECT_EQ(InstructionRegionLabel::description(12),
            "gpubench-region iterations=12 name=softmax/cpu/loop/rows:64/threads:4;threads=4");
}

}  // namespace
}  // namespace gpubench
