#pragma once
// The one owner of what a benchmark writes: its name, its label and its counters.
//
// A RowId (workload, backend, variant and the ordered name parameters) yields the benchmark name
// `<workload>/<backend>/<variant>/<param>:<value>/...` (docs/names-and-counters.md, "Reading
// names") and the label `workload=W backend=B variant=V <key>=<value>...`, which tools read instead
// of parsing names. Numeric parameters are also written as counters, string parameters as label
// pairs. Counters are set by enumerator (harness/schema.hpp), never by a string key; the writers
// for phase times, work rates and training results below are the only places those groups are
// computed.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/conditions.hpp"
#include "harness/gpu_info.hpp"
#include "harness/instruction_region.hpp"
#include "harness/phase_times.hpp"
#include "harness/schema.hpp"
#include "kernels/common/loss_scaler.hpp"

namespace gpubench {

// One `name:value` segment of a benchmark name.
struct NameParameter {
  std::string name;
  std::string text;                // as it appears in the name
  std::optional<Counter> counter;  // numeric: also written as this counter
  double value = 0;                // the counter's value
  std::optional<LabelKey> label;   // string: also written as this label pair
};

// A numeric parameter, written as counter `counter` too (none: name only).
NameParameter number_parameter(const char* name, long long value, std::optional<Counter> counter);
// A string parameter, written as label pair `label` too.
NameParameter text_parameter(const char* name, std::string value, LabelKey label);

struct RowId {
  RowId(std::string workload_name, std::string backend_name, std::string variant_name,
        std::vector<NameParameter> name_parameters = {})
      : workload(std::move(workload_name)),
        backend(std::move(backend_name)),
        variant(std::move(variant_name)),
        parameters(std::move(name_parameters)) {}

  std::string
      workload;         // the first name segment: a training workload's name, matmul, overhead, ...
  std::string backend;  // cpu or gpu
  std::string variant;  // openblas, cublas_kernel, eager, graph, launch_burst, h2d, ...
  std::vector<NameParameter> parameters;
  // The name's leading segments when they are not workload/backend/variant: the overhead probes
  // are named by what they probe ("overhead/h2d/pinned"), and are GPU rows all the same.
  std::string name_stem;

  RowId with(NameParameter parameter) const {
    RowId copy = *this;
    copy.parameters.push_back(std::move(parameter));
    return copy;
  }
  // The benchmark name, without Google Benchmark's "/manual_time" suffix.
  std::string name() const;
};

// What one training iteration did, for the training counters.
struct TrainingResult {
  // The counters a workload's rows write beside t_step, steps and samples_per_s, under the names
  // its older files used: `epochs` for a workload whose step trains one whole batch of its data
  // (t_epoch and epochs repeat t_step and steps), `cifar10_images` for one that trains on
  // CIFAR-10-shaped images (images_per_s, and t_epoch_cifar: the time of one pass over CIFAR-10's
  // training images at this batch). A new workload needs neither.
  enum class StepCounters { none, epochs, cifar10_images };
  StepCounters step_counters = StepCounters::none;
  int steps = 0;  // SGD steps per iteration
  int batch = 0;  // rows (images) per step
  double seconds_per_iteration = 0;
  std::optional<double> kernels_per_step;  // GPU rows
  double readbacks = 0;                    // loss copies to the host per iteration
  double bytes_h2d = 0;                    // input bytes copied per iteration
  double final_loss = 0;
  std::optional<double> test_accuracy;  // where the data have a test split
  // fp16 rows: the loss scale after the last timed iteration (loss_scale, skipped_steps).
  std::optional<LossScaleState> loss_scaling;
};

class ResultRow {
 public:
  // Writes the parameters' counters; the label is written by publish().
  ResultRow(benchmark::State& state, const RowId& id);

  ResultRow& set(Counter counter, double value);
  ResultRow& label(LabelKey key, std::string value);
  // t_h2d, t_compute, t_d2h, t_wall and t_overhead.
  ResultRow& phases(const PhaseTimes& times);
  // flop, FLOP/s and pct_peak from the work of one iteration and its measured seconds. FLOP/s is
  // computed here rather than with Counter::kIsRate, which divides by the main thread's CPU time:
  // wrong for GPU work and for multi-threaded OpenBLAS.
  ResultRow& work(double flop_per_iteration, double seconds_per_iteration, double peak_flops);
  // The same, and the work's memory traffic: bytes_moved (bytes per iteration by the workload's
  // minimum-traffic model) and arithmetic_intensity = flop / bytes_moved, each where it is
  // positive. Which roof binds is the tools' to decide, from these and the context's ceilings.
  ResultRow& work(double flop_per_iteration, double bytes_per_iteration,
                  double seconds_per_iteration, double peak_flops);
  // t_step, steps and samples_per_s on every row (and the counters of result.step_counters),
  // kernels, readbacks, input bytes, final loss and test accuracy.
  ResultRow& training(const TrainingResult& result);
  // device_bytes_model, the device bytes the row's own buffers need by their shapes, and
  // device_bytes_peak, what a DeviceMemoryMeter measured while the row ran
  // (harness/device_memory.hpp: meter.peak_bytes()); always together, so a reader can compare them.
  ResultRow& device_memory(std::size_t model_bytes, std::size_t peak_bytes);
  // t_op:<operation> for each operation of a profiled step (seconds per step).
  ResultRow& operation_times(const std::map<std::string, double>& seconds_per_step);
  // flop_op:<operation> and bytes_op:<operation> per step, for the operations of `work_per_step`
  // that `seconds_per_step` times (the model's other operations are not the trainer's; a timed
  // entry the model lacks, the GPU's launch_gaps, has no work).
  struct OperationWork {
    double flop = 0;
    double bytes = 0;
  };
  ResultRow& operation_work(const std::map<std::string, OperationWork>& work_per_step,
                            const std::map<std::string, double>& seconds_per_step);
  // axis:<name> = value: a workload's numeric axis that has no counter of its own (kAxisPrefix).
  ResultRow& axis(const std::string& name, double value);
  // Sets the label: workload, backend, variant, the string parameters, then label() pairs.
  void publish();

