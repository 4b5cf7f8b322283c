// The probes whose numbers explain the speedup curves (docs/timing-method.md, "The overhead
// model").
//
// overhead/launch/burst/kernels:N   N empty kernels issued back to back, then one synchronise.
//                                   t_issue_per_launch: host time to enqueue one launch;
//                                   t_per_launch: whole burst / N (issue-bound or GPU-bound).
// overhead/launch/roundtrip         one empty kernel + cudaStreamSynchronize.
// overhead/launch/graph/nodes:N     a CUDA graph of N empty kernel nodes, launched + synchronised;
//                                   t_per_node = time / N.
// overhead/launch/event_record      host cost of one cudaEventRecord.
// overhead/h2d|d2h/<pinned|pageable>/bytes:B
//                                   one cudaMemcpyAsync: its event time (t_h2d or t_d2h, the row's
//                                   time) and the host time of the synchronised copy (t_wall).
//                                   Fitting t = alpha + bytes / beta over B gives latency and
//                                   bandwidth.
// overhead/sync/stream|device       cudaStreamSynchronize / cudaDeviceSynchronize with nothing
//                                   queued.
// Every probe but the copies is a cost the host pays, timed with the host clock
// (harness/host_clock_timer.hpp); the copies with harness/phased_wall_timer.hpp.
// Device memory: every probe measures its peak from before it creates its stream
// (harness/device_memory.hpp); its model is the device buffer a copy probe allocates, and 0 for
// the launch, event and synchronisation probes, which allocate nothing themselves (what the
// stream, a loaded module or an instantiated graph take shows in the peak alone).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <string>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/device_memory.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/phased_wall_timer.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/probes/empty_kernel.hpp"

namespace gpubench {

namespace {

// One empty kernel and a wait: loads the module and creates the context's launch machinery.
void warm_up_launches(const Stream& stream) {
  GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
  stream.synchronize();
}

void launch_burst(benchmark::State& state, const RowId& id, int kernels) {
  require_gpu();
  DeviceMemoryMeter meter;
  Stream stream;
  warm_up_launches(stream);
  double issue_total_s = 0;
  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  const double seconds_per_iteration = timer.run(state, [&](const Stopwatch& stopwatch) {
    // Every launch is checked (cudaGetLastError, tens of nanoseconds on the host), as
    // frameworks check theirs: the probe measures the cost of a checked launch.
    for (int launch = 0; launch < kernels; ++launch) {
      GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
    }
    issue_total_s += stopwatch.elapsed_s();
    stream.synchronize();
  });
  const double iterations = static_cast<double>(state.iterations());
  ResultRow(state, id)
      .set(Counter::t_issue_per_launch, issue_total_s / iterations / kernels)
      .set(Counter::t_per_launch, seconds_per_iteration / kernels)
      .set(Counter::t_wall, seconds_per_iteration)
      .device_memory(0, meter.peak_bytes())
      .label(LabelKey::probe, "launch_burst")
      .publish();
}

void launch_roundtrip(benchmark::State& state, const RowId& id) {
  require_gpu();
  DeviceMemoryMeter meter;
  Stream stream;
  warm_up_launches(stream);
  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  const double seconds_per_iteration = timer.run(state, [&] {
    GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
    stream.synchronize();
  });
  ResultRow(state, id)
      .set(Counter::kernels, 1)
      .set(Counter::t_wall, seconds_per_iteration)
      .device_memory(0, meter.peak_bytes())
      .label(LabelKey::probe, "launch_roundtrip")
      .publish();
}

void launch_graph(benchmark::State& state, const RowId& id, int nodes) {
  require_gpu();
  DeviceMemoryMeter meter;
  Stream stream;
  GPUBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  for (int node = 0; node < nodes; ++node) {
    GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
  }
  const CudaGraph graph = CudaGraph::end_capture(stream.get());
  graph.launch(stream.get());  // first launch uploads the graph to the device
  stream.synchronize();
  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  const double seconds_per_iteration = timer.run(state, [&] {
    graph.launch(stream.get());
    stream.synchronize();
  });
  ResultRow(state, id)
      .set(Counter::kernels, nodes)
      .set(Counter::t_per_node, seconds_per_iteration / nodes)
      .set(Counter::t_wall, seconds_per_iteration)
      .device_memory(0, meter.peak_bytes())
      .label(LabelKey::probe, "graph_launch")
      .publish();
}

void event_record(benchmark::State& state, const RowId& id) {
  require_gpu();
  DeviceMemoryMeter meter;
  Stream stream;
  Event event;
  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  const double seconds_per_iteration = timer.run(state, [&] { event.record(stream.get()); });
  stream.synchronize();
  ResultRow(state, id)
      .set(Counter::t_event_record, seconds_per_iteration)
      .device_memory(0, meter.peak_bytes())
      .label(LabelKey::probe, "event_record")
      .publish();
}

void transfer(benchmark::State& state, const RowId& id, bool host_to_device, HostMemory host_memory,
              std::size_t bytes) {
  require_gpu();
  if (!fits_on_device(state, bytes)) return;
  DeviceMemoryMeter meter;
  Stream stream;
  DeviceBuffer device(bytes);
  HostBuffer host(bytes, host_memory);
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(device.data(), 1, bytes, stream.get()));
  void* destination = host_to_device ? device.data() : host.data();
  const void* source = host_to_device ? host.data() : device.data();
  const cudaMemcpyKind kind = host_to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  const Phase phase = host_to_device ? Phase::h2d : Phase::d2h;
  PhasedWallTimer timer(stream.get(), PhasedWallTimer::Report::events, &meter);
  const PhaseTimes phases = timer.run(state, [&](PhasedWallTimer::Marks& marks) {
    GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream.get()));
    marks.end(phase);
  });
  const double copy_s = host_to_device ? phases.h2d_s : phases.d2h_s;
  ResultRow(state, id)
      .set(host_to_device ? Counter::bytes_h2d : Counter::bytes_d2h, static_cast<double>(bytes))
      .set(host_to_device ? Counter::t_h2d : Counter::t_d2h, copy_s)
      .set(Counter::t_wall, phases.wall_s)
      .set(Counter::bytes_per_s, static_cast<double>(bytes) / copy_s)
      .set(Counter::pinned, host_memory == HostMemory::pinned ? 1 : 0)
      .set(Counter::device_bytes, static_cast<double>(bytes))
      .device_memory(bytes, meter.peak_bytes())
      .label(LabelKey::probe, host_to_device ? "h2d" : "d2h")
      .label(LabelKey::host, host_memory_name(host_memory))
      .publish();
}

