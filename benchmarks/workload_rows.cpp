// The CPU rows of the workloads added through the public API, and what their GPU rows share with
// them (points, names, host buffers, the comparison of outputs).
//
// W/cpu/C/<axes>: the CPU function on the host clock (harness/host_clock_timer.hpp), after one
// untimed call that pages the buffers in and starts any thread pool it uses. The row's peak is the
// whole machine's (every physical core): the suite cannot know how many threads the user's code
// runs, and a single-threaded function's share of it says how much of the CPU it leaves unused.

#include "benchmarks/workload_rows.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "harness/cpu_info.hpp"
#include "harness/host_clock_timer.hpp"

namespace gpubench {

#if GPUBENCH_HAS_CUDA
// benchmarks/workload_rows_gpu.cpp.
void register_workload_gpu_rows(const Workload::Declaration& declaration);
#endif

namespace {

// The schema's size counters a numeric axis of the same name is written as.
std::optional<Counter> size_counter(const std::string& axis) {
  for (Counter counter :
       {Counter::m, Counter::n, Counter::k, Counter::batch, Counter::hidden, Counter::bytes}) {
    if (counter_spec(counter).key == axis) return counter;
  }
  return std::nullopt;
}

std::optional<LabelKey> label_for(const std::string& axis) {
  for (LabelKey key : {LabelKey::data, LabelKey::dtype, LabelKey::shape, LabelKey::input,
                       LabelKey::precision, LabelKey::net}) {
    if (label_key(key) == axis) return key;
  }
  return std::nullopt;
}

NameParameter axis_parameter(const std::string& axis, const Point& point) {
  for (const auto& [name, value] : point.numbers) {
    if (name == axis) return number_parameter(axis.c_str(), value, size_counter(axis));
  }
  const std::string& value = point.text(axis);
  if (const auto key = label_for(axis)) return text_parameter(axis.c_str(), value, *key);
  return NameParameter{axis, value, std::nullopt, 0, std::nullopt};
}

void cpu_row(benchmark::State& state, const RowId& id, const Workload* workload,
             const Point& point) {
  const Workload::Declaration& declaration = workload->declaration();
  HostArrays arrays(declaration, point);
  arrays.fill();
  const Buffers buffers = arrays.buffers();
  declaration.cpu(point, buffers);  // untimed: pages in the buffers, starts a thread pool

  HostClockTimer timer(HostClockTimer::Report::benchmark_clock);
  const double seconds_per_call = timer.run(state, [&] {
    declaration.cpu(point, buffers);
    benchmark::ClobberMemory();
  });

  const Work work = declaration.work(point);
  ResultRow row(state, id);
  row.work(work.flop, seconds_per_call,
           cpu_peak_flops(cpu_info().physical_cores, uses_double(declaration)))
      .set(Counter::bytes_per_s, work.bytes / seconds_per_call)
      .set(Counter::bytes_h2d, 0)
      .set(Counter::bytes_d2h, 0)
      .publish();
}

}  // namespace

std::vector<Point> points_of(const Workload::Declaration& declaration) {
  std::vector<Point> points(1);
  for (const std::string& axis : declaration.axis_order) {
    std::vector<Point> extended;
    for (const Point& point : points) {
      for (const auto& [name, values] : declaration.numeric_axes) {
        if (name != axis) continue;
        for (long long value : values) {
          extended.push_back(point);
          extended.back().numbers.emplace_back(name, value);
        }
      }
      for (const auto& [name, values] : declaration.text_axes) {
        if (name != axis) continue;
        for (const std::string& value : values) {
          extended.push_back(point);
          extended.back().texts.emplace_back(name, value);
        }
      }
    }
    points = std::move(extended);
  }
  return points;
}

RowId workload_row_id(const Workload::Declaration& declaration, const std::string& backend,
                      const std::string& variant, const Point& point, const std::string& host) {
  RowId id(declaration.name, backend, variant);
  bool host_placed = host.empty();
  for (const std::string& axis : declaration.axis_order) {
    const bool numeric = std::any_of(point.numbers.begin(), point.numbers.end(),
                                     [&](const auto& number) { return number.first == axis; });
    if (!host_placed && numeric) {
      id.parameters.push_back(text_parameter("host", host, LabelKey::host));
      host_placed = true;
    }
    id.parameters.push_back(axis_parameter(axis, point));
  }
  if (!host_placed) id.parameters.push_back(text_parameter("host", host, LabelKey::host));
  return id;
}

std::size_t element_bytes(ElementType type) {
  return type == ElementType::float64 ? sizeof(double) : sizeof(float);
}

bool uses_double(const Workload::Declaration& declaration) {
  for (const BufferDeclaration& buffer : declaration.buffers) {
    if (buffer.type == ElementType::float64) return true;
  }
  return false;
}

HostArrays::HostArrays(const Workload::Declaration& declaration, const Point& point) {
  for (const BufferDeclaration& buffer : declaration.buffers) {
    declarations_.push_back(&buffer);
    arrays_.emplace_back(buffer.count(point) * element_bytes(buffer.type));
  }
}

void HostArrays::fill() {
  for (std::size_t index = 0; index < arrays_.size(); ++index) {
    const BufferDeclaration& buffer = *declarations_[index];
    const std::size_t count = arrays_[index].size() / element_bytes(buffer.type);
    if (buffer.role == BufferRole::output) {
      // NaN in every element: an output the call forgets to write fails the comparison.
      std::memset(arrays_[index].data(), 0xFF, arrays_[index].size());
      continue;
    }
    const std::uint64_t seed = index + 1;
    if (buffer.type == ElementType::float32) {
      fill_uniform(reinterpret_cast<float*>(arrays_[index].data()), count, seed);
    } else {
      std::vector<float> values(count);
      fill_uniform(values.data(), count, seed);
      auto* target = reinterpret_cast<double*>(arrays_[index].data());
      for (std::size_t element = 0; element < count; ++element) target[element] = values[element];
    }
  }
}

Buffers HostArrays::buffers() const {
  Buffers buffers;
  for (std::size_t index = 0; index < arrays_.size(); ++index) {
    buffers.entries.push_back({declarations_[index]->name, declarations_[index]->type,
                               const_cast<std::byte*>(arrays_[index].data())});
  }
  return buffers;
}

std::size_t HostArrays::total_bytes() const {
  std::size_t total = 0;
  for (const auto& array : arrays_) total += array.size();
  return total;
}

CheckResult compare_outputs(const Workload::Declaration& declaration, const HostArrays& reference,
                            const std::byte* const* actual) {
  CheckResult result;
  result.passed = true;
  for (std::size_t index = 0; index < reference.size(); ++index) {
    const BufferDeclaration& buffer = reference.declaration(index);
    if (buffer.role == BufferRole::input) continue;
    const bool is_double = buffer.type == ElementType::float64;
    const std::size_t count = reference.bytes(index) / element_bytes(buffer.type);
    const auto value = [&](const std::byte* data, std::size_t element) {
      return is_double ? reinterpret_cast<const double*>(data)[element]
                       : static_cast<double>(reinterpret_cast<const float*>(data)[element]);
    };
    for (std::size_t element = 0; element < count; ++element) {
      const double expected = value(reference.data(index), element);
      const double got = value(actual[index], element);
      const double bound =
          declaration.absolute_tolerance + declaration.relative_tolerance * std::fabs(expected);
      const double error = std::fabs(got - expected);
      // NaN compares false: an unwritten (poisoned) or NaN element fails.
      const double over = bound > 0 ? error / bound : (error == 0 ? 0 : HUGE_VAL);
      if (!(over <= 1)) {
        if (result.passed) {
          std::ostringstream message;
          message.precision(9);
          message << "GPU output '" << buffer.name << "' differs from the CPU's at element "
                  << element << ": " << got << " against " << expected << " (bound "
                  << declaration.absolute_tolerance << " + " << declaration.relative_tolerance
                  << " x |cpu|)";
          result.message = message.str();
        }
        result.passed = false;
        result.worst_error_over_bound = std::numeric_limits<double>::infinity();
        return result;
      }
      result.worst_error_over_bound = std::max(result.worst_error_over_bound, over);
      result.max_absolute_error = std::max(result.max_absolute_error, error);
    }
  }
  result.message = "ok";
  return result;
}

void register_added_workloads(bool with_gpu) {
  for (const Workload& workload : added_workloads()) {
    const Workload::Declaration& declaration = workload.declaration();
    for (const Point& point : points_of(declaration)) {
      register_row(workload_row_id(declaration, "cpu", declaration.cpu_variant, point),
                   IterationTime::benchmark_clock, cpu_row, &workload, point);
    }
  }
#if GPUBENCH_HAS_CUDA
  if (!with_gpu) return;
  for (const Workload& workload : added_workloads()) {
    if (workload.declaration().gpu) register_workload_gpu_rows(workload.declaration());
  }
#else
  (void)with_gpu;
#endif
}

}  // namespace gpubench
