#include "harness/schema.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace gpubench {

namespace {

constexpr int kSchemaVersion = 1;

constexpr Direction kSmaller = Direction::smaller;
constexpr Direction kBigger = Direction::bigger;
constexpr Direction kNone = Direction::none;

// In enumerator order (checked by the static_assert below and at start-up by counter_spec).
constexpr std::array kCounters = {
    CounterSpec{Counter::m, "m", "count", kNone},
    CounterSpec{Counter::n, "n", "count", kNone},
    CounterSpec{Counter::k, "k", "count", kNone},
    CounterSpec{Counter::batch, "batch", "count", kNone},
    CounterSpec{Counter::hidden, "hidden", "count", kNone},
    CounterSpec{Counter::hidden_layers, "hidden_layers", "count", kNone},
    CounterSpec{Counter::readback, "readback", "count", kNone},
    CounterSpec{Counter::epochs, "epochs", "count", kNone},
    CounterSpec{Counter::steps, "steps", "count", kNone},
    CounterSpec{Counter::blas_threads, "blas_threads", "count", kNone},
    // PyTorch's intra-op thread count in the reference rows (tools/reference/).
    CounterSpec{Counter::torch_threads, "torch_threads", "count", kNone},
    CounterSpec{Counter::pinned, "pinned", "count", kNone},
    CounterSpec{Counter::bytes, "bytes", "B", kNone},
    CounterSpec{Counter::flop, "flop", "flop", kNone},
    // The work's memory traffic per iteration by the workload's minimum-traffic model (each
    // operand read once, each output written once, per operation: docs/workloads.md), and flop
    // over it. `bytes` is a size parameter (a copy's or an allocation's), not traffic.
    CounterSpec{Counter::bytes_moved, "bytes_moved", "B", kNone},
    CounterSpec{Counter::arithmetic_intensity, "arithmetic_intensity", "flop/B", kNone},
    CounterSpec{Counter::flop_per_s, "FLOP/s", "flop/s", kBigger},
    CounterSpec{Counter::pct_peak, "pct_peak", "%", kBigger},
    CounterSpec{Counter::bytes_per_s, "bytes_per_s", "B/s", kBigger},
    CounterSpec{Counter::samples_per_s, "samples_per_s", "1/s", kBigger},
    CounterSpec{Counter::images_per_s, "images_per_s", "1/s", kBigger},
    CounterSpec{Counter::bytes_h2d, "bytes_h2d", "B", kNone},
    CounterSpec{Counter::bytes_d2h, "bytes_d2h", "B", kNone},
    CounterSpec{Counter::copies_h2d, "copies_h2d", "count", kNone},
    CounterSpec{Counter::copies_d2h, "copies_d2h", "count", kNone},
    CounterSpec{Counter::t_h2d, "t_h2d", "s", kSmaller},
    CounterSpec{Counter::t_compute, "t_compute", "s", kSmaller},
    CounterSpec{Counter::t_d2h, "t_d2h", "s", kSmaller},
    CounterSpec{Counter::t_wall, "t_wall", "s", kSmaller},
    CounterSpec{Counter::t_overhead, "t_overhead", "s", kSmaller},
    CounterSpec{Counter::t_epoch, "t_epoch", "s", kSmaller},
    CounterSpec{Counter::t_step, "t_step", "s", kSmaller},
    CounterSpec{Counter::t_epoch_cifar, "t_epoch_cifar", "s", kSmaller},
    CounterSpec{Counter::t_issue_per_launch, "t_issue_per_launch", "s", kSmaller},
    CounterSpec{Counter::t_per_launch, "t_per_launch", "s", kSmaller},
    CounterSpec{Counter::t_per_node, "t_per_node", "s", kSmaller},
    CounterSpec{Counter::t_event_record, "t_event_record", "s", kSmaller},
    CounterSpec{Counter::t_sync, "t_sync", "s", kSmaller},
    CounterSpec{Counter::kernels, "kernels", "count", kNone},
    CounterSpec{Counter::kernels_per_step, "kernels_per_step", "count", kNone},
    CounterSpec{Counter::readbacks, "readbacks", "count", kNone},
    CounterSpec{Counter::graph_steps, "graph_steps", "count", kNone},
    CounterSpec{Counter::threads_per_block, "threads_per_block", "count", kNone},
    CounterSpec{Counter::device_bytes, "device_bytes", "B", kNone},
    CounterSpec{Counter::device_bytes_peak, "device_bytes_peak", "B", kNone},
    CounterSpec{Counter::device_bytes_model, "device_bytes_model", "B", kNone},
    // Free device memory when a largest-batch row started, and the batch its model says fits.
    CounterSpec{Counter::device_bytes_free, "device_bytes_free", "B", kNone},
    CounterSpec{Counter::batch_largest, "batch_largest", "count", kNone},
    CounterSpec{Counter::shared_bytes, "shared_bytes", "B", kNone},
    CounterSpec{Counter::loss_scale, "loss_scale", "count", kNone},
    CounterSpec{Counter::skipped_steps, "skipped_steps", "count", kSmaller},
    CounterSpec{Counter::final_loss, "final_loss", "1", kSmaller},
    CounterSpec{Counter::test_accuracy, "test_accuracy", "1", kBigger},
    CounterSpec{Counter::max_error_over_bound, "max_error_over_bound", "1", kSmaller},
    // Conditions describe the run, not the work: no direction, except the energy the work took.
    CounterSpec{Counter::cpu_other_cores, "cpu_other_cores", "cores", kNone},
    CounterSpec{Counter::cpu_wait_cores, "cpu_wait_cores", "cores", kNone},
    CounterSpec{Counter::cpu_steal_cores, "cpu_steal_cores", "cores", kNone},
    CounterSpec{Counter::cpu_cur_clock_hz, "cpu_cur_clock_hz", "Hz", kNone},
    CounterSpec{Counter::gpu_sm_clock_min_hz, "gpu_sm_clock_min_hz", "Hz", kNone},
    CounterSpec{Counter::gpu_sm_clock_max_hz, "gpu_sm_clock_max_hz", "Hz", kNone},
    // NVML's clock event ("throttle") reasons seen during the row, OR'd, the idle bit removed.
    CounterSpec{Counter::gpu_clock_event_reasons, "gpu_clock_event_reasons", "1", kNone},
    CounterSpec{Counter::gpu_temperature_max_c, "gpu_temperature_max_c", "degC", kNone},
    CounterSpec{Counter::gpu_power_mean_w, "gpu_power_mean_w", "W", kNone},
    CounterSpec{Counter::gpu_energy_j, "gpu_energy_j", "J", kSmaller},
    // 1 where the window spanned too few steps of the GPU's energy counter to keep gpu_energy_j
    // (harness/conditions.hpp, EnergyRule); absent otherwise.
    CounterSpec{Counter::gpu_energy_too_short, "gpu_energy_too_short", "1", kNone},
    // RAPL's package energy over the loop, per iteration (harness/cpu_energy.hpp).
    CounterSpec{Counter::cpu_energy_j, "cpu_energy_j", "J", kSmaller},
    // 1 when the rule calls the repetition disturbed, else 0; disturbed_by: which part fired.
    CounterSpec{Counter::disturbed, "disturbed", "1", kNone},
    CounterSpec{Counter::disturbed_by, "disturbed_by", "1", kNone},
};
static_assert(kCounters.size() == static_cast<std::size_t>(Counter::disturbed_by) + 1,
              "every Counter enumerator has exactly one entry");

constexpr std::array<std::string_view, 11> kLabelKeys = {
    "workload", "backend", "variant", "data",      "dtype", "shape",
    "host",     "input",   "probe",   "precision", "net"};
static_assert(kLabelKeys.size() == static_cast<std::size_t>(LabelKey::net) + 1);

const char* direction_name(Direction direction) {
  switch (direction) {
    case Direction::smaller:
      return "smaller";
    case Direction::bigger:
      return "bigger";
    case Direction::none:
      return "none";
  }
  return "none";
}

}  // namespace

