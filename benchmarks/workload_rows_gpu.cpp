// The GPU rows of the workloads added through the public API (include/gpubench/workload.hpp).
//
// W/gpu/G_kernel/<axes>: the GPU function alone, its buffers already on the device, between CUDA
//   events with the L2 flushed before each call (harness/cold_l2_timer.hpp): the work at the
//   device's rate, the time the breakdown's "work at peak" and "under-utilisation" come from.
// W/gpu/G_e2e/host:pinned/<axes>: every input copied in from pinned host memory, the call, every
//   output copied out, and the synchronisation; each part's event time and the host time of the
//   whole (harness/phased_wall_timer.hpp): what a program whose data live on the host waits for,
//   the time the speedup against the CPU row is read from. t_overhead (wall minus the parts) is
//   launch and synchronisation.
//
// Both validate first: the inputs the CPU reference saw are copied in, every output is poisoned
// (all-ones bytes: NaN), the GPU function runs once, and every output element must match the CPU
// function's within the declared tolerance (benchmarks/workload_rows.hpp); a mismatch is the row's
// error and the sweep goes on. A GPU function that launches nothing valid is caught by the check
// of cudaGetLastError after each validating call.
//
// Device memory: device_bytes_model is the declared buffers' bytes; device_bytes_peak what the
// meter measured from before the stream existed (harness/device_memory.hpp). The kernel rows also
// hold the cold-L2 timer's flush buffer, which device_bytes counts and the model does not.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <vector>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/workload_rows.hpp"
#include "harness/cold_l2_timer.hpp"
#include "harness/device_memory.hpp"
#include "harness/gpu_info.hpp"
#include "harness/phased_wall_timer.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

