// The public API's declaration (include/gpubench/workload.hpp): the builder, the points' and
// buffers' look-ups, and the checks add_workload makes before anything is registered.

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/workload_rows.hpp"
#include "gpubench/workload.hpp"

namespace gpubench {

namespace {

// Names and variants become name segments and label values: no '/', ':', '=' or spaces.
bool is_plain_name(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_plain_value(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return c > ' ' && c != '/' && c != ':' && c != '=' && c != '"' && c != '\\' && c < 127;
  });
}

// What is wrong with an axis's value, if anything: the same rule for listed points and for the
// values of declared axes.
void check_value(const std::string& axis, const std::string& text,
                 std::vector<std::string>* problems) {
  if (!is_plain_value(text)) {
    problems->push_back("axis '" + axis + "': value '" + text + "' has a space, '/', ':' or '='");
  }
}
void check_value(const std::string& axis, long long number, std::vector<std::string>* problems) {
  if (number < 0) {
    problems->push_back("axis '" + axis + "': negative value " + std::to_string(number));
  }
}

// The axes of the given points: every point must set the same ones, in the same order.
void check_points(const Workload::Declaration& declaration, std::vector<std::string>* problems) {
  if (!declaration.axis_order.empty()) {
    problems->push_back("both axes and points: declare one or the other");
    return;
  }
  const Point& first = declaration.points.front();
  for (std::size_t index = 0; index < declaration.points.size(); ++index) {
    const Point& point = declaration.points[index];
    bool same = point.values.size() == first.values.size();
    for (std::size_t value = 0; same && value < point.values.size(); ++value) {
      same = point.values[value].axis == first.values[value].axis &&
             point.values[value].is_text == first.values[value].is_text;
    }
    if (!same) {
      problems->push_back("point " + std::to_string(index) +
                          " sets other axes than point 0 (or in another order)");
      return;
    }
    for (const Point::Value& value : point.values) {
      if (value.is_text) {
        check_value(value.axis, value.text, problems);
      } else {
        check_value(value.axis, value.number, problems);
      }
    }
    for (const auto& [key, text] : point.labels) {
      if (!point_label_key(key)) problems->push_back("label '" + key + "' is not a label key");
      if (!is_plain_value(text)) problems->push_back("label value '" + text + "' is not plain");
    }
  }
}

std::vector<std::string> declaration_problems(const Workload::Declaration& declaration) {
  std::vector<std::string> problems;
  const auto problem = [&](std::string text) { problems.push_back(std::move(text)); };
  if (!is_plain_name(declaration.name)) {
    problem("the name must be lower-case letters, digits and underscores");
  }
  std::vector<std::string> axes = declaration.axis_order;
  if (!declaration.points.empty()) {
    check_points(declaration, &problems);
    axes.clear();
    for (const Point::Value& value : declaration.points.front().values) axes.push_back(value.axis);
  }
  if (axes.empty()) problem("no axis: declare at least one with axis() or points()");
  std::set<std::string> names;
  for (const std::string& axis : axes) {
    if (!is_plain_name(axis)) problem("axis '" + axis + "': lower-case letters, digits, _");
    if (axis == "host" || axis == "threads") problem("axis '" + axis + "': a name the rows use");
    if (!names.insert(axis).second) problem("axis '" + axis + "' declared twice");
  }
  for (const auto& [axis, values] : declaration.numeric_axes) {
    if (values.empty()) problem("axis '" + axis + "' has no values");
    for (long long value : values) check_value(axis, value, &problems);
  }
  for (const auto& [axis, values] : declaration.text_axes) {
    if (values.empty()) problem("axis '" + axis + "' has no values");
    for (const std::string& value : values) check_value(axis, value, &problems);
  }
  for (long long threads : declaration.cpu_threads) {
    if (threads < 1) problem("cpu_threads: " + std::to_string(threads) + " is not a thread count");
  }
  if (declaration.buffers.empty()) problem("no buffer: declare its inputs and outputs");
  bool has_output = false;
  for (const BufferDeclaration& buffer : declaration.buffers) {
    if (!names.insert(buffer.name).second) problem("buffer '" + buffer.name + "' named twice");
    if (!buffer.count) problem("buffer '" + buffer.name + "' has no element count");
    if (!buffer.type) problem("buffer '" + buffer.name + "' has no element type");
    has_output = has_output || buffer.role != BufferRole::input;
  }
  if (!declaration.buffers.empty() && !has_output) {
    problem("no output buffer: nothing to compare the GPU's result with");
  }
  if (!declaration.work) problem("no work(): the FLOP and bytes of one call");
  if (!declaration.cpu) problem("no cpu() function");
  if (declaration.cpu && !is_plain_name(declaration.cpu_variant)) {
    problem("cpu variant '" + declaration.cpu_variant + "': lower-case letters, digits, _");
  }
  if (declaration.gpu && !is_plain_name(declaration.gpu_variant)) {
    problem("gpu variant '" + declaration.gpu_variant + "': lower-case letters, digits, _");
  }
  if (!(declaration.relative_tolerance >= 0) || !(declaration.absolute_tolerance >= 0)) {
    problem("tolerance: both bounds must be 0 or more");
  }
  if (declaration.kernels_per_call < 0) problem("kernels_per_call must be 0 or more");
  return problems;
}

std::vector<Workload>& workloads() {
  static std::vector<Workload> added;
  return added;
}

}  // namespace

