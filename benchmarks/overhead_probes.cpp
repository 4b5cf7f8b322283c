// The probes whose numbers explain the speedup curves (README, "The overhead model").
//
// overhead/launch/burst/kernels:N   N empty kernels issued back to back, then one synchronise.
//                                   t_issue_per_launch: host time to enqueue one launch;
//                                   t_per_launch: whole burst / N (issue-bound or GPU-bound).
// overhead/launch/roundtrip         one empty kernel + cudaStreamSynchronize, host clock.
// overhead/launch/graph/nodes:N     a CUDA graph of N empty kernel nodes, launched + synchronised;
//                                   t_per_node = time / N.
// overhead/launch/event_record      host cost of one cudaEventRecord.
// overhead/h2d|d2h/<pinned|pageable>/bytes:B
//                                   one cudaMemcpyAsync timed with events (t_h2d or t_d2h) and with
//                                   the host clock around the synchronised copy (t_wall). Fitting
//                                   t = alpha + bytes / beta over B gives latency and bandwidth.
// overhead/sync/stream|device       cudaStreamSynchronize / cudaDeviceSynchronize with nothing
//                                   queued.
// Host-clock probes report the host time as the iteration time (UseManualTime), because the cost
// they measure is the CPU's, which events on the GPU's timeline cannot see.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <string>

#include "benchmarks/bench_support.hpp"
#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/probes/empty_kernel.hpp"

namespace gpubench {

namespace {

using Clock = std::chrono::steady_clock;

void launch_burst(benchmark::State& state, int kernels) {
  run_guarded(state, [&] {
    Stream stream;
    GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));  // module load, first launch
    stream.synchronize();
    double issue_s = 0;
    double total_s = 0;
    for (auto _ : state) {
      const auto start = Clock::now();
      // Every launch is checked (cudaGetLastError, tens of nanoseconds on the host), as
      // frameworks check theirs: the probe measures the cost of a checked launch.
      for (int launch = 0; launch < kernels; ++launch) {
        GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
      }
      const double issued = seconds_since(start);
      stream.synchronize();
      const double total = seconds_since(start);
      issue_s += issued;
      total_s += total;
      state.SetIterationTime(total);
    }
    const double iterations = static_cast<double>(state.iterations());
    state.counters["kernels"] = kernels;
    state.counters["t_issue_per_launch"] = issue_s / iterations / kernels;
    state.counters["t_per_launch"] = total_s / iterations / kernels;
    state.counters["t_wall"] = total_s / iterations;
    state.SetLabel("probe=launch_burst");
  });
}

void launch_roundtrip(benchmark::State& state) {
  run_guarded(state, [&] {
    Stream stream;
    GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
    stream.synchronize();
    double total_s = 0;
    for (auto _ : state) {
      const auto start = Clock::now();
      GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
      stream.synchronize();
      const double total = seconds_since(start);
      total_s += total;
      state.SetIterationTime(total);
    }
    state.counters["kernels"] = 1;
    state.counters["t_wall"] = total_s / static_cast<double>(state.iterations());
    state.SetLabel("probe=launch_roundtrip");
  });
}

void launch_graph(benchmark::State& state, int nodes) {
  run_guarded(state, [&] {
    Stream stream;
    GPUBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    for (int node = 0; node < nodes; ++node) {
      GPUBENCH_CUDA_CHECK(cuda::launch_empty_kernel(stream.get()));
    }
    const CudaGraph graph = CudaGraph::end_capture(stream.get());
    graph.launch(stream.get());  // first launch uploads the graph to the device
    stream.synchronize();
    double total_s = 0;
    for (auto _ : state) {
      const auto start = Clock::now();
      graph.launch(stream.get());
      stream.synchronize();
      const double total = seconds_since(start);
      total_s += total;
      state.SetIterationTime(total);
    }
    const double iterations = static_cast<double>(state.iterations());
    state.counters["kernels"] = nodes;
    state.counters["t_per_node"] = total_s / iterations / nodes;
    state.counters["t_wall"] = total_s / iterations;
    state.SetLabel("probe=graph_launch");
  });
}

