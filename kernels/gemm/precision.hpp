#pragma once
// The GEMM precisions of the GPU path and how their operands are stored.
//
// fp16 and bf16 operands are 2-byte types accumulated in fp32 with an fp32 output
// (CUBLAS_COMPUTE_32F), tf32 reads fp32 operands and lets the tensor cores round them to 10
// mantissa bits, fp32 and fp64 are the classic SGEMM/DGEMM. C has the operand type (fp16 and bf16
// outputs are rounded from the fp32 accumulator, as in frameworks' matmul), except tf32 whose C is
// fp32.

#include <cstddef>
#include <optional>
#include <string>

namespace gpubench::cuda {

enum class Precision { fp32, tf32, fp16, bf16, fp64 };

inline constexpr Precision kAllPrecisions[] = {Precision::fp32, Precision::tf32, Precision::fp16,
                                               Precision::bf16, Precision::fp64};

const char* precision_name(Precision precision);
std::optional<Precision> precision_from_name(const std::string& name);

// Bytes of one element of A and B, and of C.
std::size_t operand_element_bytes(Precision precision);
std::size_t output_element_bytes(Precision precision);

// Unit roundoff of the operands as the hardware multiplies them (2^-24 for fp32, 2^-11 for tf32 and
// fp16, 2^-8 for bf16, 2^-53 for fp64) and of the accumulator. Used to scale validation tolerances.
double operand_unit_roundoff(Precision precision);
double accumulator_unit_roundoff(Precision precision);
// Unit roundoff of the stored output C (rounding of the accumulator into C's type).
double output_unit_roundoff(Precision precision);

// Host-side conversion of `count` floats (or doubles for fp64) to the operand storage type.
// fp32/tf32 copy, fp16/bf16 round to nearest even, fp64 widens from float.
void convert_operands_from_float(Precision precision, const float* source, void* destination,
                                 std::size_t count);
// Reads element `index` of an operand buffer back as double (for references built from the exact
// values the GPU multiplies).
double operand_as_double(Precision precision, const void* buffer, std::size_t index);
// Reads element `index` of an output buffer as double.
double output_as_double(Precision precision, const void* buffer, std::size_t index);

}  // namespace gpubench::cuda
