#pragma once
// OpenBLAS built with DYNAMIC_ARCH picks its kernels from the CPU model when the library loads.
// Under some hypervisors the model is generic ("Intel(R) Xeon(R) Processor") and OpenBLAS falls
// back to its Prescott (SSE3) kernels, about six times slower than the AVX-512 ones on the same
// core (seen on the H100 machine this suite was validated on): a CPU baseline measured that way
// would flatter the GPU. This finds the kernel set the CPU's ISA flags allow, so `bench` can set
// OPENBLAS_CORETYPE and restart itself before any measurement.

#include <optional>
#include <string>

namespace gpubench {

// The OPENBLAS_CORETYPE to use when the loaded kernels are below what the CPU supports ("SkylakeX"
// with AVX-512 F/BW/DQ/VL, "Haswell" with AVX2 + FMA); nullopt when they already match or
// OPENBLAS_CORETYPE is set.
std::optional<std::string> better_openblas_coretype();

}  // namespace gpubench