namespace {

// The point's buffers on the device, one allocation each, in the declaration's order.
struct DeviceArrays {
  explicit DeviceArrays(const HostArrays& host) {
    for (std::size_t index = 0; index < host.size(); ++index) {
      arrays.emplace_back(host.bytes(index));
      buffers.entries.push_back(
          {host.declaration(index).name, host.type(index), arrays.back().data()});
    }
  }
  std::vector<DeviceBuffer> arrays;
  Buffers buffers;
};

bool is_copied_in(const BufferDeclaration& buffer) { return buffer.role != BufferRole::output; }
bool is_copied_out(const BufferDeclaration& buffer) { return buffer.role != BufferRole::input; }

struct Reference {
  HostArrays inputs;   // the seeded inputs, outputs poisoned: what every GPU run starts from
  HostArrays outputs;  // the CPU function's result from those inputs
  Reference(const Workload::Declaration& declaration, const Point& point)
      : inputs(declaration, point), outputs(declaration, point) {
    inputs.fill();
    outputs.fill();
    declaration.cpu(point, outputs.buffers())();
  }
};

// The reference of the point whose rows run now. Google Benchmark calls a fixture several times
// (once per iteration count it tries, once per repetition), and the CPU function can take seconds
// at large sizes: the reference is computed once per point, and kept only until another point's
// row runs (each point's kernel and e2e rows are registered one after the other), so the memory
// of one point's reference is held, not the sweep's.
const Reference& reference_for(const std::shared_ptr<const Workload>& workload,
                               std::size_t point_index, const Point& point) {
  static const Workload* cached_workload = nullptr;
  static std::size_t cached_point = 0;
  static std::unique_ptr<Reference> cached;
  if (!cached || cached_workload != workload.get() || cached_point != point_index) {
    cached.reset();  // the previous point's buffers go before the next point's are allocated
    cached = std::make_unique<Reference>(workload->declaration(), point);
    cached_workload = workload.get();
    cached_point = point_index;
  }
  return *cached;
}

// The declared buffers' bytes at a point, before any is allocated (for the fit check).
std::size_t buffer_bytes_at(const Workload::Declaration& declaration, const Point& point) {
  std::size_t bytes = 0;
  for (const BufferDeclaration& buffer : declaration.buffers) {
    bytes += buffer.count(point) * element_bytes(buffer.type(point));
  }
  return bytes;
}

double gpu_peak(const GpuInfo& gpu, const HostArrays& arrays) {
  return gpu_peak_flops(gpu, arrays.holds_double() ? "fp64" : "fp32");
}

void gpu_kernel_row(benchmark::State& state, const RowId& id,
                    const std::shared_ptr<const Workload>& workload, std::size_t point_index,
                    const Point& point) {
  const Workload::Declaration* declaration = &workload->declaration();
  const GpuInfo& gpu = require_gpu();
  const std::size_t buffer_bytes = buffer_bytes_at(*declaration, point);
  const std::size_t device_bytes = buffer_bytes + ColdL2Timer::device_bytes(gpu.l2_cache_bytes);
  if (!fits_on_device(state, device_bytes)) return;
  const Reference& reference = reference_for(workload, point_index, point);

  DeviceMemoryMeter meter;
  Stream stream;
  DeviceArrays device(reference.inputs);
  const Call call = declaration->gpu(point, device.buffers, stream.get());
  CheckResult check;
  {
    std::vector<std::byte*> results;
    std::vector<std::vector<std::byte>> copies;
    copies.reserve(reference.inputs.size());
    for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
      // Inputs in, outputs poisoned by the same bytes the host copy holds (all ones: NaN).
      GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(device.arrays[index].data(), reference.inputs.data(index),
                                          reference.inputs.bytes(index), cudaMemcpyHostToDevice,
                                          stream.get()));
    }
    call();
    GPUBENCH_CUDA_CHECK(cudaGetLastError());
    for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
      copies.emplace_back(reference.inputs.bytes(index));
      GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(copies.back().data(), device.arrays[index].data(),
                                          copies.back().size(), cudaMemcpyDeviceToHost,
                                          stream.get()));
      results.push_back(copies.back().data());
    }
    stream.synchronize();
    check = compare_outputs(*declaration, reference.outputs, results.data());
    if (!check.passed) {
      state.SkipWithError(check.message.c_str());
      return;
    }
  }

  ColdL2Timer timer(stream.get(), gpu.l2_cache_bytes, &meter);
  const double seconds_per_call = timer.run(state, call);
  GPUBENCH_CUDA_CHECK(cudaGetLastError());

  const Work work = declaration->work(point);
  ResultRow row(state, id);
  row.set(Counter::t_h2d, 0)
      .set(Counter::t_compute, seconds_per_call)
      .set(Counter::t_d2h, 0)
      .work(work.flop, work.bytes, seconds_per_call, gpu_peak(gpu, reference.inputs))
      .set(Counter::bytes_h2d, 0)
      .set(Counter::bytes_d2h, 0)
      .set(Counter::kernels, declaration->kernels_per_call)
      .set(Counter::device_bytes, static_cast<double>(device_bytes))
      .device_memory(buffer_bytes, meter.peak_bytes())
      .set(Counter::max_error_over_bound, check.worst_error_over_bound);
  if (work.bytes > 0) row.set(Counter::bytes_per_s, work.bytes / seconds_per_call);
  describe_point(&row, point);
  row.publish();
}

