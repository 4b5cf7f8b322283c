#pragma once
// A hook through which a training step names its operations as it runs them, so that a profiling
// run can time each one (harness/ owns the clocks: host clock on the CPU, CUDA events on the GPU)
// while the kernels themselves stay free of timing. A trainer calls begin(op) and end(op) around
// every operation of a step when an observer is set; the timed benchmark runs set none, so the
// hook costs one pointer test per operation there.

namespace gpubench {

class StepObserver {
 public:
  StepObserver() = default;
  StepObserver(const StepObserver&) = delete;
  StepObserver& operator=(const StepObserver&) = delete;
  StepObserver(StepObserver&&) = delete;
  StepObserver& operator=(StepObserver&&) = delete;
  virtual ~StepObserver() = default;

  // `operation` is a string literal that outlives the observer, e.g. "conv1.forward.im2col";
  // begin and end of one operation nest nothing and come in pairs, in program order.
  virtual void begin(const char* operation) = 0;
  // Called from a destructor (ObservedOperation): must not throw.
  virtual void end(const char* operation) noexcept = 0;
};

// Calls begin/end around a scope when `observer` is non-null.
class ObservedOperation {
 public:
  ObservedOperation(StepObserver* observer, const char* operation)
      : observer_(observer), operation_(operation) {
    if (observer_ != nullptr) observer_->begin(operation_);
  }
  ~ObservedOperation() {
    if (observer_ != nullptr) observer_->end(operation_);
  }
  ObservedOperation(const ObservedOperation&) = delete;
  ObservedOperation& operator=(const ObservedOperation&) = delete;
  ObservedOperation(ObservedOperation&&) = delete;
  ObservedOperation& operator=(ObservedOperation&&) = delete;

 private:
  StepObserver* observer_;
  const char* operation_;
};

}  // namespace gpubench
