// mlp/gpu/eager/data:D/batch:B/hidden:H/readback:R[/input:pageable|pinned]/manual_time
//   one launch per operation from the host, like a framework (kernels/mlp/mlp_cuda_trainer.hpp):
//   cuBLAS layer products plus small kernels, 6 x layers launches per step.
// mlp/gpu/graph/data:D/batch:B/hidden:H/readback:R[/input:pinned]/manual_time
//   the same operations captured once in a CUDA graph of graph_steps steps and replayed.
// mlp/gpu/fused/data:D/batch:B/hidden:H/readback:0/manual_time
//   every epoch in one kernel launch on one block, when the net fits in shared memory
//   (kernels/mlp/mlp_cuda_fused.cuh); otherwise skipped with the bytes it would need.
//
// readback:R copies the loss to the host and waits for it after every R-th step (R = 1: every step,
// like printing loss.item(); 0: never). input:pageable|pinned copies the batch from host memory
// before every step, like a data loader; without it the batch is uploaded once, before timing.
//
// One timed iteration trains the case's epochs from the initial weights: a device-to-device copy
// restores them before the iteration (and a synchronisation keeps it out of the clock). The
// iteration time is t_wall, the host clock around the synchronised iteration: what the user waits
// for, launch and synchronisation costs included. Its parts (DESIGN, "The overhead model"):
//   t_compute  the kernels alone: steps x the CUDA-event time of one step when a graph of steps
//              runs back to back, with the operations ordered as the variant orders them
//              (fused: the event time of the kernel)
//   t_h2d      input copies x the event time of one such copy, measured separately
//   t_d2h      readbacks x the event time of one 4-byte device-to-host copy
//   t_overhead t_wall minus the three: launch, API and synchronisation cost, and GPU idle time
// Validation: the first step's loss equals the CPU's forward pass from the same weights; where the
// CPU can afford it, the whole loss trajectory (every readback, and the final loss) matches the
// CPU's within 1e-3 relative.

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/bench_support.hpp"
#include "benchmarks/gpu_support.hpp"
#include "benchmarks/registration.hpp"
#include "harness/dataset.hpp"
#include "harness/gpu_info.hpp"
#include "kernels/common/cuda_check.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/host_buffer.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"
#include "kernels/mlp/mlp_cuda_fused_trainer.hpp"
#include "kernels/mlp/mlp_cuda_trainer.hpp"