void synchronize_idle(benchmark::State& state, const RowId& id, bool whole_device) {
  require_gpu();
  DeviceMemoryMeter meter;
  Stream stream;
  stream.synchronize();
  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  const double seconds_per_iteration = timer.run(state, [&] {
    if (whole_device) {
      GPUBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    } else {
      stream.synchronize();
    }
  });
  ResultRow(state, id)
      .set(Counter::t_sync, seconds_per_iteration)
      .device_memory(0, meter.peak_bytes())
      .label(LabelKey::probe, whole_device ? "sync_device" : "sync_stream")
      .publish();
}

// overhead/<stem...>: the probes are GPU rows named by what they probe.
RowId probe_id(const std::string& stem, const char* variant) {
  RowId id{"overhead", "gpu", variant, {}};
  id.name_stem = "overhead/" + stem;
  return id;
}

}  // namespace

void register_overhead_probes(const Sweep& sweep) {
  constexpr IterationTime kManual = IterationTime::manual;
  for (int kernels : sweep.launch_counts) {
    register_row(probe_id("launch/burst", "launch_burst")
                     .with(number_parameter("kernels", kernels, Counter::kernels)),
                 kManual, launch_burst, kernels);
  }
  register_row(probe_id("launch/roundtrip", "launch_roundtrip"), kManual, launch_roundtrip);
  for (int nodes : sweep.launch_counts) {
    register_row(probe_id("launch/graph", "graph_launch")
                     .with(number_parameter("nodes", nodes, std::nullopt)),
                 kManual, launch_graph, nodes);
  }
  register_row(probe_id("launch/event_record", "event_record"), kManual, event_record);
  for (bool host_to_device : {true, false}) {
    const char* direction = host_to_device ? "h2d" : "d2h";
    for (HostMemory host_memory : {HostMemory::pinned, HostMemory::pageable}) {
      for (std::size_t bytes : sweep.transfer_bytes) {
        const RowId id =
            probe_id(std::string(direction) + "/" + host_memory_name(host_memory), direction)
                .with(number_parameter("bytes", static_cast<long long>(bytes), Counter::bytes));
        register_row(id, kManual, transfer, host_to_device, host_memory, bytes);
      }
    }
  }
  register_row(probe_id("sync/stream", "sync_stream"), kManual, synchronize_idle, false);
  register_row(probe_id("sync/device", "sync_device"), kManual, synchronize_idle, true);
}

}  // namespace gpubench
