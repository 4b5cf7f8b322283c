// matmul/gpu/cublas_kernel/dtype:D/m:M/n:N/k:K/manual_time
//   operands already on the device; CUDA events around the GEMM only; L2 flushed before each
//   iteration (outside the events, and still running while the GEMM is enqueued, so the host's
//   launch latency stays out of the window) so every iteration starts from cold caches.
// matmul/gpu/cublas_e2e/dtype:D/host:<pinned|pageable>/m:M/n:N/k:K/manual_time
//   host operands -> H2D -> GEMM -> D2H -> synchronise. Events between every phase give t_h2d,
//   t_compute, t_d2h; the host steady clock around the synchronised iteration gives t_wall, which
//   is also the iteration time reported (what an application waiting for C experiences).
//
// The stream, cuBLAS handle, events and buffers are created once per benchmark, outside the timed
// loop, and the GEMM is run once for validation and a few times to warm up (module load, cuBLAS
// heuristics, first-touch of device pages) before timing starts.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "benchmarks/bench_support.hpp"
#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/gpu_info.hpp"
#include "harness/l2_flush.hpp"
#include "harness/validation.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/gemm/gemm_cuda.hpp"

namespace gpubench {

namespace {

using cuda::Precision;

constexpr int kWarmupIterations = 3;

struct GemmBytes {
  std::size_t a, b, c;
  GemmBytes(Precision precision, const MatmulShape& shape)
      : a(static_cast<std::size_t>(shape.m) * shape.k * cuda::operand_element_bytes(precision)),
        b(static_cast<std::size_t>(shape.k) * shape.n * cuda::operand_element_bytes(precision)),
        c(static_cast<std::size_t>(shape.m) * shape.n * cuda::output_element_bytes(precision)) {}
};

// Host copies of A and B in the precision's storage type, from fixed-seed uniform values.
struct HostOperands {
  std::vector<std::byte> a, b;
  HostOperands(Precision precision, const MatmulShape& shape) {
    const std::size_t a_count = static_cast<std::size_t>(shape.m) * shape.k;
    const std::size_t b_count = static_cast<std::size_t>(shape.k) * shape.n;
    std::vector<float> values(std::max(a_count, b_count));
    a.resize(a_count * cuda::operand_element_bytes(precision));
    b.resize(b_count * cuda::operand_element_bytes(precision));
    fill_uniform(values.data(), a_count, 1);
    cuda::convert_operands_from_float(precision, values.data(), a.data(), a_count);
    fill_uniform(values.data(), b_count, 2);
    cuda::convert_operands_from_float(precision, values.data(), b.data(), b_count);
  }
};

// Checks host copy `c_host` of C against a double reference built from the exact operand values the
// GPU multiplied. tf32 rounds operands inside the tensor cores, which the reference does not see.
CheckResult check_result(Precision precision, const MatmulShape& shape, const HostOperands& host,
                         const void* c_host) {
  const double u_operand =
      precision == Precision::tf32 ? cuda::operand_unit_roundoff(Precision::tf32) : 0.0;
  return check_gemm_sampled(
      shape.m, shape.n, shape.k,
      [&](std::size_t i) { return cuda::operand_as_double(precision, host.a.data(), i); },
      [&](std::size_t i) { return cuda::operand_as_double(precision, host.b.data(), i); },
      [&](std::size_t i) { return cuda::output_as_double(precision, c_host, i); },
      GemmRoundoff{u_operand, cuda::accumulator_unit_roundoff(precision),
                   cuda::output_unit_roundoff(precision)});
}

void write_shape_counters(benchmark::State& state, const MatmulShape& shape) {
  state.counters["m"] = shape.m;
  state.counters["n"] = shape.n;
  state.counters["k"] = shape.k;
}

void matmul_gpu_kernel(benchmark::State& state, Precision precision, MatmulShape shape) {
  run_guarded(state, [&] {
    const GpuInfo& gpu = *gpu_info();
    const GemmBytes bytes(precision, shape);
    const std::size_t device_bytes =
        bytes.a + bytes.b + bytes.c + L2Flusher::bytes_for(gpu.l2_cache_bytes);
    if (!fits_on_device(state, device_bytes)) return;

    Stream stream;
    CublasHandle handle(stream.get());
    Event start;
    Event stop;
    L2Flusher flusher(gpu.l2_cache_bytes);
    DeviceBuffer a(bytes.a);
    DeviceBuffer b(bytes.b);
    DeviceBuffer c(bytes.c);
    {
      const HostOperands host(precision, shape);
      // Every copy on the benchmark's own stream: a plain cudaMemcpy runs on the legacy default
      // stream, which a non-blocking stream does not wait for, and from pageable memory it may
      // return before the data has landed, so the GEMM could read half-copied operands.
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(a.data(), host.a.data(), bytes.a, cudaMemcpyHostToDevice, stream.get()));
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(b.data(), host.b.data(), bytes.b, cudaMemcpyHostToDevice, stream.get()));
      // All-ones bytes are NaN in every output type: an element the GEMM does not write fails.
      GPUBENCH_CUDA_CHECK(cudaMemsetAsync(c.data(), 0xFF, bytes.c, stream.get()));
      GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                                 a.data(), b.data(), c.data()));
      std::vector<std::byte> c_host(bytes.c);
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(c_host.data(), c.data(), bytes.c, cudaMemcpyDeviceToHost, stream.get()));
      stream.synchronize();
      const CheckResult check = check_result(precision, shape, host, c_host.data());
      if (!check.passed) {
        state.SkipWithError(check.message.c_str());
        return;
      }
      state.counters["max_error_over_bound"] = check.worst_error_over_bound;
    }
    for (int warmup = 0; warmup < kWarmupIterations; ++warmup) {
      GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                                 a.data(), b.data(), c.data()));
    }
    stream.synchronize();

    // The flush is enqueued but not waited for: the memset (L2-sized, at least 32 MiB; see
    // harness/l2_flush.hpp) keeps the GPU busy for 10 us or more while the host enqueues the start
    // event, the GEMM and the stop event, so the event window holds the GEMM's execution alone.
    // Waiting for the flush first would leave the GPU idle when the start event fires and count the
    // host's launch latency as compute (the pitfall nvbench's blocking kernel avoids). Launch and
    // synchronisation costs are what the e2e rows and the overhead probes measure; this row has no
    // t_wall.
    double compute_s = 0;
    for (auto _ : state) {
      flusher.flush(stream.get());
      start.record(stream.get());
      GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                                 a.data(), b.data(), c.data()));
      stop.record(stream.get());
      stop.synchronize();
      const double compute = Event::seconds_between(start, stop);
      state.SetIterationTime(compute);
      compute_s += compute;
    }

    const double seconds_per_iteration = compute_s / static_cast<double>(state.iterations());
    state.counters["t_h2d"] = 0;
    state.counters["t_compute"] = seconds_per_iteration;
    state.counters["t_d2h"] = 0;
    write_flop_counters(state, 2.0 * shape.m * shape.n * shape.k, seconds_per_iteration,
                        gpu_peak_flops(gpu, cuda::precision_name(precision)));
    write_shape_counters(state, shape);
    state.counters["bytes_h2d"] = 0;
    state.counters["bytes_d2h"] = 0;
    state.counters["kernels"] = 1;  // cuBLAS may split-K into 2; counted as one library call
    state.counters["device_bytes"] = static_cast<double>(device_bytes);
    state.SetLabel(std::string("dtype=") + cuda::precision_name(precision) +
                   " shape=" + shape.family);
  });
}

