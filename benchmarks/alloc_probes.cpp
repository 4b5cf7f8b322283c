// What allocating and freeing memory costs the host, per call, from 4 KiB to 1 GiB: the price a
// training step pays when it allocates its buffers every step instead of keeping them, and what a
// caching allocator saves.
//
// overhead/alloc/malloc/device/bytes:B   one cudaMalloc. Freeing the previous iteration's
//                                        allocation is the untimed preparation.
// overhead/alloc/free/device/bytes:B     one cudaFree. The cudaMalloc it frees is the untimed
//                                        preparation.
// overhead/alloc/async/bytes:B           cudaMallocAsync + cudaFreeAsync on the benchmark's stream,
//                                        from the device's memory pool, warm: the pool keeps what
//                                        is freed (release threshold raised, as frameworks'
//                                        caching allocators keep their memory) and already holds
//                                        B bytes from an untimed first round, so the pair is a
//                                        reuse, not a trip to the driver.
// overhead/alloc/malloc/pinned/bytes:B   one cudaMallocHost (page-locked host memory), preparation
//                                        as for cudaMalloc.
// overhead/alloc/free/pinned/bytes:B     one cudaFreeHost, preparation as for cudaFree.
//
// Every probe is a cost the host pays: the host clock around the call alone
// (harness/host_clock_timer.hpp, manual time; preparation outside the clock). t_wall is the mean
// seconds per call. One allocation and free of the size runs first, untimed (context and driver
// state, the pool's first growth), and its pointer is checked to be the kind of memory asked for.
// Each row runs kRepetitions repetitions: allocation times vary with the driver's and the OS's
// state, so the report shows their median and slowest decile.
//
// Device memory: device_bytes_model is B for the device and pool probes and 0 for the pinned host
// probes; device_bytes_peak is measured from before the first round (harness/device_memory.hpp),
// after the first timed iteration's preparation and body, so both the allocating and the freeing
// probes hold their allocation at one sample. On the pinned probes it shows what the driver takes
// on the device for page-locked host memory, if anything.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/device_memory.hpp"
#include "harness/host_clock_timer.hpp"
#include "harness/result_row.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

