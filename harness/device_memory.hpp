#pragma once
// Measurement policy: the device memory a GPU row holds, read from the driver rather than
// assumed. A DeviceMemoryMeter reads the device's free bytes (cudaMemGetInfo) when it is created,
// which a fixture does after the CUDA context exists and before it allocates anything; it then
// samples the free bytes again at chosen points, and its peak is the baseline less the lowest free
// count seen (never negative). A row reports that peak as device_bytes_peak next to
// device_bytes_model, the bytes its own buffers need by their shapes (ResultRow::device_memory),
// so the difference is what the library, the driver and the runtime add.
//
// The timers (host_clock_timer.hpp, phased_wall_timer.hpp, cold_l2_timer.hpp) take an optional
// meter and sample it, never inside a clock: when run() starts (what the fixture set up: buffers,
// handles, captured graphs), after the warm-up or the first iteration (what first use allocates:
// cuBLAS's workspace on its first product, kernel modules loaded lazily, a graph's upload), and
// after the timed loop (anything that grew while it ran). A fixture creates the meter, hands it to
// its timer and writes meter.peak_bytes(); it says what it times, not when memory is read.
//
// Limits, which is why the counter is a measurement and not an accounting:
// - The count is device-wide: another process allocating or freeing on the same GPU between two
//   samples shows up in the peak.
// - The driver hands memory out in pages (2 MiB on current GPUs): an allocation is seen rounded
//   up to whole pages, a small one as a page, and small allocations may share a page the driver
//   already holds (from memory freed earlier in the process), in which case they are not seen.
// - Memory that cuBLAS or cuBLASLt allocates for its workspace, that a CUDA graph's instantiation
//   or upload takes, that the runtime takes for kernel modules it loads lazily or for local memory
//   counts: that is the point of measuring. Module loading happens once per process, so the first
//   row that uses a kernel pays for it and later rows do not.
// - Memory allocated and freed between two samples is not seen (a temporary inside one iteration);
//   nor is anything before the baseline (the context itself).

#include <climits>
#include <cstddef>
#include <functional>

namespace gpubench {

struct DeviceMemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

// cudaMemGetInfo for the current device. Throws (CudaError, or std::runtime_error in a build
// without CUDA) when it fails.
DeviceMemoryInfo read_device_memory();

class DeviceMemoryMeter {
 public:
  using Reader = std::function<DeviceMemoryInfo()>;

  // Reads the baseline now, through `reader` (the driver unless a test gives another).
  explicit DeviceMemoryMeter(Reader reader = read_device_memory);

  // Reads the free bytes again and keeps the lowest count seen.
  void sample();

  std::size_t baseline_free_bytes() const { return baseline_.free_bytes; }
  std::size_t total_bytes() const { return baseline_.total_bytes; }
  std::size_t lowest_free_bytes() const { return lowest_free_; }
  // Samples taken after the baseline.
  int samples() const { return samples_; }
  // Baseline free bytes less the lowest free count seen; 0 when it never went below the baseline
  // (memory freed by someone else since the baseline reads as more free, not as a negative peak).
  std::size_t peak_bytes() const {
    return baseline_.free_bytes > lowest_free_ ? baseline_.free_bytes - lowest_free_ : 0;
  }

 private:
  Reader reader_;
  DeviceMemoryInfo baseline_;
  std::size_t lowest_free_ = 0;
  int samples_ = 0;
};

// Samples `meter` if there is one: what a timer calls at each of its sampling points.
inline void sample_device_memory(DeviceMemoryMeter* meter) {
  if (meter != nullptr) meter->sample();
}

// What a row may plan to fill out of `free_bytes` of free device memory: free less 5% and less
// 256 MiB (0 when that is nothing). The margin is for what a model of a trainer's own buffers
// leaves out and the meter would see: each buffer rounded up to 2 MiB pages (a trainer's few dozen
// buffers, up to 100 MiB), cuBLAS's handle and its internal state, a captured graph's
// instantiation, and the context's growth as kernels load and claim local memory.
inline constexpr double kDeviceMemoryMarginFraction = 0.05;
inline constexpr std::size_t kDeviceMemoryMarginBytes = std::size_t{256} << 20;
std::size_t usable_device_bytes(std::size_t free_bytes);

// The largest batch in [1, max_batch] whose bytes_at_batch(batch) is at most budget_bytes, or 0
// when not even batch 1 fits. bytes_at_batch must be non-decreasing in the batch and must not wrap
// around (compute it in 64 bits, or saturate); it is called only with batches in [1, max_batch],
// about 2 log2(answer) times (doubling, then bisection), so it may be costly to evaluate but not to
// the point of allocating. Throws std::invalid_argument for max_batch < 1.
using BytesAtBatch = std::function<std::size_t(int batch)>;
int largest_fitting_batch(const BytesAtBatch& bytes_at_batch, std::size_t budget_bytes,
                          int max_batch = INT_MAX);

}  // namespace gpubench
