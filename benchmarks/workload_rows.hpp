#pragma once
// The rows of the workloads added through the public API (include/gpubench/workload.hpp): what the
// CPU rows (workload_rows.cpp) and the GPU rows (workload_rows_gpu.cpp) share. The rows' names and
// counters are the header's; docs/your-own-workload.md shows them.

#include <cstddef>
#include <string>
#include <vector>

#include "gpubench/workload.hpp"
#include "harness/result_row.hpp"
#include "harness/validation.hpp"

namespace gpubench {

// Registers every added workload's CPU rows, and with `with_gpu` its GPU rows.
void register_added_workloads(bool with_gpu);

// The errors of declarations made before main() (add_workload_at_start_up), for the runner to
// report before anything runs.
std::vector<std::string>& start_up_errors();

// Every point of the declaration's axes, the first axis varying slowest.
std::vector<Point> points_of(const Workload::Declaration& declaration);

// The row's name: W/<backend>/<variant>/<axes...>, with `host` (when not empty) before the first
// numeric axis. Numeric axes named like one of the schema's size counters (m, n, k, batch, hidden,
// bytes) are written as that counter too; text axes are label pairs where the schema has the key.
RowId workload_row_id(const Workload::Declaration& declaration, const std::string& backend,
                      const std::string& variant, const Point& point, const std::string& host = "");

std::size_t element_bytes(ElementType type);
// Whether any buffer holds doubles: the rows' peak is then the fp64 peak.
bool uses_double(const Workload::Declaration& declaration);

// Host copies of a point's buffers: inputs (and inputs read in place) filled with fixed-seed values
// in [-1, 1), outputs poisoned with NaN so an element the call does not write fails the comparison.
class HostArrays {
 public:
  HostArrays(const Workload::Declaration& declaration, const Point& point);
  void fill();
  Buffers buffers() const;
  std::size_t size() const { return arrays_.size(); }
  const BufferDeclaration& declaration(std::size_t index) const { return *declarations_[index]; }
  std::size_t bytes(std::size_t index) const { return arrays_[index].size(); }
  std::byte* data(std::size_t index) { return arrays_[index].data(); }
  const std::byte* data(std::size_t index) const { return arrays_[index].data(); }
  std::size_t total_bytes() const;

 private:
  std::vector<const BufferDeclaration*> declarations_;
  std::vector<std::vector<std::byte>> arrays_;
};

// Compares every output buffer of `actual` (host memory, in the declaration's order) with the
// reference's: |actual - reference| <= absolute + relative * |reference| for each element.
CheckResult compare_outputs(const Workload::Declaration& declaration, const HostArrays& reference,
                            const std::byte* const* actual);

}  // namespace gpubench
