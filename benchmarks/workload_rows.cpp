// The CPU rows of the workloads added through the public API, and what their GPU rows share with
// them (points, names, host buffers, the comparison of outputs).
//
// W/cpu/C/<axes>: the CPU function on the host clock (harness/host_clock_timer.hpp), after one
// untimed call that pages the buffers in and starts any thread pool it uses. The row's peak is the
// whole machine's (every physical core): the suite cannot know how many threads the user's code
// runs, and a single-threaded function's share of it says how much of the CPU it leaves unused.
// For the gate's instruction lane a row without cpu_threads runs on one thread (OpenBLAS set to
// one under Valgrind): the API's contract is that a function with threads of its own declares
// them (include/gpubench/workload.hpp, cpu_threads).

#include "benchmarks/workload_rows.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "harness/cpu_info.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/instruction_region.hpp"
#include "kernels/common/openblas.hpp"

namespace gpubench {

#if GPUBENCH_HAS_CUDA
// benchmarks/workload_rows_gpu.cpp.
void register_workload_gpu_rows(const std::shared_ptr<const Workload>& workload);
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

NameParameter value_parameter(const Point::Value& value) {
  if (!value.is_text)
    return number_parameter(value.axis.c_str(), value.number, size_counter(value.axis));
  if (const auto key = point_label_key(value.axis)) {
    return text_parameter(value.axis.c_str(), value.text, *key);
  }
  return NameParameter{value.axis, value.text, std::nullopt, 0, std::nullopt};
}

void cpu_row(benchmark::State& state, const RowId& id,
             const std::shared_ptr<const Workload>& workload, const Point& point,
             long long threads) {
  const Workload::Declaration& declaration = workload->declaration();
  const bool counted = InstructionRegion::running_on_valgrind();
  if (threads > 0) {
    cpu::set_blas_threads(static_cast<int>(threads));  // throws: a skipped row
  } else if (counted) {
    cpu::set_blas_threads(1);  // under Valgrind the undeclared row's OpenBLAS calls stay on it too
  }
  // Its instruction region says how many threads do the row's work: the declared T, else one (a
  // function that starts threads of its own declares cpu_threads), so the gate's instruction lane
  // counts a user's single-threaded rows, whose names have no threads part
  // (harness/instruction_region.hpp).
  const InstructionRegionLabel label(counted ? id.name() : std::string(), threads > 0 ? threads : 1);
  HostArrays arrays(declaration, point);
  arrays.fill();
  const Buffers buffers = arrays.buffers();
  // Untimed: pages in the buffers, starts a thread pool (OpenBLAS's), and gives the result the
  // declaration's check reads.
  const Call call = declaration.cpu(point, buffers);
  call();
  std::optional<Check> check;
  if (declaration.check) {
    check = declaration.check(point, buffers);
    if (!check->passed) {
      state.SkipWithError(check->message.c_str());
      return;
    }
  }

  HostClockTimer timer(HostClockTimer::Report::benchmark_clock);
  const double seconds_per_call = timer.run(state, [&] {
    call();
    benchmark::ClobberMemory();
  });

  const Work work = declaration.work(point);
  const int cores = threads > 0 ? static_cast<int>(threads) : cpu_info().physical_cores;
  ResultRow row(state, id);
  row.work(work.flop, work.bytes, seconds_per_call, cpu_peak_flops(cores, arrays.holds_double()))
      .set(Counter::bytes_h2d, 0)
      .set(Counter::bytes_d2h, 0);
  if (work.bytes > 0) row.set(Counter::bytes_per_s, work.bytes / seconds_per_call);
  if (check) row.set(Counter::max_error_over_bound, check->worst_error_over_bound);
  describe_point(&row, point);
  row.publish();
}

}  // namespace

std::optional<LabelKey> point_label_key(const std::string& key) {
  for (LabelKey label : {LabelKey::data, LabelKey::dtype, LabelKey::shape, LabelKey::input,
                         LabelKey::precision, LabelKey::net}) {
    if (label_key(label) == key) return label;
  }
  return std::nullopt;
}

