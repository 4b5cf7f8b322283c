#pragma once
// gpubench's public API: a workload of your own, measured on the CPU and on the GPU by the suite's
// own machinery (docs/your-own-workload.md walks through it).
//
// A workload declares what one call of it is, and two implementations of that call:
//   - its axes: the parameters of a call (a size `n`, a `rows` count, a text axis such as a mode);
//     every combination of their values is one point of the sweep (or the points are listed one by
//     one), and the axes are the name's parameters in the order declared (`saxpy/cpu/loop/n:1024`);
//   - its buffers: flat arrays of float or double elements, each an input (filled by the
//     suite with fixed-seed uniform values in [-1, 1)), an output (compared between the CPU and the
//     GPU result) or both; the element count of each is a function of the point (or an axis);
//   - its work per call (FLOP and bytes moved), for the rates and the roofline of the breakdown;
//   - a CPU function: given the point and host buffers, returns the call (a lambda that does the
//     work on those buffers), so that looking up sizes and pointers stays out of the timed loop;
//   - a GPU function: given the point, device buffers and a stream, returns the call that enqueues
//     the work on that stream (kernel launches, library calls); the call must not synchronise.
// The suite fills the inputs, runs the CPU function once as the reference, checks the GPU's
// outputs against it (|gpu - cpu| <= absolute + relative * |cpu| for every element), warms up,
// times and writes one row per point and path, with the conditions, the progress line and the JSON
// of every other row. Without a GPU the GPU rows are not registered, and the CPU rows still run.
//
// Rows, for a workload `W`, CPU function `C` and GPU function `G` (docs/names-and-counters.md):
//   W/cpu/C/<axes>                 the CPU call, host clock
//   W/gpu/G_kernel/<axes>          the GPU call alone, buffers already on the device, CUDA events,
//                                  L2 flushed before each call (the work at the device's rate)
//   W/gpu/G_e2e/host:pinned/<axes> copies of the inputs in, the call, copies of the outputs out and
//                                  the synchronisation, each part's event time and the host time of
//                                  the whole (what a program that keeps its data on the host waits)
//
// Everything here is host C++17: the header compiles without the CUDA toolkit, so a CPU-only
// translation unit may declare the workload and a .cu file hold only its kernel.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

struct CUstream_st;  // cudaStream_t is `CUstream_st*`: declared here so no CUDA header is needed

namespace gpubench {

// The stream a GPU function enqueues its work on: a cudaStream_t.
using GpuStream = CUstream_st*;

// One point of a workload's sweep: a value for each axis, in the order of the rows' names, and any
// label pairs of its own. A look-up is a search by name and an opaque call: read a value once,
// before a loop, not in its condition.
class Point {
 public:
  // The value of numeric axis `axis`; throws std::out_of_range naming it if there is none.
  long long operator[](std::string_view axis) const;
  // The value of text axis `axis`; throws std::out_of_range naming it if there is none.
  const std::string& text(std::string_view axis) const;

  // For Workload::points(): appends a numeric or a text axis's value (the name's next parameter),
  // or a label pair that is not in the name (a shape's family); the label's key must be one of the
  // schema's label keys (docs/names-and-counters.md).
  Point& set(std::string axis, long long value);
  Point& set(std::string axis, std::string value);
  Point& label(std::string key, std::string value);

  struct Value {
    std::string axis;
    bool is_text = false;
    long long number = 0;
    std::string text;
  };
  std::vector<Value> values;  // in the order of the name's parameters
  std::vector<std::pair<std::string, std::string>> labels;
};

enum class ElementType { float32, float64 };

template <typename T>
constexpr ElementType element_type_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "gpubench buffers hold float or double elements");
  return std::is_same_v<T, double> ? ElementType::float64 : ElementType::float32;
}

// A call's buffers, by the names the declaration gave them: host memory for the CPU function,
// device memory for the GPU function.
class Buffers {
 public:
  // The buffer `name` as T*; throws std::invalid_argument if there is none, or if it was declared
  // with another element type.
  template <typename T>
  T* get(std::string_view name) const {
    return static_cast<T*>(find(name, element_type_of<T>()));
  }