 private:
  benchmark::State& state_;
  RowId id_;
  std::vector<std::pair<LabelKey, std::string>> extra_labels_;
};

// Registers `fixture(state, id, arguments...)` under id.name(). Any exception it throws (a CUDA
// error with file:line, a failed allocation, a bad configuration) becomes that benchmark's
// SkipWithError message, so the run goes on. Conditions a previous call's timer left behind
// (harness/conditions.hpp) are dropped first, so a row only ever carries its own. Manual time: the
// fixture's timer reports each iteration's time (events or the host clock); Google Benchmark then
// appends "/manual_time".
enum class IterationTime { benchmark_clock, manual };

// A GPU row (backend "gpu") whose fixture threw may have left a sticky error in the CUDA context
// (sticky_cuda_error, harness/gpu_info.hpp): a faulted kernel. Every later CUDA call of the process
// then fails with it, so every later GPU row would fail too, each naming whichever call it reached
// first. Once that happens, register_row skips every later GPU row with one message naming the
// row that lost the context and the error; the CPU rows still run.
// The message the later GPU rows are skipped with, once the context is lost.
const std::optional<std::string>& lost_gpu_context();
// Records that `row_name` left the context unusable with `error` (a test may call it directly).
void mark_gpu_context_lost(const std::string& row_name, const std::string& error);

// Every name register_row registered, as Google Benchmark filters it (with "/repeats:N" and
// "/manual_time"), in registration order: the progress line's total.
const std::vector<std::string>& registered_names();
void add_registered_name(std::string name);

// How a row is timed and repeated. repetitions > 0 fixes Google Benchmark's repetition count for
// the row, whatever --benchmark_repetitions says: each repetition is one row in the JSON (plus
// Google Benchmark's mean, median, stddev and cv aggregates), and the report takes the median and
// the slowest decile over them, which needs about ten. Google Benchmark then names the row
// ".../repeats:N". 0 leaves it to the command line.
// iterations > 0 fixes the iterations of the timed loop, so Google Benchmark calls the fixture once
// per repetition instead of again with more iterations until --benchmark_min_time is reached: for
// rows whose setup is the measurement's main cost and must not be repeated (the largest-batch
// rows fill the device's memory). Google Benchmark then names the row ".../iterations:N".
struct RowTiming {
  IterationTime time = IterationTime::benchmark_clock;
  int repetitions = 0;
  int iterations = 0;
};
template <typename Fixture, typename... Arguments>
void register_row(const RowId& id, RowTiming timing, Fixture fixture, Arguments... arguments) {
  auto* benchmark = benchmark::RegisterBenchmark(
      id.name().c_str(), [id, fixture, arguments...](benchmark::State& state) {
        forget_repetition_conditions();
        // The name the timers' instruction regions report (harness/instruction_region.hpp); only
        // built under Valgrind, where it is read.
        const InstructionRegionLabel label(
            InstructionRegion::running_on_valgrind() ? id.name() : std::string());
        const bool gpu_row = id.backend == "gpu";
        if (gpu_row && lost_gpu_context()) {
          state.SkipWithError(lost_gpu_context()->c_str());
          return;
        }
        try {
          fixture(state, id, arguments...);
        } catch (const std::exception& error) {
          state.SkipWithError(error.what());
          if (!gpu_row) return;
          if (const auto sticky = sticky_cuda_error()) mark_gpu_context_lost(id.name(), *sticky);
        }
      });
  benchmark->Unit(benchmark::kMicrosecond);
  if (timing.time == IterationTime::manual) benchmark->UseManualTime();
  if (timing.iterations > 0) benchmark->Iterations(timing.iterations);
  if (timing.repetitions > 0) benchmark->Repetitions(timing.repetitions);
  // In Google Benchmark's order of the suffixes.
  add_registered_name(
      id.name() +
      (timing.iterations > 0 ? "/iterations:" + std::to_string(timing.iterations) : "") +
      (timing.repetitions > 0 ? "/repeats:" + std::to_string(timing.repetitions) : "") +
      (timing.time == IterationTime::manual ? "/manual_time" : ""));
}
template <typename Fixture, typename... Arguments>
void register_row(const RowId& id, IterationTime time, Fixture fixture, Arguments... arguments) {
  register_row(id, RowTiming{time, 0}, fixture, arguments...);
}

}  // namespace gpubench
