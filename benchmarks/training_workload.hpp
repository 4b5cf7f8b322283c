#pragma once
// A training workload's declaration: everything the generic benchmarks layer (main.cpp,
// largest_batch.cpp) knows of it. A workload is a folder and a declaration: kernels/<name>/ holds
// its spec and its CPU and CUDA compute; benchmarks/<name>_*.cpp hold its cases, its fixtures and
// the function <name>_training_workload() that returns this declaration. Its name in
// GPUBENCH_TRAINING_WORKLOADS (benchmarks/CMakeLists.txt) adds its files to `bench` and its
// declaration to training_workloads(); nothing else in the generic layers names it.

#include <string>
#include <vector>

#include "benchmarks/largest_batch.hpp"
#include "benchmarks/sweep.hpp"

namespace gpubench {

struct TrainingWorkload {
  // The first segment of its rows' names, and the `net` of its largest-batch rows.
  std::string name;
  // Registers its CPU rows: its own cases at sweep.full, at the sweep's thread counts.
  void (*register_cpu_rows)(const Sweep& sweep) = nullptr;
  // Registers its GPU rows (nullptr: none, or a build without CUDA).
  void (*register_gpu_rows)(const Sweep& sweep) = nullptr;
  // Its largest-batch rows, trainers included (nullptr: none, or a build without CUDA).
  std::vector<LargestBatchRow> (*largest_batch_rows)(const Sweep& sweep) = nullptr;
};

// Every training workload of this build, in the order of GPUBENCH_TRAINING_WORKLOADS, which is the
// order their rows are registered and listed in (defined in the generated
// training_workloads.cpp, from benchmarks/training_workloads.cpp.in).
const std::vector<const TrainingWorkload*>& training_workloads();

}  // namespace gpubench
