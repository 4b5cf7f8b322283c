#pragma once
// bfloat16 on the host: the upper 16 bits of an fp32 value (1 sign, 8 exponent, 7 stored mantissa
// bits: 8 significant bits, unit roundoff 2^-8), the format OpenBLAS's cblas_sbgemm and cuBLAS's
// CUDA_R_16BF take. Conversion rounds to nearest, ties to even, like PyTorch's .to(torch.bfloat16)
// and the AVX512_BF16 VCVTNEPS2BF16 instruction; NaN stays NaN (quiet); values beyond bf16's
// largest finite value (about 3.39e38, just below FLT_MAX) round to inf. bf16 to fp32 is exact.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpubench {

inline std::uint16_t to_bfloat16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  // Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest, ties to even.
  const std::uint32_t rounded = (bits + 0x7FFFU + ((bits >> 16) & 1U)) >> 16;
  // NaN (exponent all ones, mantissa not zero) would round into inf or flip sign: keep its upper
  // half and set the quiet bit. A select, not a branch, so the array loops below vectorise.
  const bool is_nan = (bits & 0x7FFFFFFFU) > 0x7F800000U;
  const std::uint32_t quiet_nan = (bits >> 16) | 0x0040U;
  return static_cast<std::uint16_t>(is_nan ? quiet_nan : rounded);
}

inline float from_bfloat16(std::uint16_t value) {
  const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
  float result = 0.0F;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

inline void to_bfloat16(const float* values, std::size_t count, std::uint16_t* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = to_bfloat16(values[i]);
}

inline void from_bfloat16(const std::uint16_t* values, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = from_bfloat16(values[i]);
}

// The fp32 value nearest to `value` that bf16 holds (what a value becomes on its way through bf16).
inline float round_to_bfloat16(float value) { return from_bfloat16(to_bfloat16(value)); }

}  // namespace gpubench