namespace {

// Ten repetitions: the slowest decile is then the slowest repetition but one.
constexpr int kRepetitions = 10;

enum class Operation { allocate, release };
enum class Memory { device, pinned };

const char* memory_name(Memory memory) { return memory == Memory::pinned ? "pinned" : "device"; }

// Throws unless `pointer` is memory of the kind a probe allocates (device or page-locked host).
void check_memory_kind(const void* pointer, Memory memory) {
  cudaPointerAttributes attributes{};
  GPUBENCH_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  const cudaMemoryType expected =
      memory == Memory::pinned ? cudaMemoryTypeHost : cudaMemoryTypeDevice;
  if (pointer == nullptr || attributes.type != expected) {
    throw std::runtime_error(std::string("the allocation is not ") +
                             (memory == Memory::pinned ? "page-locked host" : "device") +
                             " memory");
  }
}

// cudaMalloc / cudaFree (device) or cudaMallocHost / cudaFreeHost (pinned), timed one way, with the
// other as the untimed preparation of each iteration.
template <typename Buffer>
double time_allocation(benchmark::State& state, Operation operation, std::size_t bytes,
                       Memory memory, DeviceMemoryMeter* meter) {
  Buffer buffer(bytes);  // untimed first round
  check_memory_kind(buffer.data(), memory);
  buffer.reset();
  HostClockTimer timer(HostClockTimer::Report::manual, meter);
  if (operation == Operation::allocate) {
    return timer.run(
        state, [&] { buffer.reset(); }, [&] { buffer = Buffer(bytes); });
  }
  return timer.run(
      state, [&] { buffer = Buffer(bytes); }, [&] { buffer.reset(); });
}

void allocate_or_release(benchmark::State& state, const RowId& id, Operation operation,
                         Memory memory, std::size_t bytes) {
  require_gpu();
  const bool pinned = memory == Memory::pinned;
  if (!pinned && !fits_on_device(state, bytes)) return;
  DeviceMemoryMeter meter;
  const double seconds_per_call =
      pinned ? time_allocation<PinnedHostBuffer>(state, operation, bytes, memory, &meter)
             : time_allocation<DeviceBuffer>(state, operation, bytes, memory, &meter);
  ResultRow row(state, id);
  row.set(Counter::t_wall, seconds_per_call)
      .set(Counter::pinned, pinned ? 1 : 0)
      .device_memory(pinned ? 0 : bytes, meter.peak_bytes());
  if (!pinned) row.set(Counter::device_bytes, static_cast<double>(bytes));
  row.label(LabelKey::probe, operation == Operation::allocate ? "alloc_malloc" : "alloc_free")
      .label(LabelKey::host, memory_name(memory))
      .publish();
}

void allocate_from_pool(benchmark::State& state, const RowId& id, std::size_t bytes) {
  require_gpu();
  if (!fits_on_device(state, bytes)) return;
  DeviceMemoryMeter meter;
  int device = 0;
  GPUBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const RetainingMemPool pool(device);
  const Stream stream;
  // No RAII owner for the pointer inside the timed pair: nothing runs between the allocation and
  // its free but their checks, and a failed free leaves the memory to the pool, which the
  // RetainingMemPool guard trims.
  const auto allocate_and_free = [&] {
    void* data = nullptr;
    GPUBENCH_CUDA_CHECK(cudaMallocAsync(&data, bytes, stream.get()));
    GPUBENCH_CUDA_CHECK(cudaFreeAsync(data, stream.get()));
    return data;
  };
  // Untimed first round: the pool grows to hold `bytes`, which it then keeps.
  void* first = nullptr;
  GPUBENCH_CUDA_CHECK(cudaMallocAsync(&first, bytes, stream.get()));
  stream.synchronize();
  check_memory_kind(first, Memory::device);
  GPUBENCH_CUDA_CHECK(cudaFreeAsync(first, stream.get()));
  stream.synchronize();

  HostClockTimer timer(HostClockTimer::Report::manual, &meter);
  // The stream is drained before each pair (untimed) so every pair finds the freed block ready.
  const double seconds_per_pair = timer.run(
      state, [&] { stream.synchronize(); }, [&] { benchmark::DoNotOptimize(allocate_and_free()); });
  stream.synchronize();
  ResultRow(state, id)
      .set(Counter::t_wall, seconds_per_pair)
      .set(Counter::pinned, 0)
      .set(Counter::device_bytes, static_cast<double>(bytes))
      .device_memory(bytes, meter.peak_bytes())
      .label(LabelKey::probe, "alloc_async")
      .label(LabelKey::host, "device")
      .publish();
}

RowId alloc_id(const std::string& stem, const char* variant, std::size_t bytes) {
  RowId id{"overhead",
           "gpu",
           variant,
           {number_parameter("bytes", static_cast<long long>(bytes), Counter::bytes)}};
  id.name_stem = "overhead/alloc/" + stem;
  return id;
}

}  // namespace

void register_alloc_probes(const Sweep& sweep) {
  const RowTiming timing{IterationTime::manual, kRepetitions};
  for (std::size_t bytes : sweep.alloc_bytes) {
    for (Memory memory : {Memory::device, Memory::pinned}) {
      const std::string where = memory_name(memory);
      register_row(alloc_id("malloc/" + where, "alloc_malloc", bytes), timing, allocate_or_release,
                   Operation::allocate, memory, bytes);
      register_row(alloc_id("free/" + where, "alloc_free", bytes), timing, allocate_or_release,
                   Operation::release, memory, bytes);
    }
    register_row(alloc_id("async", "alloc_async", bytes), timing, allocate_from_pool, bytes);
  }
}

}  // namespace gpubench
