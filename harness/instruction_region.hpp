#pragma once
// Measurement policy: instructions instead of time, for the deterministic lane of the regression
// gate (docs/regression-gate.md, "Instruction lane"). Under Valgrind's callgrind, started with
// --collect-atstart=no, an InstructionRegion turns event collection on around a timed loop only,
// then dumps the counts of that loop with the row's name and the loop's iteration count, so the
// gate reads the instructions of exactly the code a row times, without the process's start-up,
// the fixture's set-up or its validation. The lane runs bench as
//   valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no bench ...
// (tools/gpubench_tools/instructions/lane.py).
//
// Decisions:
// - Callgrind's client requests (valgrind/callgrind.h) are a short sequence of instructions that
//   does nothing on a real CPU, and the region asks RUNNING_ON_VALGRIND once when it opens: outside
//   Valgrind a region costs a handful of instructions before and after the loop and nothing in it,
//   so the rows bench writes are the same with or without it.
// - Instrumentation is switched on when the region opens and off when it ends
//   (CALLGRIND_START/STOP_INSTRUMENTATION), so with callgrind's --instr-atstart=no the process's
//   start-up and each fixture's set-up and validation run at the uninstrumented emulator's speed,
//   several times faster (the lane's cost is mostly that). Inside, collection is toggled
//   (CALLGRIND_TOGGLE_COLLECT) around untimed work, because switching instrumentation discards
//   Valgrind's translations, which a pause in every iteration would pay each time. Collection is
//   per thread in callgrind: only the calling thread's instructions are counted, which is why the
//   gate reads single-threaded rows only.
// - The counts since the region opened are dumped at finish() as "gpubench-region iterations=N
//   name=ROW" (a dump's "desc: Trigger:" line), one dump per call of the fixture: Google Benchmark
//   calls it several times while it picks the iteration count, and each call's dump is counted
//   separately (tools/gpubench_tools/instructions reads them).
// - Where the row's code knows how many threads do its work (the public API's CPU rows:
//   benchmarks/workload_rows.cpp), the name is followed by ";threads=T": the gate counts a row of
//   one thread whatever its name says, so a user's rows, whose names have no threads part, are
//   counted like the suite's "threads:1" rows. No name has a '=', so the suffix is unambiguous; a
//   dump without it is judged by its name.
// - Without the header (a machine without Valgrind's package) the region compiles to nothing;
//   CMake defines GPUBENCH_HAS_CALLGRIND when it finds valgrind/callgrind.h.

#include <cstdint>
#include <string>
#include <utility>

#if GPUBENCH_HAS_CALLGRIND
#include <valgrind/callgrind.h>
#endif

namespace gpubench {

// The row the regions of the calling thread report: the row registration sets it around each call
// of a fixture (harness/result_row.hpp), so the timers need not know which row they time; a fixture
// that knows how many threads run the row's work sets it again with that count.
class InstructionRegionLabel {
 public:
  struct Row {
    std::string name;
    long long threads = 0;  // threads that do the row's work; 0: not known here
  };

  explicit InstructionRegionLabel(std::string name, long long threads = 0)
      : previous_(std::move(current())) {
    current() = Row{std::move(name), threads};
  }
  ~InstructionRegionLabel() { current() = std::move(previous_); }
  InstructionRegionLabel(const InstructionRegionLabel&) = delete;
  InstructionRegionLabel& operator=(const InstructionRegionLabel&) = delete;
  InstructionRegionLabel(InstructionRegionLabel&&) = delete;
  InstructionRegionLabel& operator=(InstructionRegionLabel&&) = delete;

  static Row& current() {
    thread_local Row row;
    return row;
  }

  // What a region's dump says (the header's decisions): "gpubench-region iterations=N name=ROW",
  // and ";threads=T" after the name where the thread count is known.
  static std::string description(std::int64_t iterations) {
    const Row& row = current();
    std::string text =
        "gpubench-region iterations=" + std::to_string(iterations) + " name=" + row.name;
    if (row.threads > 0) text += ";threads=" + std::to_string(row.threads);
    return text;
  }

 private:
  Row previous_;
};

// One timed loop's instructions: construct just before the loop, finish() just after it; pause()
// and resume() around untimed work inside it.
class InstructionRegion {
 public:
  InstructionRegion() : counting_(running_on_valgrind()) {
#if GPUBENCH_HAS_CALLGRIND
    if (counting_) {
      CALLGRIND_START_INSTRUMENTATION;
      CALLGRIND_ZERO_STATS;
      CALLGRIND_TOGGLE_COLLECT;
    }
#endif
  }
  ~InstructionRegion() {
    // A loop left by an exception: its counts are not a row's, so they are dropped.
#if GPUBENCH_HAS_CALLGRIND
    if (counting_) {
      if (collecting_) CALLGRIND_TOGGLE_COLLECT;
      CALLGRIND_ZERO_STATS;
      CALLGRIND_STOP_INSTRUMENTATION;
    }
#endif
  }
  InstructionRegion(const InstructionRegion&) = delete;
  InstructionRegion& operator=(const InstructionRegion&) = delete;
  InstructionRegion(InstructionRegion&&) = delete;
  InstructionRegion& operator=(InstructionRegion&&) = delete;

  void pause() { toggle(false); }
  void resume() { toggle(true); }

  // Ends the region over `iterations` iterations of the loop and dumps its counts.
  void finish(std::int64_t iterations) {
    toggle(false);
#if GPUBENCH_HAS_CALLGRIND
    if (counting_) {
      const std::string label = InstructionRegionLabel::description(iterations);
      CALLGRIND_DUMP_STATS_AT(label.c_str());
      CALLGRIND_STOP_INSTRUMENTATION;
    }
#else
    (void)iterations;
#endif
    counting_ = false;
  }

  // Whether this process runs under Valgrind (any tool) with the client requests compiled in.
  static bool running_on_valgrind() {
#if GPUBENCH_HAS_CALLGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
  }

 private:
  void toggle(bool on) {
#if GPUBENCH_HAS_CALLGRIND
    if (counting_ && collecting_ != on) {
      CALLGRIND_TOGGLE_COLLECT;
      collecting_ = on;
    }
#else
    (void)on;
#endif
  }

  bool counting_;
  bool collecting_ = true;
};

}  // namespace gpubench