long long Point::operator[](std::string_view axis) const {
  for (const Value& value : values) {
    if (value.axis == axis && !value.is_text) return value.number;
  }
  throw std::out_of_range("no numeric axis '" + std::string(axis) + "' at this point");
}

const std::string& Point::text(std::string_view axis) const {
  for (const Value& value : values) {
    if (value.axis == axis && value.is_text) return value.text;
  }
  throw std::out_of_range("no text axis '" + std::string(axis) + "' at this point");
}

Point& Point::set(std::string axis, long long value) {
  values.push_back({std::move(axis), false, value, {}});
  return *this;
}

Point& Point::set(std::string axis, std::string value) {
  values.push_back({std::move(axis), true, 0, std::move(value)});
  return *this;
}

Point& Point::label(std::string key, std::string value) {
  labels.emplace_back(std::move(key), std::move(value));
  return *this;
}

void* Buffers::find(std::string_view name, ElementType type) const {
  for (const Entry& entry : entries) {
    if (entry.name != name) continue;
    if (entry.type != type) {
      throw std::invalid_argument("buffer '" + std::string(name) +
                                  "' is read with another element type than it was declared with");
    }
    return entry.data;
  }
  throw std::invalid_argument("no buffer '" + std::string(name) + "' was declared");
}

Workload::Workload(std::string name) { declaration_.name = std::move(name); }

Workload& Workload::axis(std::string name, std::vector<long long> values) {
  declaration_.axis_order.push_back(name);
  declaration_.numeric_axes.emplace_back(std::move(name), std::move(values));
  return *this;
}

Workload& Workload::text_axis(std::string name, std::vector<std::string> values) {
  declaration_.axis_order.push_back(name);
  declaration_.text_axes.emplace_back(std::move(name), std::move(values));
  return *this;
}

Workload& Workload::points(std::vector<Point> points) {
  declaration_.points = std::move(points);
  return *this;
}

Workload& Workload::cpu_threads(std::vector<long long> thread_counts) {
  declaration_.cpu_threads = std::move(thread_counts);
  return *this;
}

Workload& Workload::buffer(std::string name, BufferRole role,
                           std::function<std::size_t(const Point&)> count,
                           std::function<ElementType(const Point&)> type) {
  declaration_.buffers.push_back({std::move(name), role, std::move(count), std::move(type)});
  return *this;
}

std::function<std::size_t(const Point&)> Workload::axis_count(std::string axis) {
  return [axis = std::move(axis)](const Point& point) {
    return static_cast<std::size_t>(point[axis]);
  };
}

Workload& Workload::work(std::function<Work(const Point&)> work_per_call) {
  declaration_.work = std::move(work_per_call);
  return *this;
}

Workload& Workload::cpu(std::string variant, CpuFunction function) {
  declaration_.cpu_variant = std::move(variant);
  declaration_.cpu = std::move(function);
  return *this;
}

Workload& Workload::gpu(std::string variant, GpuFunction function) {
  declaration_.gpu_variant = std::move(variant);
  declaration_.gpu = std::move(function);
  return *this;
}

Workload& Workload::tolerance(double relative, double absolute) {
  declaration_.relative_tolerance = relative;
  declaration_.absolute_tolerance = absolute;
  return *this;
}

Workload& Workload::kernels_per_call(int kernels) {
  declaration_.kernels_per_call = kernels;
  return *this;
}

Workload& Workload::check(CheckFunction check) {
  declaration_.check = std::move(check);
  return *this;
}

int add_workload(const Workload& workload) {
  const Workload::Declaration& declaration = workload.declaration();
  std::vector<std::string> problems = declaration_problems(declaration);
  for (const Workload& added : workloads()) {
    if (added.declaration().name == declaration.name) {
      problems.push_back("a workload of this name was already added");
    }
  }
  if (!problems.empty()) {
    std::ostringstream message;
    message << "workload '" << declaration.name << "': ";
    for (std::size_t index = 0; index < problems.size(); ++index) {
      message << (index == 0 ? "" : "; ") << problems[index];
    }
    throw std::invalid_argument(message.str());
  }
  workloads().push_back(workload);
  return static_cast<int>(workloads().size());
}

const std::vector<Workload>& added_workloads() { return workloads(); }

std::vector<std::string>& start_up_errors() {
  static std::vector<std::string> errors;
  return errors;
}

int add_workload_at_start_up(Workload (*declare)()) {
  try {
    return add_workload(declare());
  } catch (const std::exception& error) {
    start_up_errors().push_back(error.what());
    return 0;
  }
}

}  // namespace gpubench