void event_record(benchmark::State& state) {
  run_guarded(state, [&] {
    Stream stream;
    Event event;
    double total_s = 0;
    for (auto _ : state) {
      const auto start = Clock::now();
      event.record(stream.get());
      const double total = seconds_since(start);
      total_s += total;
      state.SetIterationTime(total);
    }
    stream.synchronize();
    state.counters["t_event_record"] = total_s / static_cast<double>(state.iterations());
    state.SetLabel("probe=event_record");
  });
}

void transfer(benchmark::State& state, bool host_to_device, HostMemory host_memory,
              std::size_t bytes) {
  run_guarded(state, [&] {
    if (!fits_on_device(state, bytes)) return;
    Stream stream;
    Event start;
    Event stop;
    DeviceBuffer device(bytes);
    HostBuffer host(bytes, host_memory);
    GPUBENCH_CUDA_CHECK(cudaMemsetAsync(device.data(), 1, bytes, stream.get()));
    void* destination = host_to_device ? device.data() : host.data();
    const void* source = host_to_device ? host.data() : device.data();
    const cudaMemcpyKind kind = host_to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    GPUBENCH_CUDA_CHECK(
        cudaMemcpyAsync(destination, source, bytes, kind, stream.get()));  // warm-up
    stream.synchronize();
    double copy_s = 0;
    double wall_s = 0;
    for (auto _ : state) {
      const auto wall_start = Clock::now();
      start.record(stream.get());
      GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream.get()));
      stop.record(stream.get());
      stop.synchronize();
      const double wall = seconds_since(wall_start);
      const double copy = Event::seconds_between(start, stop);
      copy_s += copy;
      wall_s += wall;
      state.SetIterationTime(copy);
    }
    const double iterations = static_cast<double>(state.iterations());
    const char* direction = host_to_device ? "h2d" : "d2h";
    state.counters["bytes"] = static_cast<double>(bytes);
    state.counters[host_to_device ? "bytes_h2d" : "bytes_d2h"] = static_cast<double>(bytes);
    state.counters[host_to_device ? "t_h2d" : "t_d2h"] = copy_s / iterations;
    state.counters["t_wall"] = wall_s / iterations;
    state.counters["bytes_per_s"] = static_cast<double>(bytes) * iterations / copy_s;
    state.counters["pinned"] = host_memory == HostMemory::pinned ? 1 : 0;
    state.counters["device_bytes"] = static_cast<double>(bytes);
    state.SetLabel(std::string("probe=") + direction + " host=" + host_memory_name(host_memory));
  });
}

void synchronize_idle(benchmark::State& state, bool whole_device) {
  run_guarded(state, [&] {
    Stream stream;
    stream.synchronize();
    double total_s = 0;
    for (auto _ : state) {
      const auto start = Clock::now();
      if (whole_device) {
        GPUBENCH_CUDA_CHECK(cudaDeviceSynchronize());
      } else {
        stream.synchronize();
      }
      const double total = seconds_since(start);
      total_s += total;
      state.SetIterationTime(total);
    }
    state.counters["t_sync"] = total_s / static_cast<double>(state.iterations());
    state.SetLabel(whole_device ? "probe=sync_device" : "probe=sync_stream");
  });
}

}  // namespace

void register_overhead_probes(const Sweep& sweep) {
  for (int kernels : sweep.launch_counts) {
    register_manual_time("overhead/launch/burst" + segment("kernels", kernels), launch_burst,
                         kernels);
  }
  register_manual_time("overhead/launch/roundtrip", launch_roundtrip);
  for (int nodes : sweep.launch_counts) {
    register_manual_time("overhead/launch/graph" + segment("nodes", nodes), launch_graph, nodes);
  }
  register_manual_time("overhead/launch/event_record", event_record);
  for (bool host_to_device : {true, false}) {
    for (HostMemory host_memory : {HostMemory::pinned, HostMemory::pageable}) {
      for (std::size_t bytes : sweep.transfer_bytes) {
        const std::string name = std::string("overhead/") + (host_to_device ? "h2d/" : "d2h/") +
                                 host_memory_name(host_memory) +
                                 segment("bytes", static_cast<long long>(bytes));
        register_manual_time(name, transfer, host_to_device, host_memory, bytes);
      }
    }
  }
  register_manual_time("overhead/sync/stream", synchronize_idle, false);
  register_manual_time("overhead/sync/device", synchronize_idle, true);
}

}  // namespace gpubench
