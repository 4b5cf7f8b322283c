#include "kernels/common/worker_threads.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

#include "kernels/common/openblas.hpp"

namespace gpubench::cpu {

void run_on_workers(int workers, const std::function<void(int)>& task) {
  if (workers <= 1) {
    task(0);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
#pragma omp parallel num_threads(workers)
  {
    // A runtime may grant fewer threads than asked (OMP_THREAD_LIMIT, nesting): every task still
    // runs, a thread taking every n-th. What a task computes depends on its index only, so the
    // results do not depend on which thread ran it.
    const int granted = omp_get_num_threads();
    for (int worker = omp_get_thread_num(); worker < workers; worker += granted) {
      // An exception must not leave an OpenMP region (it would terminate the process).
      try {
        task(worker);
      } catch (...) {
        errors[static_cast<std::size_t>(worker)] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

ShardRows shard_rows(int rows, int shards, int shard) {
  const int base = rows / shards;
  const int extra = rows % shards;
  ShardRows range;
  range.begin = shard * base + std::min(shard, extra);
  range.end = range.begin + base + (shard < extra ? 1 : 0);
  return range;
}

void reduce_gradients(float* total, const std::vector<const float*>& others, std::size_t count,
                      float* parameters, float rate, int workers) {
  // Slices of whole cache lines (16 floats), so no two workers write the same line.
  constexpr std::size_t kLine = 16;
  const auto slices = static_cast<std::size_t>(std::max(1, workers));
  const std::size_t slice = (count + slices * kLine - 1) / (slices * kLine) * kLine;
  run_on_workers(workers, [&](int worker) {
    const std::size_t begin = std::min(count, static_cast<std::size_t>(worker) * slice);
    const std::size_t end = std::min(count, begin + slice);
    for (const float* other : others) {
      for (std::size_t i = begin; i < end; ++i) total[i] += other[i];
    }
    if (parameters == nullptr) return;
    for (std::size_t i = begin; i < end; ++i) parameters[i] -= rate * total[i];
  });
}

void require_single_blas_thread(const char* trainer) {
  if (const int running = blas_threads(); running != 1) {
    throw std::logic_error(std::string(trainer) + ": sharded steps need OpenBLAS at 1 thread, " +
                           "it runs " + std::to_string(running) +
                           " (each shard would start its own OpenBLAS threads on shared cores)");
  }
}

CpuThreadPlan plan_cpu_threads(const ShardRule& rule, double step_flop, int batch, int threads) {
  CpuThreadPlan plan;
  const int by_rows = batch / std::max(1, rule.min_rows_per_shard);
  const int by_flop = rule.min_flop_per_shard > 0
                          ? static_cast<int>(std::min(step_flop / rule.min_flop_per_shard, 1e9))
                          : threads;
  plan.workers = std::max(1, std::min({threads, by_rows, by_flop}));
  if (plan.workers == 1 && step_flop >= rule.min_flop_for_blas_threads) {
    plan.blas_threads = std::max(1, threads);
  }
  return plan;
}

}  // namespace gpubench::cpu
