#pragma once
// The rows of the workloads added through the public API (include/gpubench/workload.hpp): what the
// CPU rows (workload_rows.cpp) and the GPU rows (workload_rows_gpu.cpp) share. The rows' names and
// counters are the header's; docs/your-own-workload.md shows them.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpubench/workload.hpp"
#include "harness/result_row.hpp"
#include "harness/validation.hpp"

namespace gpubench {

// Registers the workload's CPU rows (at each of its thread counts, the outer loop), and with
// `with_gpu` its GPU rows: the suite's own workloads declared through the public API (GEMM) and
// every added one.
void register_workload_rows(std::shared_ptr<const Workload> workload, bool with_gpu);
// register_workload_rows for every workload added (add_workload, GPUBENCH_WORKLOAD).
void register_added_workloads(bool with_gpu);

// The errors of declarations made before main() (add_workload_at_start_up), for the runner to
// report before anything runs.
std::vector<std::string>& start_up_errors();

// The declaration's points: those it lists, or every combination of its axes, the first axis
// varying slowest.
std::vector<Point> points_of(const Workload::Declaration& declaration);

// The row's name: W/<backend>/<variant>/<the point's values...>, with `host` (when not empty)
// before the first numeric value and `threads` (when > 0) last. Numeric values named like one of
// the schema's size counters (m, n, k, batch, hidden, bytes) are written as that counter too (the
// others as axis:<name>, describe_point), and threads as blas_threads; text values are label pairs
// where the schema has the key.
RowId workload_row_id(const Workload::Declaration& declaration, const std::string& backend,
                      const std::string& variant, const Point& point, const std::string& host = "",
                      long long threads = 0);

std::size_t element_bytes(ElementType type);

// The schema's label key named `key` that a point's text axis or label may be (not workload,
// backend, variant, host or probe, which the rows themselves write); none for another name.
std::optional<LabelKey> point_label_key(const std::string& key);

// Writes what the name's size counters do not: axis:<name> for each numeric axis without a counter
// of its own, and the point's label pairs (a shape's family; throws for a key the schema lacks).
void describe_point(ResultRow* row, const Point& point);

// Host copies of a point's buffers: inputs (and inputs read in place) filled with fixed-seed values
// in [-1, 1), outputs poisoned with NaN so an element the call does not write fails the comparison.
class HostArrays {
 public:
  HostArrays(const Workload::Declaration& declaration, const Point& point);
  void fill();
  Buffers buffers() const;
  std::size_t size() const { return arrays_.size(); }
  const BufferDeclaration& declaration(std::size_t index) const { return *declarations_[index]; }
  ElementType type(std::size_t index) const { return types_[index]; }
  // Whether any buffer holds doubles at this point: the row's peak is then the fp64 peak.
  bool holds_double() const;
  std::size_t bytes(std::size_t index) const { return arrays_[index].size(); }
  std::byte* data(std::size_t index) { return arrays_[index].data(); }
  const std::byte* data(std::size_t index) const { return arrays_[index].data(); }
  std::size_t total_bytes() const;

 private:
  std::vector<const BufferDeclaration*> declarations_;
  std::vector<ElementType> types_;
  std::vector<std::vector<std::byte>> arrays_;
};

// Compares every output buffer of `actual` (host memory, in the declaration's order) with the
// reference's: |actual - reference| <= absolute + relative * |reference| for each element.
CheckResult compare_outputs(const Workload::Declaration& declaration, const HostArrays& reference,
                            const std::byte* const* actual);

}  // namespace gpubench
