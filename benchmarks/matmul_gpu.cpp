// matmul/gpu/cublas_kernel/dtype:D/m:M/n:N/k:K/manual_time
//   operands already on the device; the GEMM alone from cold caches (harness/cold_l2_timer.hpp).
// matmul/gpu/cublas_e2e/dtype:D/host:<pinned|pageable>/m:M/n:N/k:K/manual_time
//   host operands -> H2D -> GEMM -> D2H -> synchronise, with each phase's event time and the host
//   time of the whole synchronised iteration as the row's time (harness/phased_wall_timer.hpp).
//
// The stream, cuBLAS handle and buffers are created once per benchmark, outside the timed loop;
// the GEMM is validated once against a double reference before timing.
//
// Device memory: device_bytes_model is A + B + C at the row's storage types (the fixture gives
// cuBLAS no workspace of its own, so cuBLAS's is in the measured peak only); device_bytes_peak is
// measured from before the stream and handle exist (harness/device_memory.hpp). Kernel-only rows
// also hold the cold-L2 timer's flush buffer, which device_bytes counts and the model does not.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/cold_l2_timer.hpp"
#include "harness/device_memory.hpp"
#include "harness/gpu_info.hpp"
#include "harness/phased_wall_timer.hpp"
#include "harness/result_row.hpp"
#include "harness/validation.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/gemm/gemm_cuda.hpp"

