#pragma once
// Data-parallel training steps on the CPU: the batch split into shards, one per worker, each
// running its forward and backward pass with single-threaded OpenBLAS into its own gradient
// buffer; then the shard gradients summed in a fixed order and one update.
//
// Why shards and not only OpenBLAS's threads: OpenBLAS threads the products alone, so bias, ReLU,
// softmax, im2col/col2im, pooling and the update stay on one core, and the products of small
// layers are too small for its threading to pay (a convolutional trainer at batch 64 ran 46 ms per
// step on one thread and 50 ms with OpenBLAS on two, on a 2-core Zen 4). A shard does all of its
// step's work on its own core and meets the others twice per step (after the backward pass, after
// the update).
//
// The threads are OpenMP's (libgomp's pool, kept between parallel regions, so a step does not
// create threads). OpenBLAS must run one thread inside shards, else every shard would start
// OpenBLAS's own threads on the same cores: trainers check it (require_single_blas_thread). The
// pthread build of OpenBLAS (Debian's 0.3.21) is safe to call from several threads at once: its
// buffer allocator takes a lock (USE_LOCKING is implied by USE_THREAD); a CPU trainer's test
// checks concurrent products bit for bit against the same products run one after another.

#include <cstddef>
#include <functional>
#include <vector>

namespace gpubench::cpu {

// Runs task(worker) for every worker 0..workers-1, each on its own thread (the caller's thread is
// one of them), and returns when all have finished. workers <= 1 runs task(0) on the caller's
// thread with no threading runtime involved. An exception thrown by a task is rethrown here after
// every worker has finished (the first, by worker index).
void run_on_workers(int workers, const std::function<void(int)>& task);

// Rows [begin, end) of shard `shard` of `shards` over `rows` rows: consecutive, in order, sizes
// differing by at most one (the first rows % shards shards have one more).
struct ShardRows {
  int begin = 0;
  int end = 0;
  int count() const { return end - begin; }
};
ShardRows shard_rows(int rows, int shards, int shard);

// total[i] += others[0][i] + others[1][i] + ... (in this order, so a given shard count always
// sums the same way), then, when `parameters` is non-null, parameters[i] -= rate * total[i]; over
// `count` elements split among `workers` threads by index range.
void reduce_gradients(float* total, const std::vector<const float*>& others, std::size_t count,
                      float* parameters, float rate, int workers);

// Throws std::logic_error when OpenBLAS runs more than one thread, since the shards would then
// start OpenBLAS's threads on cores the other shards use.
void require_single_blas_thread(const char* trainer);

// How a training step uses `threads` cores: `workers` shards with single-threaded OpenBLAS, or one
// shard with OpenBLAS at `blas_threads` threads. The rule that picks it is plan_cpu_threads.
struct CpuThreadPlan {
  int workers = 1;
  int blas_threads = 1;
};

// The rule, from the work of one step, so that the same description gives the same plan on any
// machine (no per-row tuning):
// - shards: as many as `threads` allows while every shard keeps at least `min_rows_per_shard` rows
//   and `min_flop_per_shard` flop (below those, the shard's fixed costs, its two meetings with the
//   others and its own full-size weight gradient to sum, outweigh the work it takes over);
// - one shard: OpenBLAS at `threads` threads when the step has at least `min_flop_for_blas_threads`
//   flop (products large enough for OpenBLAS's threading to pay), else one thread.
struct ShardRule {
  int min_rows_per_shard = 1;
  double min_flop_per_shard = 0;
  double min_flop_for_blas_threads = 0;
};
CpuThreadPlan plan_cpu_threads(const ShardRule& rule, double step_flop, int batch, int threads);

}  // namespace gpubench::cpu
