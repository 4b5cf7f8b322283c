#include "harness/context.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>

#include "harness/conditions.hpp"
#include "harness/cpu_bandwidth.hpp"
#include "harness/cpu_info.hpp"
#include "harness/gpu_bandwidth.hpp"
#include "harness/gpu_info.hpp"
#include "harness/instruction_region.hpp"
#include "kernels/common/openblas.hpp"

namespace gpubench {

// Defined in the generated git_commit.cpp (cmake/write_git_commit.cmake).
const char* suite_git_commit();

namespace {
std::string number(double value) {
  std::ostringstream stream;
  stream.precision(6);
  stream << value;
  return stream.str();
}

std::string ceilings_setting() {
  const char* value = std::getenv("GPUBENCH_CEILINGS");
  return value != nullptr ? value : "";
}

// `<key>_bytes_per_s` where a value was found, `<key>_source` always.
void add_bandwidth(const std::string& key, double bytes_per_s, const std::string& source) {
  if (bytes_per_s > 0) benchmark::AddCustomContext(key + "_bytes_per_s", number(bytes_per_s));
  benchmark::AddCustomContext(key + "_source", source);
}

std::string version_text(int packed_major_minor) {
  // CUDA packs versions as 1000 * major + 10 * minor.
  return std::to_string(packed_major_minor / 1000) + "." +
         std::to_string((packed_major_minor % 1000) / 10);
}
}  // namespace

void add_custom_context(const std::string& sweep_name) {
  using benchmark::AddCustomContext;
  AddCustomContext("gpubench_git_commit", suite_git_commit());
  AddCustomContext("gpubench_sweep", sweep_name);
  AddCustomContext("gpubench_cuda_build", GPUBENCH_HAS_CUDA ? "yes" : "no");

  const CpuInfo& cpu = cpu_info();
  AddCustomContext("cpu_model", cpu.model);
  AddCustomContext("cpu_logical_cpus", std::to_string(cpu.logical_cpus));
  AddCustomContext("cpu_physical_cores", std::to_string(cpu.physical_cores));
  AddCustomContext("cpu_isa", cpu.isa_flags.empty() ? "none" : cpu.isa_flags);
  AddCustomContext("cpu_clock_hz", number(cpu.clock_hz));
  AddCustomContext("cpu_clock_source", cpu.clock_source);
  AddCustomContext("cpu_nominal_clock_hz", number(cpu.nominal_clock_hz));
  // The FLOP/cycle the peaks use, where they come from, and both of the sources: the table by ISA
  // flag and the FMA loops, with each level's unrounded reading and the clock it was read against.
  AddCustomContext("cpu_fp32_flop_per_cycle_per_core", number(cpu.fp32_flop_per_cycle_per_core));
  AddCustomContext("cpu_fp64_flop_per_cycle_per_core", number(cpu.fp64_flop_per_cycle_per_core));
  AddCustomContext("cpu_flop_per_cycle_source", cpu.flop_per_cycle_source);
  AddCustomContext("cpu_flop_per_cycle_fp32_table", number(cpu.fp32_flop_per_cycle_table));
  AddCustomContext("cpu_flop_per_cycle_fp64_table", number(cpu.fp64_flop_per_cycle_table));
  AddCustomContext("cpu_flop_per_cycle_fp32_measured", number(cpu.fp32_flop_per_cycle_measured));
  AddCustomContext("cpu_flop_per_cycle_fp64_measured", number(cpu.fp64_flop_per_cycle_measured));
  for (const FmaLevelThroughput& level : cpu.fma.levels) {
    AddCustomContext("cpu_fma_" + level.name + "_fp32_flop_per_cycle",
                     number(level.fp32_flop_per_cycle));
    AddCustomContext("cpu_fma_" + level.name + "_fp64_flop_per_cycle",
                     number(level.fp64_flop_per_cycle));
  }
  AddCustomContext("cpu_fma_clock_hz", number(cpu.fma.clock_hz));
  if (!cpu.peak_warning.empty()) AddCustomContext("cpu_peak_warning", cpu.peak_warning);
  AddCustomContext("cpu_peak_fp32_flops", number(cpu_peak_flops(cpu.physical_cores, false)));
  AddCustomContext("cpu_peak_fp64_flops", number(cpu_peak_flops(cpu.physical_cores, true)));
  AddCustomContext("openblas_config", cpu::blas_config());
  AddCustomContext("openblas_default_threads", std::to_string(cpu::blas_threads()));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  AddCustomContext("openblas_coretype_env", coretype != nullptr ? coretype : "unset");
  add_condition_context();  // the rule, CPU governor, boost, SMT, affinity; NVML's GPU facts

  const auto& gpu = gpu_info();
  if (!gpu) {
    AddCustomContext("gpu", "none");
    AddCustomContext("gpu_unavailable_reason", gpu_unavailable_reason());
    return;
  }
  AddCustomContext("gpu", gpu->name);
  AddCustomContext("gpu_compute_capability", std::to_string(gpu->compute_capability_major) + "." +
                                                 std::to_string(gpu->compute_capability_minor));
  AddCustomContext("gpu_sm_count", std::to_string(gpu->multiprocessor_count));
  AddCustomContext("gpu_sm_clock_hz", number(gpu->sm_clock_khz * 1e3));
  AddCustomContext("gpu_memory_clock_hz", number(gpu->memory_clock_khz * 1e3));
  AddCustomContext("gpu_memory_bytes", std::to_string(gpu->total_memory_bytes));
  AddCustomContext("gpu_memory_bus_width_bits", std::to_string(gpu->memory_bus_width_bits));
  AddCustomContext("gpu_memory_bandwidth_bytes_per_s", number(gpu->memory_bandwidth_bytes_per_s));
  AddCustomContext("gpu_l2_bytes", std::to_string(gpu->l2_cache_bytes));
  AddCustomContext("gpu_pci_bus_id", gpu->pci_bus_id);
  AddCustomContext("gpu_pcie_link", gpu->pcie_link);
  AddCustomContext("gpu_pcie_bandwidth_bytes_per_s", number(gpu->pcie_bandwidth_bytes_per_s));
  AddCustomContext("cuda_driver_version", version_text(gpu->driver_version));
  AddCustomContext("cuda_runtime_version", version_text(gpu->runtime_version));
  AddCustomContext("cublas_version", std::to_string(gpu->cublas_version / 10000) + "." +
                                         std::to_string((gpu->cublas_version / 100) % 100) + "." +
                                         std::to_string(gpu->cublas_version % 100));
  AddCustomContext("gpu_peak_fp32_flops", number(gpu->peak.fp32));
  AddCustomContext("gpu_peak_tf32_flops", number(gpu->peak.tf32));
  AddCustomContext("gpu_peak_fp16_flops", number(gpu->peak.fp16));
  AddCustomContext("gpu_peak_bf16_flops", number(gpu->peak.bf16));
  AddCustomContext("gpu_peak_fp64_flops", number(gpu->peak.fp64));
  AddCustomContext("gpu_peak_source", gpu->peak.source);
}

std::optional<std::string> ceilings_setting_error() {
  const std::string value = ceilings_setting();
  if (value.empty() || value == "on" || value == "off") return std::nullopt;
  return "GPUBENCH_CEILINGS='" + value + "' is neither 'on' nor 'off'";
}

void add_ceiling_context() {
  using benchmark::AddCustomContext;
  const auto& gpu = gpu_info();
  std::string skipped;
  if (ceilings_setting() == "off") {
    skipped = "not measured: GPUBENCH_CEILINGS=off";
  } else if (InstructionRegion::running_on_valgrind()) {
    skipped = "not measured: running under Valgrind, whose emulated memory is not the machine's";
  }
  if (!skipped.empty()) {
    for (const char* key :
         {"cpu_bandwidth_1thread", "cpu_bandwidth_all_cores", "cpu_bandwidth_cache"}) {
      add_bandwidth(key, 0, skipped);
    }
    if (gpu) add_bandwidth("gpu_bandwidth_measured", 0, skipped);
  } else {
    // One worker per core the process may use: SMT siblings share a core's path to memory.
    const int threads = std::max(1, std::min(cpu_info().physical_cores, allowed_cpu_count()));
    const CpuBandwidth cpu = measure_cpu_bandwidth(threads);
    AddCustomContext("cpu_l2_bytes", std::to_string(cpu.caches.l2_bytes));
    AddCustomContext("cpu_llc_bytes", std::to_string(cpu.caches.llc_bytes));
    AddCustomContext("cpu_llc_instances", std::to_string(cpu.caches.llc_instances));
    AddCustomContext("cpu_cache_source", cpu.caches.source);
    add_bandwidth("cpu_bandwidth_1thread", cpu.one_thread.bytes_per_s, cpu.one_thread.source);
    add_bandwidth("cpu_bandwidth_all_cores", cpu.all_cores.bytes_per_s, cpu.all_cores.source);
    AddCustomContext("cpu_bandwidth_all_cores_threads", std::to_string(cpu.all_cores_threads));
    add_bandwidth("cpu_bandwidth_cache", cpu.cache.bytes_per_s, cpu.cache.source);
    AddCustomContext("cpu_bandwidth_probe_s", number(cpu.probe_s));
    if (gpu) {
      const auto start = std::chrono::steady_clock::now();
      const GpuBandwidthReading measured = measure_gpu_bandwidth(*gpu);
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      add_bandwidth("gpu_bandwidth_measured", measured.bytes_per_s, measured.source);
      AddCustomContext("gpu_bandwidth_probe_s", number(elapsed.count()));
    }
  }
  // Read from the driver, not measured: written whatever the setting.
  if (gpu) {
    const GpuBandwidthReading theoretical = theoretical_gpu_bandwidth(*gpu);
    add_bandwidth("gpu_bandwidth_theoretical", theoretical.bytes_per_s, theoretical.source);
  }
}

}  // namespace gpubench