namespace gpubench {

namespace {

using cuda::Precision;

// A, B and C at the row's storage types: the buffers the row allocates, and the GEMM's memory
// traffic by the minimum-traffic model (A and B read once, C written once; beta = 0, so C is not
// read).
struct GemmBytes {
  std::size_t a, b, c;
  GemmBytes(Precision precision, const MatmulShape& shape)
      : a(static_cast<std::size_t>(shape.m) * shape.k * cuda::operand_element_bytes(precision)),
        b(static_cast<std::size_t>(shape.k) * shape.n * cuda::operand_element_bytes(precision)),
        c(static_cast<std::size_t>(shape.m) * shape.n * cuda::output_element_bytes(precision)) {}
  std::size_t operands() const { return a + b + c; }
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

void matmul_gpu_kernel(benchmark::State& state, const RowId& id, Precision precision,
                       const MatmulShape& shape) {
  const GpuInfo& gpu = require_gpu();
  const GemmBytes bytes(precision, shape);
  const std::size_t device_bytes = bytes.operands() + ColdL2Timer::device_bytes(gpu.l2_cache_bytes);
  if (!fits_on_device(state, device_bytes)) return;

  DeviceMemoryMeter meter;
  Stream stream;
  CublasHandle handle(stream.get());
  DeviceBuffer a(bytes.a);
  DeviceBuffer b(bytes.b);
  DeviceBuffer c(bytes.c);
  const auto gemm = [&] {
    GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                               a.data(), b.data(), c.data()));
  };
  CheckResult check;
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
    gemm();
    std::vector<std::byte> c_host(bytes.c);
    GPUBENCH_CUDA_CHECK(
        cudaMemcpyAsync(c_host.data(), c.data(), bytes.c, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    check = check_result(precision, shape, host, c_host.data());
    if (!check.passed) {
      state.SkipWithError(check.message.c_str());
      return;
    }
  }

  ColdL2Timer timer(stream.get(), gpu.l2_cache_bytes, &meter);
  const double seconds_per_iteration = timer.run(state, gemm);

  // Kernel-only rows have no t_wall: launch and synchronisation are the e2e rows' and probes'.
  ResultRow row(state, id);
  row.set(Counter::t_h2d, 0)
      .set(Counter::t_compute, seconds_per_iteration)
      .set(Counter::t_d2h, 0)
      .work(2.0 * shape.m * shape.n * shape.k, static_cast<double>(bytes.operands()),
            seconds_per_iteration, gpu_peak_flops(gpu, cuda::precision_name(precision)))
      .set(Counter::bytes_h2d, 0)
      .set(Counter::bytes_d2h, 0)
      .set(Counter::kernels, 1)  // cuBLAS may split-K into 2; counted as one library call
      .set(Counter::device_bytes, static_cast<double>(device_bytes))
      .device_memory(bytes.operands(), meter.peak_bytes())
      .set(Counter::max_error_over_bound, check.worst_error_over_bound)
      .label(LabelKey::shape, shape.family)
      .publish();
}

void matmul_gpu_e2e(benchmark::State& state, const RowId& id, Precision precision,
                    const MatmulShape& shape, HostMemory host_memory) {
  const GpuInfo& gpu = require_gpu();
  const GemmBytes bytes(precision, shape);
  const std::size_t device_bytes = bytes.operands();
  if (!fits_on_device(state, device_bytes)) return;

  DeviceMemoryMeter meter;
  Stream stream;
  CublasHandle handle(stream.get());
  DeviceBuffer a(bytes.a);
  DeviceBuffer b(bytes.b);
  DeviceBuffer c(bytes.c);
  HostBuffer a_host(bytes.a, host_memory);
  HostBuffer b_host(bytes.b, host_memory);
  HostBuffer c_host(bytes.c, host_memory);
  const HostOperands operands(precision, shape);
  std::memcpy(a_host.data(), operands.a.data(), bytes.a);
  std::memcpy(b_host.data(), operands.b.data(), bytes.b);

  const auto iteration = [&](PhasedWallTimer::Marks& marks) {
    GPUBENCH_CUDA_CHECK(
        cudaMemcpyAsync(a.data(), a_host.data(), bytes.a, cudaMemcpyHostToDevice, stream.get()));
    GPUBENCH_CUDA_CHECK(
        cudaMemcpyAsync(b.data(), b_host.data(), bytes.b, cudaMemcpyHostToDevice, stream.get()));
    marks.end(Phase::h2d);
    GPUBENCH_CUBLAS_CHECK(cuda::gemm_row_major(handle.get(), precision, shape.m, shape.n, shape.k,
                                               a.data(), b.data(), c.data()));
    marks.end(Phase::compute);
    GPUBENCH_CUDA_CHECK(
        cudaMemcpyAsync(c_host.data(), c.data(), bytes.c, cudaMemcpyDeviceToHost, stream.get()));
    marks.end(Phase::d2h);
  };

  PhasedWallTimer timer(stream.get(), PhasedWallTimer::Report::wall, &meter);
  // Validation on the host result of one untimed iteration, with C poisoned beforehand.
  std::memset(c_host.data(), 0xFF, bytes.c);
  GPUBENCH_CUDA_CHECK(cudaMemsetAsync(c.data(), 0xFF, bytes.c, stream.get()));
  timer.run_once(iteration);
  const CheckResult check = check_result(precision, shape, operands, c_host.data());
  if (!check.passed) {
    state.SkipWithError(check.message.c_str());
    return;
  }
  const PhaseTimes phases = timer.run(state, iteration);

  ResultRow row(state, id);
  row.phases(phases)
      .work(2.0 * shape.m * shape.n * shape.k, static_cast<double>(bytes.operands()), phases.wall_s,
            gpu_peak_flops(gpu, cuda::precision_name(precision)))
      .set(Counter::bytes_h2d, static_cast<double>(bytes.a + bytes.b))
      .set(Counter::bytes_d2h, static_cast<double>(bytes.c))
      .set(Counter::copies_h2d, 2)  // A and B: two copies, two latencies
      .set(Counter::copies_d2h, 1)
      .set(Counter::kernels, 1)
      .set(Counter::pinned, host_memory == HostMemory::pinned ? 1 : 0)
      .set(Counter::device_bytes, static_cast<double>(device_bytes))
      .device_memory(device_bytes, meter.peak_bytes())
      .set(Counter::max_error_over_bound, check.worst_error_over_bound)
      .label(LabelKey::shape, shape.family)
      .publish();
}

RowId matmul_gpu_id(const char* variant, Precision precision, const MatmulShape& shape,
                    const char* host) {
  RowId id{"matmul",
           "gpu",
           variant,
           {text_parameter("dtype", cuda::precision_name(precision), LabelKey::dtype)}};
  if (host != nullptr) id.parameters.push_back(text_parameter("host", host, LabelKey::host));
  id.parameters.push_back(number_parameter("m", shape.m, Counter::m));
  id.parameters.push_back(number_parameter("n", shape.n, Counter::n));
  id.parameters.push_back(number_parameter("k", shape.k, Counter::k));
  return id;
}

}  // namespace

void register_matmul_gpu(const Sweep& sweep) {
  const auto register_kernel = [](Precision precision, const MatmulShape& shape) {
    register_row(matmul_gpu_id("cublas_kernel", precision, shape, nullptr), IterationTime::manual,
                 matmul_gpu_kernel, precision, shape);
  };
  for (Precision precision : cuda::kAllPrecisions) {
    for (const MatmulShape& shape : sweep.gpu_shapes) register_kernel(precision, shape);
    if (precision != Precision::fp32 && precision != Precision::bf16) continue;
    for (const MatmulShape& shape : sweep.gpu_layer_shapes) register_kernel(precision, shape);
  }
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    for (HostMemory host_memory : {HostMemory::pinned, HostMemory::pageable}) {
      for (const MatmulShape& shape : sweep.gpu_e2e_shapes) {
        register_row(matmul_gpu_id("cublas_e2e", precision, shape, host_memory_name(host_memory)),
                     IterationTime::manual, matmul_gpu_e2e, precision, shape, host_memory);
      }
    }
  }
}

}  // namespace gpubench
