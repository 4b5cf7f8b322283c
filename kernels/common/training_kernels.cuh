#pragma once
// The kernels every GPU trainer's step ends with, whatever its layers: the softmax cross-entropy
// loss over the logits and the SGD update of the whole parameter vector
// (kernels/common/gpu_training_core.hpp runs them). Each launcher enqueues on `stream`, returns the
// launch's status (cudaGetLastError(): a bad configuration shows here, an error inside the kernel
// only at the next synchronisation) for the caller to check, and is safe to call during stream
// capture.

#include <cuda_runtime.h>

#include <cstddef>

namespace gpubench::cuda {

// Softmax cross-entropy of `rows` rows of `classes` logits (numerically stable: the row maximum is
// subtracted before exp). Replaces the logits with dL/dZ = (softmax - one_hot(label)) / rows and
// writes the mean loss to *loss. The mean is summed in a fixed order (per block of 256 rows, then
// the per-block partial sums by the last block to finish), so the result is deterministic and
// needs no memset: `partials` holds softmax_cross_entropy_blocks(rows) floats and `counter` one
// unsigned that must be zero before the first launch; the kernel leaves it at zero.
[[nodiscard]] cudaError_t launch_softmax_cross_entropy(float* logits, const int* labels, int rows,
                                                       int classes, float* loss, float* partials,
                                                       unsigned* counter, cudaStream_t stream);
// Blocks of the loss kernel for `rows` rows, right for every row count up to INT_MAX (the memory
// models ask there when they search for the largest batch).
int softmax_cross_entropy_blocks(int rows);

// parameters[i] -= learning_rate * gradient[i] over the whole parameter vector, every layer in one
// launch (PyTorch's fused foreach SGD does the same).
[[nodiscard]] cudaError_t launch_sgd_update(float* parameters, const float* gradient,
                                            std::size_t count, float learning_rate,
                                            cudaStream_t stream);

}  // namespace gpubench::cuda