  struct Entry {
    std::string name;
    ElementType type;
    void* data;
  };
  std::vector<Entry> entries;

 private:
  void* find(std::string_view name, ElementType type) const;
};

// The work of one call: floating-point operations and bytes read plus written in the device's (or
// the CPU's) memory. Rates and shares of the peak come from these, so they are the algorithm's
// necessary work, not a count of what an implementation happens to do: count each operand read
// once and each output written once (y = a x + y over n floats: 2 n flop, 12 n bytes). The rows
// write them as `flop`, `bytes_moved` and `arithmetic_intensity` (flop / bytes), each where it is
// positive, beside FLOP/s and bytes_per_s.
struct Work {
  double flop = 0;
  double bytes = 0;
};

enum class BufferRole { input, output, input_output };

struct BufferDeclaration {
  std::string name;
  BufferRole role;
  std::function<std::size_t(const Point&)> count;  // elements
  std::function<ElementType(const Point&)> type;   // the same at every point, or by dtype
};

// What a check of the CPU function's own result found (Workload::check).
struct Check {
  bool passed = false;
  double worst_error_over_bound = 0;  // the largest error over its bound; <= 1 passes
  std::string message;                // what failed, with the numbers
};

// One call of the work, bound to a point's values and buffers: what the timers run.
using Call = std::function<void()>;
// Given a point and its buffers, look up what the call needs (sizes, pointers) and return the call:
// the look-ups run once per row, outside the timed loop, and the call does the work alone.
using CpuFunction = std::function<Call(const Point&, const Buffers&)>;
// The same for the GPU: device buffers and the stream the call enqueues on (it must not wait).
using GpuFunction = std::function<Call(const Point&, const Buffers&, GpuStream)>;
using CheckFunction = std::function<Check(const Point&, const Buffers&)>;

class Workload {
 public:
  // `name` is the rows' first name segment: lower case, digits and underscores.
  explicit Workload(std::string name);

  // A numeric axis and its values, in the order the sweep runs them.
  Workload& axis(std::string name, std::vector<long long> values);
  // A text axis (a mode, a layout): its values are name parameters and label pairs.
  Workload& text_axis(std::string name, std::vector<std::string> values);
  // Points given one by one instead of every combination of the axes (shapes from a list, each
  // dtype with its own sizes); each must set the same axes, in the same order.
  Workload& points(std::vector<Point> points);
  // The CPU rows at each of these thread counts: a last name parameter `threads:T` (the counter
  // blas_threads), OpenBLAS set to T threads before the row (a row whose T OpenBLAS cannot run is
  // skipped, naming both), and the row's peak that of T cores. The CPU function reads T as
  // point["threads"] for threads of its own. Without it: no threads parameter, the machine's peak,
  // and the function is taken to run on the calling thread: the gate's instruction lane counts
  // its rows as one thread's (docs/regression-gate.md), so a function that starts threads of its
  // own (OpenMP, std::thread) declares them here.
  Workload& cpu_threads(std::vector<long long> thread_counts);

  // Buffers of T with `count` elements at a point; the second form: as many as axis `axis` says.
  template <typename T>
  Workload& input(std::string name, std::function<std::size_t(const Point&)> count) {
    return buffer(std::move(name), BufferRole::input, std::move(count), constant<T>());
  }
  template <typename T>
  Workload& input(std::string name, std::string axis) {
    return input<T>(std::move(name), axis_count(std::move(axis)));
  }
  template <typename T>
  Workload& output(std::string name, std::function<std::size_t(const Point&)> count) {
    return buffer(std::move(name), BufferRole::output, std::move(count), constant<T>());
  }
  template <typename T>
  Workload& output(std::string name, std::string axis) {
    return output<T>(std::move(name), axis_count(std::move(axis)));
  }
  // Read and written in place (y in y = a x + y): filled like an input, compared like an output.
  template <typename T>
  Workload& input_output(std::string name, std::function<std::size_t(const Point&)> count) {
    return buffer(std::move(name), BufferRole::input_output, std::move(count), constant<T>());
  }
  template <typename T>
  Workload& input_output(std::string name, std::string axis) {
    return input_output<T>(std::move(name), axis_count(std::move(axis)));
  }

