#include "harness/nvml.hpp"

#include <dlfcn.h>

#include <string>
#include <utility>

#include "harness/gpu_info.hpp"

namespace gpubench {

namespace {

// The types of NVML's documented signatures (nvml.h): nvmlReturn_t and the enumerations are C
// enums (int-sized), nvmlDevice_t an opaque pointer.
using NvmlReturn = int;
using NvmlDeviceHandle = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockGraphics = 0;  // nvmlClockType_t
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t
constexpr int kNvmlFeatureEnabled = 1;  // nvmlEnableState_t

using InitFunction = NvmlReturn (*)();                    // nvmlInit_v2
using ShutdownFunction = NvmlReturn (*)();                // nvmlShutdown
using ErrorStringFunction = const char* (*)(NvmlReturn);  // nvmlErrorString
using HandleByPciBusIdFunction = NvmlReturn (*)(const char*,
                                                NvmlDeviceHandle*);  // ..._v2
using ClockFunction =
    NvmlReturn (*)(NvmlDeviceHandle, int,
                   unsigned int*);  // nvmlDeviceGet{Clock,MaxClock,Applications}Info
using ReasonsFunction = NvmlReturn (*)(NvmlDeviceHandle,
                                       unsigned long long*);  // ...CurrentClocksThrottleReasons
using TemperatureFunction = NvmlReturn (*)(NvmlDeviceHandle, int, unsigned int*);
using PowerFunction = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*);         // milliwatts
using EnergyFunction = NvmlReturn (*)(NvmlDeviceHandle, unsigned long long*);  // millijoules
using EnableStateFunction = NvmlReturn (*)(NvmlDeviceHandle, int*);  // nvmlDeviceGetPersistenceMode
using PairStateFunction = NvmlReturn (*)(NvmlDeviceHandle, int*, int*);  // nvmlDeviceGetEccMode
using MigModeFunction = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*, unsigned int*);

}  // namespace

struct NvmlDevice::Library {
  // The dlopen handle, closed last.
  struct Handle {
    void* pointer = nullptr;
    Handle() = default;
    ~Handle() {
      if (pointer != nullptr) dlclose(pointer);
    }
    Handle(const Handle&) = delete;  // one dlclose per dlopen
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&&) = delete;
    Handle& operator=(Handle&&) = delete;
  } handle;
  bool initialised = false;
  InitFunction init = nullptr;
  ShutdownFunction shutdown = nullptr;
  ErrorStringFunction error_string = nullptr;
  HandleByPciBusIdFunction handle_by_pci_bus_id = nullptr;
  ClockFunction clock_info = nullptr;
  ClockFunction max_clock_info = nullptr;
  ClockFunction applications_clock = nullptr;
  ReasonsFunction clock_event_reasons = nullptr;
  TemperatureFunction temperature = nullptr;
  PowerFunction power_usage = nullptr;
  EnergyFunction total_energy = nullptr;
  EnableStateFunction persistence_mode = nullptr;
  PairStateFunction ecc_mode = nullptr;
  MigModeFunction mig_mode = nullptr;

  Library() = default;
  Library(const Library&) = delete;  // one nvmlShutdown per nvmlInit
  Library& operator=(const Library&) = delete;
  Library(Library&&) = delete;
  Library& operator=(Library&&) = delete;
  ~Library() {
    if (initialised) shutdown();
  }

  template <typename Function>
  bool resolve(Function* function, const char* name, std::string* why_not) {
    void* symbol = dlsym(handle.pointer, name);
    if (symbol == nullptr) {
      *why_not = std::string("NVML has no ") + name;
      return false;
    }
    *function = reinterpret_cast<Function>(symbol);
    return true;
  }

  std::string error(NvmlReturn status) const {
    const char* text = error_string != nullptr ? error_string(status) : nullptr;
    return text != nullptr ? text : "NVML error " + std::to_string(status);
  }
};

