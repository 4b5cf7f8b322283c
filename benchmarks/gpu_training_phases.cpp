#include "benchmarks/gpu_training_phases.hpp"

#include "harness/host_clock_timer.hpp"
#include "harness/warm_device_timer.hpp"
#include "kernels/common/cuda_check.hpp"

namespace gpubench {

namespace {

// Copies averaged for the event time of one copy (a 4-byte copy is shorter than the events'
// 0.5 us resolution).
constexpr int kCopyRepeats = 16;

double copy_seconds(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind kind,
                    cudaStream_t stream) {
  return warm_device_seconds(stream, kCopyRepeats, [&] {
    GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream));
  });
}

}  // namespace

double compute_seconds_per_step(const CudaGraph& compute_graph, int steps, cudaStream_t stream) {
  return warm_device_seconds(stream, 1, [&] { compute_graph.launch(stream); }) / steps;
}

double input_copy_seconds(HostMemory host_memory, std::size_t input_bytes, std::size_t label_bytes,
                          cudaStream_t stream) {
  HostBuffer host(input_bytes, host_memory);
  DeviceBuffer device(input_bytes);
  return copy_seconds(device.data(), host.data(), input_bytes, cudaMemcpyHostToDevice, stream) +
         copy_seconds(device.data(), host.data(), label_bytes, cudaMemcpyHostToDevice, stream);
}

double loss_readback_seconds(cudaStream_t stream) {
  PinnedHostBuffer host(sizeof(float));
  DeviceBuffer device(sizeof(float));
  return copy_seconds(host.data(), device.data(), sizeof(float), cudaMemcpyDeviceToHost, stream);
}

double time_training_runs(benchmark::State& state, cuda::GpuTrainer& trainer, int steps,
                          std::vector<float>* losses, DeviceMemoryMeter* meter) {
  HostClockTimer timer(HostClockTimer::Report::manual, meter);
  return timer.run(
      state,
      [&] {
        trainer.enqueue_reset();
        GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(trainer.stream()));
        losses->clear();
      },
      [&] {
        trainer.run(steps, losses);
        GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(trainer.stream()));
      });
}

LargestBatchRun time_largest_batch_steps(benchmark::State& state, cuda::GpuTrainer& trainer,
                                         int steps, DeviceMemoryMeter& meter) {
  std::vector<float> losses;
  const double wall_s = time_training_runs(state, trainer, steps, &losses, &meter);
  return {wall_s / steps, trainer.last_loss(), trainer.device_bytes()};
}

}  // namespace gpubench
