// Theoretical peak FLOP/s per precision, keyed by compute capability. The driver reports SM count
// and clock but not the throughput of an SM, so the per-SM, per-clock numbers come from NVIDIA's
// architecture whitepapers:
//  - sm_80: "NVIDIA A100 Tensor Core GPU Architecture" (2020), table 1: A100 at 108 SMs, 1410 MHz
//    gives FP32 19.5, TF32 156, FP16/BF16 312, FP64 tensor 19.5 TFLOP/s, i.e. per SM per clock
//    128, 1024, 2048, 128 FLOP.
//  - sm_86 / sm_89: "NVIDIA Ampere GA102 GPU Architecture" and "NVIDIA Ada GPU Architecture":
//    128 FP32 lanes per SM (256 FLOP/clk), tensor FP16/BF16 with FP32 accumulate 512 FLOP/clk/SM
//    dense on GeForce parts (1024 on professional parts; the lower figure is used), TF32 half of
//    that, FP64 at 1/64 of FP32 (4 FLOP/clk/SM).
//  - sm_90: "NVIDIA H100 Tensor Core GPU Architecture" (2022), table 3: H100 SXM5 at 132 SMs,
//    1830 MHz gives FP32 66.9, TF32 494.7, FP16/BF16 989.4, FP64 tensor 66.9 TFLOP/s dense, i.e.
//    per SM per clock 256, 2048, 4096, 256 FLOP.
// The clock used is the maximum boost clock the driver reports (cudaDevAttrClockRate). Sustained
// clocks under heavy tensor load are often lower, so pct_peak is a conservative share.

#include <string>

#include "harness/gpu_info.hpp"

namespace gpubench {

namespace {
struct PerSmPerClock {
  double fp32, tf32, fp16, bf16, fp64;
  const char* source;
};

bool lookup(int major, int minor, PerSmPerClock* out) {
  if (major == 8 && minor == 0) {
    *out = {128, 1024, 2048, 2048, 128, "A100 whitepaper (sm_80)"};
    return true;
  }
  if (major == 8 && (minor == 6 || minor == 9)) {
    *out = {256, 256, 512, 512, 4, "GA102/Ada whitepapers (sm_86/sm_89, GeForce tensor rates)"};
    return true;
  }
  if (major == 9 && minor == 0) {
    *out = {256, 2048, 4096, 4096, 256, "H100 whitepaper (sm_90)"};
    return true;
  }
  return false;
}
}  // namespace

GpuPeakFlops peak_flops_for(int compute_capability_major, int compute_capability_minor,
                            int multiprocessor_count, int sm_clock_khz) {
  GpuPeakFlops peak;
  PerSmPerClock per_sm{};
  if (!lookup(compute_capability_major, compute_capability_minor, &per_sm)) {
    peak.source = "no table entry for sm_" + std::to_string(compute_capability_major) +
                  std::to_string(compute_capability_minor);
    return peak;
  }
  const double sm_clocks_per_s = static_cast<double>(multiprocessor_count) * sm_clock_khz * 1e3;
  peak.fp32 = per_sm.fp32 * sm_clocks_per_s;
  peak.tf32 = per_sm.tf32 * sm_clocks_per_s;
  peak.fp16 = per_sm.fp16 * sm_clocks_per_s;
  peak.bf16 = per_sm.bf16 * sm_clocks_per_s;
  peak.fp64 = per_sm.fp64 * sm_clocks_per_s;
  peak.source = per_sm.source;
  return peak;
}

double gpu_peak_flops(const GpuInfo& gpu, const std::string& precision_name) {
  if (precision_name == "fp32") return gpu.peak.fp32;
  if (precision_name == "tf32") return gpu.peak.tf32;
  if (precision_name == "fp16") return gpu.peak.fp16;
  if (precision_name == "bf16") return gpu.peak.bf16;
  if (precision_name == "fp64") return gpu.peak.fp64;
  return 0;
}

}  // namespace gpubench