void matmul_gpu_e2e(benchmark::State& state, Precision precision, MatmulShape shape,
                    HostMemory host_memory) {
  run_guarded(state, [&] {
    const GpuInfo& gpu = *gpu_info();
    const GemmBytes bytes(precision, shape);
    const std::size_t device_bytes = bytes.a + bytes.b + bytes.c;
    if (!fits_on_device(state, device_bytes)) return;

    Stream stream;
    CublasHandle handle(stream.get());
    Event before_h2d;
    Event after_h2d;
    Event after_compute;
    Event after_d2h;
    DeviceBuffer a(bytes.a);
    DeviceBuffer b(bytes.b);
    DeviceBuffer c(bytes.c);
    HostBuffer a_host(bytes.a, host_memory);
    HostBuffer b_host(bytes.b, host_memory);
    HostBuffer c_host(bytes.c, host_memory);
    const HostOperands operands(precision, shape);
    std::memcpy(a_host.data(), operands.a.data(), bytes.a);
    std::memcpy(b_host.data(), operands.b.data(), bytes.b);

    const auto iteration = [&] {
      before_h2d.record(stream.get());
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(a.data(), a_host.data(), bytes.a, cudaMemcpyHostToDevice, stream.get()));
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(b.data(), b_host.data(), bytes.b, cudaMemcpyHostToDevice, stream.get()));
      after_h2d.record(stream.get());
      GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                                 a.data(), b.data(), c.data()));
      after_compute.record(stream.get());
      GPUBENCH_CUDA_CHECK(
          cudaMemcpyAsync(c_host.data(), c.data(), bytes.c, cudaMemcpyDeviceToHost, stream.get()));
      after_d2h.record(stream.get());
      after_d2h.synchronize();
    };

    // Validation on the host result of one untimed iteration, with C poisoned beforehand.
    std::memset(c_host.data(), 0xFF, bytes.c);
    GPUBENCH_CUDA_CHECK(cudaMemsetAsync(c.data(), 0xFF, bytes.c, stream.get()));
    iteration();
    const CheckResult check = check_result(precision, shape, operands, c_host.data());
    if (!check.passed) {
      state.SkipWithError(check.message.c_str());
      return;
    }
    for (int warmup = 0; warmup < kWarmupIterations; ++warmup) iteration();

    PhaseTotals totals;
    for (auto _ : state) {
      const auto wall_start = std::chrono::steady_clock::now();
      iteration();
      const double wall = seconds_since(wall_start);
      totals.add(Event::seconds_between(before_h2d, after_h2d),
                 Event::seconds_between(after_h2d, after_compute),
                 Event::seconds_between(after_compute, after_d2h), wall);
      state.SetIterationTime(wall);
    }

    totals.write_counters(state);
    const double seconds_per_iteration = totals.wall_s / static_cast<double>(totals.iterations);
    write_flop_counters(state, 2.0 * shape.m * shape.n * shape.k, seconds_per_iteration,
                        gpu_peak_flops(gpu, cuda::precision_name(precision)));
    write_shape_counters(state, shape);
    state.counters["bytes_h2d"] = static_cast<double>(bytes.a + bytes.b);
    state.counters["bytes_d2h"] = static_cast<double>(bytes.c);
    state.counters["copies_h2d"] = 2;  // A and B: two copies, two latencies
    state.counters["copies_d2h"] = 1;
    state.counters["kernels"] = 1;
    state.counters["pinned"] = host_memory == HostMemory::pinned ? 1 : 0;
    state.counters["device_bytes"] = static_cast<double>(device_bytes);
    state.counters["max_error_over_bound"] = check.worst_error_over_bound;
    state.SetLabel(std::string("dtype=") + cuda::precision_name(precision) +
                   " shape=" + shape.family + " host=" + host_memory_name(host_memory));
  });
}

