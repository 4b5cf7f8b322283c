#pragma once
// The runner every gpubench program shares: `bench` (the suite's sweep) and a user's program built
// against the installed package (include/gpubench/workload.hpp). It is Google Benchmark's main with
// every --benchmark_* flag, plus
//   --full            the full sweep (also GPUBENCH_FULL=1); bench only
//   --schema          print the output contract (counter keys, units, directions, label keys) as
//                     JSON and exit (harness/schema.hpp)
//   --list-all        list every benchmark name of the sweep, GPU families included even without
//                     a GPU, and exit (the name contract's test uses it)
//   --wait-idle=S     wait up to S seconds for other processes to leave the CPUs idle
//                     (benchmarks/run_conditions.hpp)
//   --all-counters    console rows with every counter and the label (progress_reporter.hpp)
// and a default --benchmark_min_time of 0.05 s per benchmark unless one is given, which keeps the
// default sweep inside its time budget. GPU benchmarks are registered only when a device is
// visible; otherwise one line on stderr says why they were skipped and the CPU benchmarks run.
// --help and the checks of run flags before anything runs are in benchmarks/command_line.hpp; the
// --benchmark_out file (written whole or not at all, its folder created) and stdout in
// benchmarks/output_file.hpp. SIGPIPE is ignored: a pipe closed by `| head` costs the console
// table, never the --benchmark_out file. SIGINT, SIGTERM, SIGHUP and the other stop signals keep
// the benchmarks that finished (benchmarks/interruption.hpp). Exit codes: 0 done, 1 output lost, 2
// bad command line, unusable --benchmark_out or no run, 128 + N stopped by signal N.

#include <functional>

#include "benchmarks/command_line.hpp"
#include "benchmarks/sweep.hpp"

namespace gpubench {

// Registers the program's rows for `sweep`: the CPU rows always, the GPU rows when `with_gpu` (a
// device is visible, or --list-all lists them all).
using RowRegistration = std::function<void(const Sweep& sweep, bool with_gpu)>;

// `program`: bench (Program::suite), or a user's program (Program::declared_workloads), whose
// --help names it and leaves out what only the suite's sweep has (benchmarks/command_line.hpp).
int run_benchmarks(int argc, char** argv, Program program, const RowRegistration& register_rows);

}  // namespace gpubench
