#pragma once
// The output contract, declared once: every counter a row may carry, with its unit and which
// direction is better, and the keys a row's label may hold. Rows are written only through
// harness/result_row.hpp, which takes these enumerators, so no fixture spells a key by hand.
// `bench --schema` prints this table as JSON; the Python tools declare the same table
// (tools/gpubench_tools/schema.py) and a test fails when the two disagree.

#include <string>
#include <string_view>

namespace gpubench {

enum class Counter {
  // Parameters of the row, repeated as numbers so tools never parse names.
  m,
  n,
  k,
  batch,
  hidden,
  hidden_layers,
  readback,
  epochs,
  steps,
  blas_threads,
  torch_threads,
  pinned,
  bytes,
  // Work and rates.
  flop,
  bytes_moved,
  arithmetic_intensity,
  flop_per_s,
  pct_peak,
  bytes_per_s,
  samples_per_s,
  images_per_s,
  // Copies.
  bytes_h2d,
  bytes_d2h,
  copies_h2d,
  copies_d2h,
  // Times per iteration (seconds) and their parts.
  t_h2d,
  t_compute,
  t_d2h,
  t_wall,
  t_overhead,
  t_epoch,
  t_step,
  t_epoch_cifar,
  t_issue_per_launch,
  t_per_launch,
  t_per_node,
  t_event_record,
  t_sync,
  // Launch structure.
  kernels,
  kernels_per_step,
  readbacks,
  graph_steps,
  threads_per_block,
  // Memory.
  device_bytes,
  device_bytes_peak,
  device_bytes_model,
  device_bytes_free,
  batch_largest,
  shared_bytes,
  // Training state and quality.
  loss_scale,
  skipped_steps,
  final_loss,
  test_accuracy,
  max_error_over_bound,
  // The conditions of the repetition (harness/conditions.hpp): what else took the machine while
  // the timed loop ran, and the rule's verdict.
  cpu_other_cores,
  cpu_wait_cores,
  cpu_steal_cores,
  cpu_cur_clock_hz,
  gpu_sm_clock_min_hz,
  gpu_sm_clock_max_hz,
  gpu_clock_event_reasons,
  gpu_temperature_max_c,
  gpu_power_mean_w,
  gpu_energy_j,
  gpu_energy_too_short,
  cpu_energy_j,
  disturbed,
  disturbed_by,
};

enum class Direction { smaller, bigger, none };

struct CounterSpec {
  Counter counter;
  std::string_view key;   // the JSON key, stable across versions (tests/contract/)
  std::string_view unit;  // "s", "B", "B/s", "flop", "flop/s", "flop/B", "1/s", "%", "count",
                          // "1", "cores", "Hz", "W", "J" or "degC"
  Direction direction;    // which way is better; none for parameters and sizes
};

const CounterSpec& counter_spec(Counter counter);

// Per-operation times of a profiled training step (harness/operation_profiler.hpp) are counters
// `t_op:<operation>` (e.g. t_op:conv1.gemm), seconds per step, smaller is better: one declared
// family rather than one key per operation, since the operations are the trainer's to name.
inline constexpr std::string_view kOperationTimePrefix = "t_op:";
// Beside each `t_op:<operation>` of a workload with a model per operation: its floating-point work
// `flop_op:<operation>` and its memory traffic `bytes_op:<operation>` per step by that model
// (docs/workloads.md), so a tool can set each operation's time against both roofs.
inline constexpr std::string_view kOperationFlopPrefix = "flop_op:";
inline constexpr std::string_view kOperationBytesPrefix = "bytes_op:";
// A numeric axis of a workload declared through the public API (include/gpubench/workload.hpp)
// that has no counter of its own in this table is the counter `axis:<name>` (e.g. axis:rows), so
// the tools read every axis of a row from its counters, never from its name.
inline constexpr std::string_view kAxisPrefix = "axis:";

// The keys a row's label may hold as `key=value` pairs (workload, backend and variant first; the
// others in the order the row's parameters and extra pairs come).
enum class LabelKey {
  workload,
  backend,
  variant,
  data,
  dtype,
  shape,
  host,
  input,
  probe,
  precision,
  net
};
std::string_view label_key(LabelKey key);

// The whole table as JSON: {"schema_version": 1, "counters": {key: {"unit", "direction"}},
// "counter_prefixes": {prefix: {"unit", "direction"}}, "label_keys": [...]}.
std::string schema_json();

}  // namespace gpubench
