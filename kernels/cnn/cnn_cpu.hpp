#pragma once
// The CNN of cnn_spec.hpp on the CPU: convolution as im2col + cblas_sgemm forward and backward
// (col2im for the input gradient), max-pool with argmax indices, the two linear layers on
// OpenBLAS, softmax cross-entropy, SGD. The reference the GPU paths are checked against.
//
// Operations of one step, in order, with the names a StepObserver sees (kernels/common/
// step_observer.hpp): for l in 1..3 "convL.im2col", "convL.gemm", "convL.bias" (+ ReLU when
// enabled), "poolL.forward"; "fc1.forward", "fc2.forward", "loss"; then backward "fc2.backward",
// "fc1.backward", for l in 3..1 "poolL.backward", "convL.weight_gradient" (GEMM dW = dY columns^T
// and the bias sums), "convL.input_gradient" (GEMM columns = W^T dY, then col2im; not for conv1);
// "update".

#include <cstddef>
#include <vector>

#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/step_observer.hpp"

namespace gpubench::cpu {

class CnnCpuTrainer {
 public:
  // Validates spec and batch (std::invalid_argument naming the problem) and sizes every
  // workspace once for `batch` images, so a step allocates nothing.
  CnnCpuTrainer(const CnnSpec& spec, int batch);

  // One SGD step on `batch` images (NCHW) and labels: forward, loss, backward,
  // parameters -= lr * gradient. Returns the mean loss of the forward pass (before the update).
  float step(float* parameters, const float* images, const int* labels);

  // Mean loss and its gradient with respect to every parameter (same layout), no update.
  float loss_and_gradient(const float* parameters, const float* images, const int* labels,
                          float* gradient);

  // Mean loss of the forward pass only.
  float loss(const float* parameters, const float* images, const int* labels);

  // Each operation of the following steps is reported to `observer` (nullptr: none).
  void set_observer(StepObserver* observer) { observer_ = observer; }

  int batch() const { return batch_; }
  const CnnSpec& spec() const { return spec_; }

 private:
  CnnSpec spec_;
  int batch_;
  StepObserver* observer_ = nullptr;
  // Workspaces (activations, im2col columns, pool argmax indices, gradients), sized in the
  // constructor: declared in cnn_cpu.cpp's layout.
  struct Workspace;
  std::vector<float> gradient_;
  std::vector<std::vector<float>> buffers_;
  std::vector<std::vector<int>> indices_;
};

// Mean loss and accuracy of `rows` images in chunks (forward only, for checks and the
// test_accuracy counter, not for timing).
double cnn_accuracy(const CnnSpec& spec, const float* parameters, const float* images,
                    const int* labels, int rows);

}  // namespace gpubench::cpu
