#include "harness/context.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "harness/conditions.hpp"
#include "harness/cpu_info.hpp"
#include "harness/gpu_info.hpp"
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

}  // namespace gpubench