std::string shape_segments(const MatmulShape& shape) {
  return segment("m", shape.m) + segment("n", shape.n) + segment("k", shape.k);
}

}  // namespace

void register_matmul_gpu(const Sweep& sweep) {
  const auto register_kernel = [](Precision precision, const MatmulShape& shape) {
    const std::string name = std::string("matmul/gpu/cublas_kernel") +
                             segment("dtype", cuda::precision_name(precision)) +
                             shape_segments(shape);
    register_manual_time(name, matmul_gpu_kernel, precision, shape);
  };
  for (Precision precision : cuda::kAllPrecisions) {
    for (const MatmulShape& shape : sweep.gpu_shapes) register_kernel(precision, shape);
    if (precision != Precision::fp32 && precision != Precision::bf16) continue;
    for (const MatmulShape& shape : sweep.gpu_layer_shapes) register_kernel(precision, shape);
  }
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    for (HostMemory host_memory : {HostMemory::pinned, HostMemory::pageable}) {
      for (const MatmulShape& shape : sweep.gpu_e2e_shapes) {
        const std::string name = std::string("matmul/gpu/cublas_e2e") +
                                 segment("dtype", cuda::precision_name(precision)) +
                                 segment("host", host_memory_name(host_memory)) +
                                 shape_segments(shape);
        register_manual_time(name, matmul_gpu_e2e, precision, shape, host_memory);
      }
    }
  }
}

}  // namespace gpubench