std::unique_ptr<NvmlDevice> NvmlDevice::open(const std::string& pci_bus_id, std::string* why_not,
                                             const char* library_name) {
  std::string reason;
  auto library = std::make_unique<Library>();
  library->handle.pointer = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
  if (library->handle.pointer == nullptr) {
    const char* error = dlerror();
    if (why_not != nullptr) {
      *why_not = std::string("cannot load ") + library_name + ": " + (error ? error : "unknown");
    }
    return nullptr;
  }
  const bool resolved =
      library->resolve(&library->init, "nvmlInit_v2", &reason) &&
      library->resolve(&library->shutdown, "nvmlShutdown", &reason) &&
      library->resolve(&library->error_string, "nvmlErrorString", &reason) &&
      library->resolve(&library->handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2",
                       &reason) &&
      library->resolve(&library->clock_info, "nvmlDeviceGetClockInfo", &reason) &&
      library->resolve(&library->max_clock_info, "nvmlDeviceGetMaxClockInfo", &reason) &&
      library->resolve(&library->applications_clock, "nvmlDeviceGetApplicationsClock", &reason) &&
      library->resolve(&library->clock_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons",
                       &reason) &&
      library->resolve(&library->temperature, "nvmlDeviceGetTemperature", &reason) &&
      library->resolve(&library->power_usage, "nvmlDeviceGetPowerUsage", &reason) &&
      library->resolve(&library->total_energy, "nvmlDeviceGetTotalEnergyConsumption", &reason) &&
      library->resolve(&library->persistence_mode, "nvmlDeviceGetPersistenceMode", &reason) &&
      library->resolve(&library->ecc_mode, "nvmlDeviceGetEccMode", &reason) &&
      library->resolve(&library->mig_mode, "nvmlDeviceGetMigMode", &reason);
  if (!resolved) {
    if (why_not != nullptr) *why_not = reason;
    return nullptr;
  }
  const NvmlReturn init_status = library->init();
  if (init_status != kNvmlSuccess) {
    if (why_not != nullptr) *why_not = "nvmlInit_v2: " + library->error(init_status);
    return nullptr;
  }
  library->initialised = true;
  NvmlDeviceHandle device = nullptr;
  const NvmlReturn handle_status = library->handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
  if (handle_status != kNvmlSuccess) {
    if (why_not != nullptr) {
      *why_not =
          "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + "): " + library->error(handle_status);
    }
    return nullptr;
  }
  return std::unique_ptr<NvmlDevice>(new NvmlDevice(std::move(library), device));
}

NvmlDevice::NvmlDevice(std::unique_ptr<Library> library, void* device)
    : library_(std::move(library)), device_(device) {}

NvmlDevice::~NvmlDevice() = default;

GpuSample NvmlDevice::sample() const {
  GpuSample sample;
  unsigned int value = 0;
  if (library_->clock_info(device_, kNvmlClockSm, &value) == kNvmlSuccess) {
    sample.sm_clock_hz = value * 1e6;  // MHz
  }
  unsigned long long reasons = 0;
  if (library_->clock_event_reasons(device_, &reasons) == kNvmlSuccess) {
    sample.clock_event_reasons = reasons;
  }
  if (library_->temperature(device_, kNvmlTemperatureGpu, &value) == kNvmlSuccess) {
    sample.temperature_c = value;
  }
  if (library_->power_usage(device_, &value) == kNvmlSuccess) sample.power_w = value * 1e-3;
  return sample;
}

std::optional<std::uint64_t> NvmlDevice::energy_mj() const {
  unsigned long long millijoules = 0;
  if (library_->total_energy(device_, &millijoules) != kNvmlSuccess) return std::nullopt;
  return millijoules;
}