void gpu_e2e_row(benchmark::State& state, const RowId& id,
                 const std::shared_ptr<const Workload>& workload, std::size_t point_index,
                 const Point& point) {
  const Workload::Declaration* declaration = &workload->declaration();
  const GpuInfo& gpu = require_gpu();
  const std::size_t device_bytes = buffer_bytes_at(*declaration, point);
  if (!fits_on_device(state, device_bytes)) return;
  const Reference& reference = reference_for(workload, point_index, point);

  DeviceMemoryMeter meter;
  Stream stream;
  DeviceArrays device(reference.inputs);
  std::vector<PinnedHostBuffer> host;
  std::vector<std::byte*> host_data;
  double bytes_h2d = 0;
  double bytes_d2h = 0;
  int copies_h2d = 0;
  int copies_d2h = 0;
  for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
    host.emplace_back(reference.inputs.bytes(index));
    host_data.push_back(host.back().as<std::byte>());
    std::memcpy(host_data.back(), reference.inputs.data(index), reference.inputs.bytes(index));
    const BufferDeclaration& buffer = reference.inputs.declaration(index);
    if (is_copied_in(buffer)) {
      bytes_h2d += static_cast<double>(reference.inputs.bytes(index));
      ++copies_h2d;
    }
    if (is_copied_out(buffer)) {
      bytes_d2h += static_cast<double>(reference.inputs.bytes(index));
      ++copies_d2h;
    }
  }
  // Outputs that are not read are poisoned on the device too, so the validating call's result
  // cannot come from an earlier one.
  for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
    if (is_copied_in(reference.inputs.declaration(index))) continue;
    GPUBENCH_CUDA_CHECK(cudaMemsetAsync(device.arrays[index].data(), 0xFF,
                                        reference.inputs.bytes(index), stream.get()));
  }

  const auto copies = [&](bool in) {
    for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
      const BufferDeclaration& buffer = reference.inputs.declaration(index);
      if (in ? !is_copied_in(buffer) : !is_copied_out(buffer)) continue;
      void* device_data = device.arrays[index].data();
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(in ? device_data : host_data[index], in ? host_data[index] : device_data,
                          reference.inputs.bytes(index),
                          in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream.get()));
    }
  };
  const Call call = declaration->gpu(point, device.buffers, stream.get());
  const auto iteration = [&](PhasedWallTimer::Marks& marks) {
    copies(true);
    marks.end(Phase::h2d);
    call();
    marks.end(Phase::compute);
    copies(false);
    marks.end(Phase::d2h);
  };

  PhasedWallTimer timer(stream.get(), PhasedWallTimer::Report::wall, &meter);
  timer.run_once(iteration);
  GPUBENCH_CUDA_CHECK(cudaGetLastError());
  const CheckResult check = compare_outputs(*declaration, reference.outputs, host_data.data());
  if (!check.passed) {
    state.SkipWithError(check.message.c_str());
    return;
  }
  // Each iteration starts from the same inputs: a buffer read and written in place is restored on
  // the host before it (outside the timed part), so its values do not drift over the iterations.
  const auto restore = [&] {
    for (std::size_t index = 0; index < reference.inputs.size(); ++index) {
      if (reference.inputs.declaration(index).role != BufferRole::input_output) continue;
      std::memcpy(host_data[index], reference.inputs.data(index), reference.inputs.bytes(index));
    }
  };
  const PhaseTimes phases = timer.run(state, restore, iteration);
  GPUBENCH_CUDA_CHECK(cudaGetLastError());

  const Work work = declaration->work(point);
  ResultRow row(state, id);
  row.phases(phases)
      .work(work.flop, work.bytes, phases.wall_s, gpu_peak(gpu, reference.inputs))
      .set(Counter::bytes_h2d, bytes_h2d)
      .set(Counter::bytes_d2h, bytes_d2h)
      .set(Counter::copies_h2d, copies_h2d)
      .set(Counter::copies_d2h, copies_d2h)
      .set(Counter::kernels, declaration->kernels_per_call)
      .set(Counter::pinned, 1)
      .set(Counter::device_bytes, static_cast<double>(device_bytes))
      .device_memory(device_bytes, meter.peak_bytes())
      .set(Counter::max_error_over_bound, check.worst_error_over_bound);
  if (work.bytes > 0) row.set(Counter::bytes_per_s, work.bytes / phases.wall_s);
  describe_point(&row, point);
  row.publish();
}

}  // namespace

void register_workload_gpu_rows(const std::shared_ptr<const Workload>& workload) {
  const Workload::Declaration& declaration = workload->declaration();
  const std::vector<Point> points = points_of(declaration);
  // Each point's two rows one after the other: they share its CPU reference (reference_for).
  for (std::size_t index = 0; index < points.size(); ++index) {
    register_row(
        workload_row_id(declaration, "gpu", declaration.gpu_variant + "_kernel", points[index]),
        IterationTime::manual, gpu_kernel_row, workload, index, points[index]);
    register_row(workload_row_id(declaration, "gpu", declaration.gpu_variant + "_e2e",
                                 points[index], "pinned"),
                 IterationTime::manual, gpu_e2e_row, workload, index, points[index]);
  }
}

}  // namespace gpubench