namespace gpubench {

namespace {

using cuda::MlpExecution;
using cuda::MlpInput;

constexpr std::uint64_t kInitialWeightSeed = 1;  // the same initial weights as mlp_cpu.cpp
// Steps per graph replay without readbacks (with readbacks: the readback interval).
constexpr int kGraphSteps = 200;
// Steps in the graph that measures t_compute.
constexpr int kComputeProbeSteps = 100;
// The CPU reference trajectory is computed only up to this many layer-product flop (about a
// second of one core); beyond it only the first step is checked.
constexpr double kReferenceFlop = 2e10;
// First-step loss against the CPU forward pass: the same sums in another order (cuBLAS, expf):
// 1e-4 relative is 100x fp32 rounding and far below any real error.
constexpr double kFirstLossTolerance = 1e-4;
// Trajectories: each step adds rounding that SGD carries on; 1e-3 relative after 20000 Iris epochs.
constexpr double kTrajectoryTolerance = 1e-3;

struct Workload {
  MlpData data;
  MlpSpec spec;
  std::vector<float> initial;
};

Workload make_workload(const MlpCase& mlp_case) {
  Workload workload;
  workload.data = load_mlp_data(mlp_case.data, mlp_case.batch);
  workload.spec.inputs = workload.data.batch.features;
  workload.spec.hidden = mlp_case.hidden;
  workload.spec.classes = workload.data.batch.classes;
  workload.spec.learning_rate = 0.01F;
  workload.spec.epochs = mlp_case.epochs;
  workload.spec.seed = kInitialWeightSeed;
  workload.initial = initial_parameters(workload.spec);  // validates the spec
  return workload;
}

bool close(double value, double reference, double relative) {
  return std::fabs(value - reference) <= relative * std::fabs(reference) + 1e-6;
}

// The CPU's loss after every step, or empty when that would cost more than kReferenceFlop.
std::vector<float> cpu_trajectory(const Workload& workload) {
  const MlpSpec& spec = workload.spec;
  const int batch = workload.data.batch.rows();
  if (spec.epochs * mlp_step_flop(spec, batch) > kReferenceFlop) return {};
  std::vector<float> parameters = workload.initial;
  std::vector<float> losses(static_cast<std::size_t>(spec.epochs));
  const int widest = *std::max_element(spec.hidden.begin(), spec.hidden.end());
  if (cpu::small_path_supported() && widest <= 64 && batch <= 4096) {
    cpu::MlpSmallTrainer trainer(spec, batch);
    trainer.set_batch(workload.data.batch.inputs.data(), workload.data.batch.labels.data());
    for (float& loss : losses) loss = trainer.step(parameters.data());
  } else {
    cpu::set_blas_threads(cpu::blas_threads_for_all_cores());
    cpu::MlpBlasTrainer trainer(spec, batch);
    for (float& loss : losses) {
      loss = trainer.step(parameters.data(), workload.data.batch.inputs.data(),
                          workload.data.batch.labels.data());
    }
  }
  return losses;
}

// SkipWithError and false unless the first-step loss matches the CPU's forward pass.
bool check_first_loss(benchmark::State& state, const Workload& workload, float gpu_loss) {
  cpu::set_blas_threads(cpu::blas_threads_for_all_cores());
  cpu::MlpBlasTrainer reference(workload.spec, workload.data.batch.rows());
  const float expected = reference.loss(workload.initial.data(), workload.data.batch.inputs.data(),
                                        workload.data.batch.labels.data());
  if (close(gpu_loss, expected, kFirstLossTolerance)) return true;
  const std::string message = "first-step loss " + std::to_string(gpu_loss) +
                              " differs from the CPU forward pass " + std::to_string(expected);
  state.SkipWithError(message.c_str());
  return false;
}

// SkipWithError and false unless `losses[i]`, the loss after step (i + 1) * every, matches the CPU
// trajectory (when there is one).
bool check_trajectory(benchmark::State& state, const std::vector<float>& reference,
                      const std::vector<float>& losses, int every) {
  if (reference.empty()) return true;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    const std::size_t step = (i + 1) * static_cast<std::size_t>(every);  // 1-based
    if (step > reference.size()) break;
    if (!close(losses[i], reference[step - 1], kTrajectoryTolerance)) {
      const std::string message = "loss after step " + std::to_string(step) + " is " +
                                  std::to_string(losses[i]) + ", the CPU's " +
                                  std::to_string(reference[step - 1]);
      state.SkipWithError(message.c_str());
      return false;
    }
  }
  return true;
}

// What MlpGpuTrainer allocates, before allocating it.
std::size_t trainer_bytes(const MlpSpec& spec, int batch) {
  const auto rows = static_cast<std::size_t>(batch);
  std::size_t floats = 3 * spec.parameter_count() + rows * (spec.inputs + 1 + spec.classes);
  for (int width : spec.hidden) floats += 2 * rows * width;  // activation and dZ
  return floats * sizeof(float) + (std::size_t{64} << 20);   // + two cuBLAS workspaces
}

// CUDA-event time of one cudaMemcpyAsync of `bytes` (mean of several, after a warm-up copy).
double copy_seconds(void* destination, const void* source, std::size_t bytes, cudaMemcpyKind kind,
                    cudaStream_t stream) {
  constexpr int kRepeats = 16;
  Event start;
  Event stop;
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream));
  start.record(stream);
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, kind, stream));
  }
  stop.record(stream);
  stop.synchronize();
  return Event::seconds_between(start, stop) / kRepeats;
}

void write_common_counters(benchmark::State& state, const Workload& workload, double wall_s,
                           double kernels_per_step, double readbacks, double bytes_h2d,
                           float final_loss, const std::vector<float>& parameters, int readback) {
  const MlpSpec& spec = workload.spec;
  const int batch = workload.data.batch.rows();
  const double epochs = spec.epochs;
  write_flop_counters(state, epochs * mlp_step_flop(spec, batch), wall_s,
                      gpu_peak_flops(*gpu_info(), "fp32"));
  state.counters["t_epoch"] = wall_s / epochs;
  state.counters["samples_per_s"] = batch * epochs / wall_s;
  // `kernels` is per iteration like every counter (DESIGN.md); an iteration trains `epochs` steps.
  state.counters["kernels"] = kernels_per_step * epochs;
  state.counters["kernels_per_step"] = kernels_per_step;
  state.counters["readbacks"] = readbacks;
  state.counters["bytes_h2d"] = bytes_h2d;
  state.counters["final_loss"] = final_loss;
  if (workload.data.test.rows() > 0) {
    state.counters["test_accuracy"] =
        cpu::mlp_accuracy(spec, parameters.data(), workload.data.test.inputs.data(),
                          workload.data.test.labels.data(), workload.data.test.rows());
  }
  state.counters["batch"] = batch;
  state.counters["hidden"] = spec.hidden.front();
  state.counters["hidden_layers"] = static_cast<double>(spec.hidden.size());
  state.counters["readback"] = readback;
  state.counters["epochs"] = epochs;
}