GpuFacts NvmlDevice::facts() const {
  const auto unavailable = [&](const char* call, NvmlReturn status) {
    return std::string("unavailable: ") + call + ": " + library_->error(status);
  };
  const auto clock_text = [&](ClockFunction function, const char* call, int type) {
    unsigned int mhz = 0;
    const NvmlReturn status = function(device_, type, &mhz);
    return status == kNvmlSuccess ? std::to_string(static_cast<unsigned long long>(mhz) * 1000000)
                                  : unavailable(call, status);
  };
  GpuFacts facts;
  int state = 0;
  NvmlReturn status = library_->persistence_mode(device_, &state);
  facts.persistence_mode = status == kNvmlSuccess
                               ? (state == kNvmlFeatureEnabled ? "on" : "off")
                               : unavailable("nvmlDeviceGetPersistenceMode", status);
  facts.applications_graphics_clock_hz = clock_text(
      library_->applications_clock, "nvmlDeviceGetApplicationsClock", kNvmlClockGraphics);
  facts.applications_memory_clock_hz =
      clock_text(library_->applications_clock, "nvmlDeviceGetApplicationsClock", kNvmlClockMem);
  facts.max_sm_clock_hz =
      clock_text(library_->max_clock_info, "nvmlDeviceGetMaxClockInfo", kNvmlClockSm);
  int current = 0;
  int pending = 0;
  status = library_->ecc_mode(device_, &current, &pending);
  facts.ecc = status == kNvmlSuccess ? (current == kNvmlFeatureEnabled ? "on" : "off")
                                     : unavailable("nvmlDeviceGetEccMode", status);
  unsigned int mig_current = 0;
  unsigned int mig_pending = 0;
  status = library_->mig_mode(device_, &mig_current, &mig_pending);
  // NVML_DEVICE_MIG_ENABLE is 1.
  facts.mig = status == kNvmlSuccess ? (mig_current == 1 ? "on" : "off")
                                     : unavailable("nvmlDeviceGetMigMode", status);
  return facts;
}

std::optional<NvmlDevice::MemoryBus> NvmlDevice::memory_bus(std::string* why_not) const {
  // nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int* busWidth)
  using BusWidthFunction = NvmlReturn (*)(NvmlDeviceHandle, unsigned int*);
  void* symbol = dlsym(library_->handle.pointer, "nvmlDeviceGetMemoryBusWidth");
  if (symbol == nullptr) {
    if (why_not != nullptr) *why_not = "NVML has no nvmlDeviceGetMemoryBusWidth";
    return std::nullopt;
  }
  const auto bus_width = reinterpret_cast<BusWidthFunction>(symbol);
  MemoryBus bus;
  NvmlReturn status = bus_width(device_, &bus.bus_width_bits);
  if (status != kNvmlSuccess || bus.bus_width_bits == 0) {
    if (why_not != nullptr) {
      *why_not = "nvmlDeviceGetMemoryBusWidth: " +
                 (status != kNvmlSuccess ? library_->error(status) : std::string("0 bits"));
    }
    return std::nullopt;
  }
  unsigned int mhz = 0;
  status = library_->max_clock_info(device_, kNvmlClockMem, &mhz);
  if (status != kNvmlSuccess || mhz == 0) {
    if (why_not != nullptr) {
      *why_not = "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM): " +
                 (status != kNvmlSuccess ? library_->error(status) : std::string("0 MHz"));
    }
    return std::nullopt;
  }
  bus.max_clock_hz = mhz * 1e6;
  return bus;
}

namespace {
struct CachedDevice {
  std::unique_ptr<NvmlDevice> device;
  std::string reason;
};

const CachedDevice& cached_device() {
  static const CachedDevice cached = [] {
    CachedDevice result;
    const auto& gpu = gpu_info();
    if (!gpu) {
      result.reason = "no GPU: " + gpu_unavailable_reason();
      return result;
    }
    result.device = NvmlDevice::open(gpu->pci_bus_id, &result.reason);
    return result;
  }();
  return cached;
}
}  // namespace

const NvmlDevice* nvml_device() { return cached_device().device.get(); }
const std::string& nvml_unavailable_reason() { return cached_device().reason; }

}  // namespace gpubench
