#include "harness/result_row.hpp"

#include <string>
#include <utility>

#include "harness/conditions.hpp"
#include "harness/image_dataset.hpp"

namespace gpubench {

NameParameter number_parameter(const char* name, long long value, std::optional<Counter> counter) {
  return {name, std::to_string(value), counter, static_cast<double>(value), std::nullopt};
}

NameParameter text_parameter(const char* name, std::string value, LabelKey label) {
  return {name, std::move(value), std::nullopt, 0.0, label};
}

namespace {
std::vector<std::string>& names() {
  static std::vector<std::string> registered;
  return registered;
}

std::optional<std::string>& lost_context_message() {
  static std::optional<std::string> message;
  return message;
}
}  // namespace

const std::optional<std::string>& lost_gpu_context() { return lost_context_message(); }

void mark_gpu_context_lost(const std::string& row_name, const std::string& error) {
  if (lost_context_message()) return;  // the first row that lost it is the one to name
  lost_context_message() = "not run: the CUDA context was lost in " + row_name + " (" + error +
                           "), and no later GPU work of this process can run; run this row in a "
                           "new process (--benchmark_filter)";
}

const std::vector<std::string>& registered_names() { return names(); }
void add_registered_name(std::string name) { names().push_back(std::move(name)); }

std::string RowId::name() const {
  std::string text = name_stem.empty() ? workload + "/" + backend + "/" + variant : name_stem;
  for (const NameParameter& parameter : parameters) {
    text += "/" + parameter.name + ":" + parameter.text;
  }
  return text;
}

ResultRow::ResultRow(benchmark::State& state, const RowId& id) : state_(state), id_(id) {
  for (const NameParameter& parameter : id_.parameters) {
    if (parameter.counter) set(*parameter.counter, parameter.value);
  }
  // The conditions of the timed loop that just ended (harness/conditions.hpp); none for a row
  // written without one (a skip).
  if (const auto conditions = take_repetition_conditions()) {
    const auto set_if = [&](Counter counter, const auto& value) {
      if (value) set(counter, static_cast<double>(*value));
    };
    set_if(Counter::cpu_other_cores, conditions->cpu_other_cores);
    set_if(Counter::cpu_wait_cores, conditions->cpu_wait_cores);
    set_if(Counter::cpu_steal_cores, conditions->cpu_steal_cores);
    set_if(Counter::cpu_cur_clock_hz, conditions->cpu_clock_hz);
    set_if(Counter::gpu_sm_clock_min_hz, conditions->gpu_sm_clock_min_hz);
    set_if(Counter::gpu_sm_clock_max_hz, conditions->gpu_sm_clock_max_hz);
    set_if(Counter::gpu_clock_event_reasons, conditions->gpu_clock_event_reasons);
    set_if(Counter::gpu_temperature_max_c, conditions->gpu_temperature_max_c);
    set_if(Counter::gpu_power_mean_w, conditions->gpu_power_mean_w);
    set_if(Counter::gpu_energy_j, conditions->gpu_energy_per_iteration_j);
    if (conditions->gpu_energy_too_short) set(Counter::gpu_energy_too_short, 1.0);
    set_if(Counter::cpu_energy_j, conditions->cpu_energy_per_iteration_j);
    const unsigned by = disturbed_by(*conditions, proc_stat_tick_s(), allowed_cpu_count());
    set(Counter::disturbed, by != 0 ? 1.0 : 0.0);
    set(Counter::disturbed_by, static_cast<double>(by));
    disturbance_tally().record(id_.name(), static_cast<std::int64_t>(state_.iterations()),
                               *conditions, by);
  }
}

ResultRow& ResultRow::set(Counter counter, double value) {
  state_.counters[std::string(counter_spec(counter).key)] = value;
  return *this;
}

ResultRow& ResultRow::label(LabelKey key, std::string value) {
  extra_labels_.emplace_back(key, std::move(value));
  return *this;
}

ResultRow& ResultRow::phases(const PhaseTimes& times) {
  set(Counter::t_h2d, times.h2d_s);
  set(Counter::t_compute, times.compute_s);
  set(Counter::t_d2h, times.d2h_s);
  set(Counter::t_wall, times.wall_s);
  return set(Counter::t_overhead, times.overhead_s());
}

ResultRow& ResultRow::work(double flop_per_iteration, double seconds_per_iteration,
                           double peak_flops) {
  set(Counter::flop, flop_per_iteration);
  if (seconds_per_iteration <= 0) return *this;
  const double rate = flop_per_iteration / seconds_per_iteration;
  set(Counter::flop_per_s, rate);
  if (peak_flops > 0) set(Counter::pct_peak, 100.0 * rate / peak_flops);
  return *this;
}

ResultRow& ResultRow::work(double flop_per_iteration, double bytes_per_iteration,
                           double seconds_per_iteration, double peak_flops) {
  work(flop_per_iteration, seconds_per_iteration, peak_flops);
  if (!(bytes_per_iteration > 0)) return *this;
  set(Counter::bytes_moved, bytes_per_iteration);
  if (flop_per_iteration > 0) {
    set(Counter::arithmetic_intensity, flop_per_iteration / bytes_per_iteration);
  }
  return *this;
}

ResultRow& ResultRow::training(const TrainingResult& result) {
  const double steps = result.steps;
  const double per_step_s = result.seconds_per_iteration / steps;
  const double samples_per_s = result.batch * steps / result.seconds_per_iteration;
  // The same keys for the same quantity on every training row, so a reader never branches per
  // workload; the older per-workload names stay beside them, so files written before still
  // compare with new ones.
  set(Counter::t_step, per_step_s);
  set(Counter::steps, steps);
  set(Counter::samples_per_s, samples_per_s);
  if (result.step_counters == TrainingResult::StepCounters::epochs) {
    set(Counter::t_epoch, per_step_s);
    set(Counter::epochs, steps);
  } else if (result.step_counters == TrainingResult::StepCounters::cifar10_images) {
    set(Counter::images_per_s, samples_per_s);
    // Steps of this batch size in one pass over CIFAR-10's training set, times one step.
    set(Counter::t_epoch_cifar,
        per_step_s * static_cast<double>(kCifar10TrainImages) / result.batch);
  }
  if (result.kernels_per_step) {
    // `kernels` is per iteration like every counter; an iteration trains `steps` steps.
    set(Counter::kernels, *result.kernels_per_step * steps);
    set(Counter::kernels_per_step, *result.kernels_per_step);
  }
  set(Counter::readbacks, result.readbacks);
  set(Counter::bytes_h2d, result.bytes_h2d);
  set(Counter::final_loss, result.final_loss);
  if (result.test_accuracy) set(Counter::test_accuracy, *result.test_accuracy);
  if (result.loss_scaling) {
    set(Counter::loss_scale, result.loss_scaling->scale);
    set(Counter::skipped_steps, static_cast<double>(result.loss_scaling->skipped_steps));
  }
  return *this;
}

ResultRow& ResultRow::device_memory(std::size_t model_bytes, std::size_t peak_bytes) {
  set(Counter::device_bytes_model, static_cast<double>(model_bytes));
  return set(Counter::device_bytes_peak, static_cast<double>(peak_bytes));
}

ResultRow& ResultRow::operation_times(const std::map<std::string, double>& seconds_per_step) {
  for (const auto& [operation, seconds] : seconds_per_step) {
    state_.counters[std::string(kOperationTimePrefix) + operation] = seconds;
  }
  return *this;
}

ResultRow& ResultRow::operation_work(const std::map<std::string, OperationWork>& work_per_step,
                                     const std::map<std::string, double>& seconds_per_step) {
  for (const auto& [operation, work] : work_per_step) {
    if (seconds_per_step.count(operation) == 0) continue;
    state_.counters[std::string(kOperationFlopPrefix) + operation] = work.flop;
    state_.counters[std::string(kOperationBytesPrefix) + operation] = work.bytes;
  }
  return *this;
}

ResultRow& ResultRow::axis(const std::string& name, double value) {
  state_.counters[std::string(kAxisPrefix) + name] = value;
  return *this;
}

void ResultRow::publish() {
  std::string text =
      "workload=" + id_.workload + " backend=" + id_.backend + " variant=" + id_.variant;
  for (const NameParameter& parameter : id_.parameters) {
    if (parameter.label)
      text += " " + std::string(label_key(*parameter.label)) + "=" + parameter.text;
  }
  for (const auto& [key, value] : extra_labels_) {
    text += " " + std::string(label_key(key)) + "=" + value;
  }
  state_.SetLabel(text);
}

}  // namespace gpubench