void mlp_gpu_stepwise(benchmark::State& state, MlpCase mlp_case, MlpExecution execution,
                      int readback, MlpInput input) {
  run_guarded(state, [&] {
    const Workload workload = make_workload(mlp_case);
    const MlpSpec& spec = workload.spec;
    const int batch = mlp_case.batch;
    const int epochs = spec.epochs;
    if (!fits_on_device(state, trainer_bytes(spec, batch))) return;
    cuda::MlpGpuTrainer trainer(spec, batch, workload.data.batch.inputs.data(),
                                workload.data.batch.labels.data(), workload.initial.data());
    const cudaStream_t stream = trainer.stream();

    // Validation of one step, which also warms up cuBLAS and loads the kernels.
    if (!check_first_loss(state, workload, trainer.step_and_read_loss())) return;
    trainer.enqueue_reset();
    const double step_s = trainer.measure_step_seconds(std::min(epochs, kComputeProbeSteps),
                                                       execution == MlpExecution::graph);
    trainer.enqueue_reset();

    // One copy of each kind the iteration makes, timed on its own.
    double h2d_per_step_s = 0;
    if (input != MlpInput::resident) {
      const HostMemory kind = input == MlpInput::pinned ? HostMemory::pinned : HostMemory::pageable;
      const std::size_t input_bytes = workload.data.batch.inputs.size() * sizeof(float);
      const std::size_t label_bytes = workload.data.batch.labels.size() * sizeof(int);
      HostBuffer host(input_bytes, kind);
      DeviceBuffer device(input_bytes);
      h2d_per_step_s =
          copy_seconds(device.data(), host.data(), input_bytes, cudaMemcpyHostToDevice, stream) +
          copy_seconds(device.data(), host.data(), label_bytes, cudaMemcpyHostToDevice, stream);
    }
    double d2h_per_readback_s = 0;
    if (readback > 0) {
      PinnedHostBuffer host(sizeof(float));
      DeviceBuffer device(sizeof(float));
      d2h_per_readback_s =
          copy_seconds(host.data(), device.data(), sizeof(float), cudaMemcpyDeviceToHost, stream);
    }

    cuda::MlpRunConfig config;
    config.execution = execution;
    config.readback_every = readback;
    config.input = input;
    config.graph_steps = kGraphSteps;
    trainer.prepare(config, epochs);  // graphs are captured and uploaded here

    std::vector<float> losses;
    double wall_total_s = 0;
    for (auto _ : state) {
      trainer.enqueue_reset();
      GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      losses.clear();
      const auto wall_start = std::chrono::steady_clock::now();
      trainer.run(epochs, &losses);
      GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      const double wall = seconds_since(wall_start);
      wall_total_s += wall;
      state.SetIterationTime(wall);
    }

    const float final_loss = trainer.last_loss();
    const std::vector<float> reference = cpu_trajectory(workload);
    if (!check_trajectory(state, reference, losses, std::max(readback, 1))) return;
    if (!check_trajectory(state, reference, {final_loss}, epochs)) return;

    const double wall_s = wall_total_s / static_cast<double>(state.iterations());
    const double readbacks = readback > 0 ? epochs / readback : 0;
    const double h2d_s = epochs * h2d_per_step_s;
    const double d2h_s = readbacks * d2h_per_readback_s;
    const double compute_s = epochs * step_s;
    state.counters["t_h2d"] = h2d_s;
    state.counters["t_compute"] = compute_s;
    state.counters["t_d2h"] = d2h_s;
    state.counters["t_wall"] = wall_s;
    state.counters["t_overhead"] = wall_s - h2d_s - compute_s - d2h_s;
    state.counters["device_bytes"] = static_cast<double>(trainer.device_bytes());
    if (execution == MlpExecution::graph) state.counters["graph_steps"] = trainer.graph_steps();
    write_common_counters(state, workload, wall_s, trainer.launches_per_step(), readbacks,
                          static_cast<double>(epochs) * trainer.input_bytes_per_step(), final_loss,
                          trainer.parameters(), readback);
    state.SetLabel("data=" + mlp_case.data +
                   " variant=" + (execution == MlpExecution::eager ? "eager" : "graph") +
                   " input=" + cuda::mlp_input_name(input));
  });
}

