#include "kernels/gemm/precision.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace gpubench::cuda {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp64:
      return "fp64";
  }
  return "unknown";
}

std::optional<Precision> precision_from_name(const std::string& name) {
  for (Precision precision : kAllPrecisions) {
    if (name == precision_name(precision)) return precision;
  }
  return std::nullopt;
}

std::size_t operand_element_bytes(Precision precision) {
  switch (precision) {
    case Precision::fp16:
    case Precision::bf16:
      return 2;
    case Precision::fp64:
      return 8;
    default:
      return 4;
  }
}

std::size_t output_element_bytes(Precision precision) { return operand_element_bytes(precision); }

double operand_unit_roundoff(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return 0x1p-24;
    case Precision::tf32:  // tensor cores round fp32 inputs to 10 explicit mantissa bits
    case Precision::fp16:
      return 0x1p-11;
    case Precision::bf16:
      return 0x1p-8;
    case Precision::fp64:
      return 0x1p-53;
  }
  return 1.0;
}

double accumulator_unit_roundoff(Precision precision) {
  return precision == Precision::fp64 ? 0x1p-53 : 0x1p-24;
}

double output_unit_roundoff(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return 0x1p-11;
    case Precision::bf16:
      return 0x1p-8;
    default:
      return accumulator_unit_roundoff(precision);
  }
}

void convert_operands_from_float(Precision precision, const float* source, void* destination,
                                 std::size_t count) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32:
      std::memcpy(destination, source, count * sizeof(float));
      return;
    case Precision::fp16: {
      auto* out = static_cast<__half*>(destination);
      for (std::size_t i = 0; i < count; ++i) out[i] = __float2half_rn(source[i]);
      return;
    }
    case Precision::bf16: {
      auto* out = static_cast<__nv_bfloat16*>(destination);
      for (std::size_t i = 0; i < count; ++i) out[i] = __float2bfloat16_rn(source[i]);
      return;
    }
    case Precision::fp64: {
      auto* out = static_cast<double*>(destination);
      for (std::size_t i = 0; i < count; ++i) out[i] = source[i];
      return;
    }
  }
}

double operand_as_double(Precision precision, const void* buffer, std::size_t index) {
  switch (precision) {
    case Precision::fp16:
      return __half2float(static_cast<const __half*>(buffer)[index]);
    case Precision::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(buffer)[index]);
    case Precision::fp64:
      return static_cast<const double*>(buffer)[index];
    default:
      return static_cast<const float*>(buffer)[index];
  }
}

double output_as_double(Precision precision, const void* buffer, std::size_t index) {
  // C is stored in the operand type except for tf32 (fp32 storage), which operand_as_double reads.
  return operand_as_double(precision, buffer, index);
}

}  // namespace gpubench::cuda