const CounterSpec& counter_spec(Counter counter) {
  const CounterSpec& spec = kCounters.at(static_cast<std::size_t>(counter));
  if (spec.counter != counter) throw std::logic_error("harness/schema.cpp: table out of order");
  return spec;
}

std::string_view label_key(LabelKey key) { return kLabelKeys.at(static_cast<std::size_t>(key)); }

std::string schema_json() {
  nlohmann::ordered_json counters = nlohmann::ordered_json::object();
  for (const CounterSpec& spec : kCounters) {
    counters[std::string(spec.key)] = {{"unit", std::string(spec.unit)},
                                       {"direction", direction_name(spec.direction)}};
  }
  nlohmann::ordered_json labels = nlohmann::ordered_json::array();
  for (std::string_view key : kLabelKeys) labels.push_back(std::string(key));
  const nlohmann::ordered_json prefixes = {
      {std::string(kOperationTimePrefix), {{"unit", "s"}, {"direction", "smaller"}}},
      {std::string(kOperationFlopPrefix), {{"unit", "flop"}, {"direction", "none"}}},
      {std::string(kOperationBytesPrefix), {{"unit", "B"}, {"direction", "none"}}},
      {std::string(kAxisPrefix), {{"unit", "count"}, {"direction", "none"}}}};
  const nlohmann::ordered_json document = {{"schema_version", kSchemaVersion},
                                           {"counters", counters},
                                           {"counter_prefixes", prefixes},
                                           {"label_keys", labels}};
  return document.dump(1);
}

}  // namespace gpubench