  // A buffer whose element type depends on the point (a dtype axis): `type` says which.
  Workload& buffer(std::string name, BufferRole role,
                   std::function<std::size_t(const Point&)> count,
                   std::function<ElementType(const Point&)> type);

  Workload& work(std::function<Work(const Point&)> work_per_call);
  // The CPU implementation, `variant` naming it in the rows (`loop`, `openblas`, `eigen`).
  Workload& cpu(std::string variant, CpuFunction function);
  // The GPU implementation, `variant` naming it in the rows (`cuda`, `cublas`, `thrust`).
  Workload& gpu(std::string variant, GpuFunction function);
  // The comparison of GPU outputs with the CPU's: |gpu - cpu| <= absolute + relative * |cpu|.
  // Default 1e-5 and 1e-6: a few float roundings; a reduction over many elements needs more.
  Workload& tolerance(double relative, double absolute);
  // Kernel launches (library calls) one GPU call makes, for the launch part of the breakdown.
  Workload& kernels_per_call(int kernels);
  // A check of the CPU function's result against the mathematics (a sampled reference in higher
  // precision), run after its untimed call: a row that fails it is an error, and the rows carry its
  // worst error over bound (max_error_over_bound). The GPU rows are compared with the CPU's result.
  Workload& check(CheckFunction check);

  // The declaration, as the suite reads it.
  struct Declaration {
    std::string name;
    std::vector<std::pair<std::string, std::vector<long long>>> numeric_axes;
    std::vector<std::pair<std::string, std::vector<std::string>>> text_axes;
    std::vector<std::string> axis_order;  // the combined axes' names, in declaration order
    std::vector<Point> points;            // given one by one (points()); else every combination
    std::vector<long long> cpu_threads;
    std::vector<BufferDeclaration> buffers;
    std::function<Work(const Point&)> work;
    std::string cpu_variant;
    CpuFunction cpu;
    std::string gpu_variant;
    GpuFunction gpu;
    CheckFunction check;
    double relative_tolerance = 1e-5;
    double absolute_tolerance = 1e-6;
    int kernels_per_call = 1;
  };
  const Declaration& declaration() const { return declaration_; }

 private:
  static std::function<std::size_t(const Point&)> axis_count(std::string axis);
  template <typename T>
  static std::function<ElementType(const Point&)> constant() {
    return [](const Point&) { return element_type_of<T>(); };
  }

  Declaration declaration_;
};

// Adds a workload to those the runner measures (gpubench::main, or the suite's bench); checks the
// declaration and throws std::invalid_argument naming what is missing or wrong. Returns a number
// only so that GPUBENCH_WORKLOAD can call it from a static initialiser.
int add_workload(const Workload& workload);
// The workloads added so far, in the order added.
const std::vector<Workload>& added_workloads();
// What GPUBENCH_WORKLOAD calls before main(): adds the declaration `declare` returns; a declaration
// that throws or that add_workload refuses is kept as an error the runner reports (exit 2, nothing
// run) instead of ending the program before main().
int add_workload_at_start_up(Workload (*declare)());

// The runner: bench's command line (every --benchmark_* flag, --list-all, --all-counters,
// --wait-idle), the progress line, the conditions and the --benchmark_out file, over the workloads
// added. The gpubench::main target's main() calls it.
int run(int argc, char** argv);

}  // namespace gpubench

// Declares a workload: the block that follows returns its gpubench::Workload, and the program's
// runner measures it.
//   GPUBENCH_WORKLOAD(saxpy) { return gpubench::Workload("saxpy").axis(...)...; }
#define GPUBENCH_WORKLOAD(identifier)                                      \
  static ::gpubench::Workload gpubench_declare_##identifier();             \
  [[maybe_unused]] static const int gpubench_added_##identifier =          \
      ::gpubench::add_workload_at_start_up(gpubench_declare_##identifier); \
  static ::gpubench::Workload gpubench_declare_##identifier()