void describe_point(ResultRow* row, const Point& point) {
  for (const Point::Value& value : point.values) {
    if (!value.is_text && !size_counter(value.axis)) {
      row->axis(value.axis, static_cast<double>(value.number));
    }
  }
  for (const auto& [key, value] : point.labels) {
    const auto label = point_label_key(key);
    if (!label) throw std::invalid_argument("label '" + key + "' is not a label key");
    row->label(*label, value);
  }
}

std::vector<Point> points_of(const Workload::Declaration& declaration) {
  if (!declaration.points.empty()) return declaration.points;
  std::vector<Point> points(1);
  for (const std::string& axis : declaration.axis_order) {
    std::vector<Point> extended;
    for (const Point& point : points) {
      for (const auto& [name, values] : declaration.numeric_axes) {
        if (name != axis) continue;
        for (long long value : values) extended.emplace_back(point).set(name, value);
      }
      for (const auto& [name, values] : declaration.text_axes) {
        if (name != axis) continue;
        for (const std::string& value : values) extended.emplace_back(point).set(name, value);
      }
    }
    points = std::move(extended);
  }
  return points;
}

RowId workload_row_id(const Workload::Declaration& declaration, const std::string& backend,
                      const std::string& variant, const Point& point, const std::string& host,
                      long long threads) {
  RowId id(declaration.name, backend, variant);
  bool host_placed = host.empty();
  for (const Point::Value& value : point.values) {
    if (!host_placed && !value.is_text) {
      id.parameters.push_back(text_parameter("host", host, LabelKey::host));
      host_placed = true;
    }
    id.parameters.push_back(value_parameter(value));
  }
  if (!host_placed) id.parameters.push_back(text_parameter("host", host, LabelKey::host));
  if (threads > 0)
    id.parameters.push_back(number_parameter("threads", threads, Counter::blas_threads));
  return id;
}

std::size_t element_bytes(ElementType type) {
  return type == ElementType::float64 ? sizeof(double) : sizeof(float);
}

HostArrays::HostArrays(const Workload::Declaration& declaration, const Point& point) {
  for (const BufferDeclaration& buffer : declaration.buffers) {
    declarations_.push_back(&buffer);
    types_.push_back(buffer.type(point));
    arrays_.emplace_back(buffer.count(point) * element_bytes(types_.back()));
  }
}

bool HostArrays::holds_double() const {
  return std::find(types_.begin(), types_.end(), ElementType::float64) != types_.end();
}

void HostArrays::fill() {
  for (std::size_t index = 0; index < arrays_.size(); ++index) {
    const BufferDeclaration& buffer = *declarations_[index];
    const std::size_t count = arrays_[index].size() / element_bytes(types_[index]);
    if (buffer.role == BufferRole::output) {
      // NaN in every element: an output the call forgets to write fails the comparison.
      std::memset(arrays_[index].data(), 0xFF, arrays_[index].size());
      continue;
    }
    const std::uint64_t seed = index + 1;
    if (types_[index] == ElementType::float32) {
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
    buffers.entries.push_back(
        {declarations_[index]->name, types_[index], const_cast<std::byte*>(arrays_[index].data())});
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
    const bool is_double = reference.type(index) == ElementType::float64;
    const std::size_t count = reference.bytes(index) / element_bytes(reference.type(index));
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

void register_workload_rows(std::shared_ptr<const Workload> workload, bool with_gpu) {
  const Workload::Declaration& declaration = workload->declaration();
  const std::vector<Point> points = points_of(declaration);
  const std::vector<long long> thread_counts =
      declaration.cpu_threads.empty() ? std::vector<long long>{0} : declaration.cpu_threads;
  for (long long threads : thread_counts) {
    for (const Point& point : points) {
      register_row(workload_row_id(declaration, "cpu", declaration.cpu_variant, point, "", threads),
                   IterationTime::benchmark_clock, cpu_row, workload, point, threads);
    }
  }
#if GPUBENCH_HAS_CUDA
  if (with_gpu && declaration.gpu) register_workload_gpu_rows(workload);
#else
  (void)with_gpu;
#endif
}

void register_added_workloads(bool with_gpu) {
  for (const Workload& workload : added_workloads()) {
    register_workload_rows(std::make_shared<const Workload>(workload), with_gpu);
  }
}

}  // namespace gpubench