void mlp_gpu_fused(benchmark::State& state, MlpCase mlp_case) {
  run_guarded(state, [&] {
    const Workload workload = make_workload(mlp_case);
    const MlpSpec& spec = workload.spec;
    const int batch = mlp_case.batch;
    const int epochs = spec.epochs;
    const cuda::MlpFusedPlan plan = cuda::plan_mlp_fused_on_current_device(spec, batch);
    if (!plan.fits()) {
      state.SkipWithError(plan.why_not().c_str());
      return;
    }
    cuda::MlpFusedTrainer trainer(spec, batch, workload.data.batch.inputs.data(),
                                  workload.data.batch.labels.data(), workload.initial.data());
    const cudaStream_t stream = trainer.stream();
    trainer.launch(1);
    if (!check_first_loss(state, workload, trainer.loss_history(1).front())) return;
    trainer.enqueue_reset();
    trainer.launch(epochs);  // warm-up
    Event start;
    Event stop;
    double wall_total_s = 0;
    double kernel_total_s = 0;
    for (auto _ : state) {
      trainer.enqueue_reset();
      GPUBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto wall_start = std::chrono::steady_clock::now();
      start.record(stream);
      trainer.launch(epochs);
      stop.record(stream);
      stop.synchronize();
      const double wall = seconds_since(wall_start);
      wall_total_s += wall;
      kernel_total_s += Event::seconds_between(start, stop);
      state.SetIterationTime(wall);
    }

    const std::vector<float> losses = trainer.loss_history(epochs);
    if (!check_trajectory(state, cpu_trajectory(workload), losses, 1)) return;
    const double iterations = static_cast<double>(state.iterations());
    const double wall_s = wall_total_s / iterations;
    const double kernel_s = kernel_total_s / iterations;
    state.counters["t_h2d"] = 0;
    state.counters["t_compute"] = kernel_s;
    state.counters["t_d2h"] = 0;
    state.counters["t_wall"] = wall_s;
    state.counters["t_overhead"] = wall_s - kernel_s;
    state.counters["device_bytes"] = static_cast<double>(trainer.device_bytes());
    state.counters["shared_bytes"] = static_cast<double>(plan.shared_bytes);
    state.counters["threads_per_block"] = plan.threads;
    write_common_counters(state, workload, wall_s, 1.0 / epochs, 0, 0, losses.back(),
                          trainer.parameters(), 0);
    state.SetLabel("data=" + mlp_case.data + " variant=fused input=resident");
  });
}

std::string case_segments(const MlpCase& mlp_case, int readback) {
  return segment("data", mlp_case.data) + segment("batch", mlp_case.batch) +
         hidden_segment(mlp_case.hidden) + segment("readback", readback);
}

}  // namespace

void register_mlp_gpu(const Sweep& sweep) {
  for (const MlpCase& mlp_case : sweep.mlp_cases) {
    for (int readback : mlp_case.gpu_readbacks) {
      const std::string segments = case_segments(mlp_case, readback);
      register_manual_time("mlp/gpu/eager" + segments, mlp_gpu_stepwise, mlp_case,
                           MlpExecution::eager, readback, MlpInput::resident);
      register_manual_time("mlp/gpu/graph" + segments, mlp_gpu_stepwise, mlp_case,
                           MlpExecution::graph, readback, MlpInput::resident);
    }
    if (mlp_case.input_transfer) {
      const std::string segments = case_segments(mlp_case, 0);
      for (MlpInput input : {MlpInput::pageable, MlpInput::pinned}) {
        register_manual_time(
            "mlp/gpu/eager" + segments + segment("input", cuda::mlp_input_name(input)),
            mlp_gpu_stepwise, mlp_case, MlpExecution::eager, 0, input);
      }
      // A graph cannot capture a copy from pageable memory: pinned only.
      register_manual_time("mlp/gpu/graph" + segments + segment("input", "pinned"),
                           mlp_gpu_stepwise, mlp_case, MlpExecution::graph, 0, MlpInput::pinned);
    }
    if (mlp_case.fused)
      register_manual_time("mlp/gpu/fused" + case_segments(mlp_case, 0), mlp_gpu_fused, mlp_case);
  }
}

}  // namespace gpubench
