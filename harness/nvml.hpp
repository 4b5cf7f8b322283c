#pragma once
// NVML, the driver's management library, loaded at run time: `dlopen("libnvidia-ml.so.1")` and the
// few functions the conditions need resolved by dlsym, never linked, so bench starts on machines
// without the driver and the CUDA-less build needs nothing. Every call's status is checked; a
// failure makes that reading absent, never a made-up value.
//
// Used by harness/conditions.cpp: per-row samples of the SM clock, the clock event ("throttle")
// reasons, temperature and power, the energy counter (Volta and newer), and the machine-wide facts
// for the context (persistence mode, application clocks, ECC, MIG).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gpubench {

// NVML's clock event reasons that mean the GPU slowed itself down for heat or power protection
// (nvml.h, nvmlClocksThrottleReason*): HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW
// power brake 0x80. GPU idle (0x1) is excluded from what a row records.
inline constexpr std::uint64_t kNvmlReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kNvmlReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kNvmlReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kNvmlReasonSwThermal = 0x20;
inline constexpr std::uint64_t kNvmlReasonHwThermal = 0x40;
inline constexpr std::uint64_t kNvmlReasonHwPowerBrake = 0x80;

// One reading of the device; each field absent where NVML refused it.
struct GpuSample {
  std::optional<double> sm_clock_hz;
  std::optional<std::uint64_t> clock_event_reasons;  // bitmask, nvmlClocksThrottleReason*
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};

// Machine-wide facts for the context; each field is the value or "unavailable: <why>".
struct GpuFacts {
  std::string persistence_mode;
  std::string applications_graphics_clock_hz;
  std::string applications_memory_clock_hz;
  std::string max_sm_clock_hz;
  std::string ecc;
  std::string mig;
};

class NvmlDevice {
 public:
  // NVML for the device on PCI bus `pci_bus_id` (as cudaDeviceGetPCIBusId writes it), loading
  // `library` ("libnvidia-ml.so.1"; tests pass a name that does not exist). Returns null with the
  // reason in `why_not` where the library, its initialisation or the device is unavailable.
  static std::unique_ptr<NvmlDevice> open(const std::string& pci_bus_id, std::string* why_not,
                                          const char* library = "libnvidia-ml.so.1");
  ~NvmlDevice();
  NvmlDevice(const NvmlDevice&) = delete;
  NvmlDevice& operator=(const NvmlDevice&) = delete;
  NvmlDevice(NvmlDevice&&) = delete;
  NvmlDevice& operator=(NvmlDevice&&) = delete;

  GpuSample sample() const;
  // Millijoules since the driver loaded (Volta and newer), absent where unsupported.
  std::optional<std::uint64_t> energy_mj() const;
  GpuFacts facts() const;

  // The memory's maximum clock (nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM) and bus width
  // (nvmlDeviceGetMemoryBusWidth, resolved here rather than in open(), so that a driver without it
  // loses this reading only); absent with the reason in `why_not` where NVML gives either not.
  struct MemoryBus {
    double max_clock_hz = 0;
    unsigned int bus_width_bits = 0;
  };
  std::optional<MemoryBus> memory_bus(std::string* why_not) const;

  struct Library;  // the dlopen handle and the resolved functions (nvml.cpp)

 private:
  NvmlDevice(std::unique_ptr<Library> library, void* device);
  std::unique_ptr<Library> library_;
  void* device_;  // nvmlDevice_t
};

// The device the benchmarks run on (gpu_info()), opened once per process; null with the reason in
// nvml_unavailable_reason() where there is no GPU or no usable NVML.
const NvmlDevice* nvml_device();
const std::string& nvml_unavailable_reason();

}  // namespace gpubench
