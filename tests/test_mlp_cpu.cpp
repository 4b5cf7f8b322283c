// The CPU MLP paths: analytic gradients against finite differences, the small-matrix path against
// the OpenBLAS path, Iris reaching its expected test accuracy, a numerically stable loss, and clear
// errors for bad configurations.

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/dataset.hpp"
#include "harness/validation.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/common/worker_threads.hpp"
#include "kernels/mlp/mlp_cpu.hpp"
#include "kernels/mlp/mlp_cpu_small.hpp"

namespace {

using gpubench::MlpSpec;

MlpSpec small_net() {
  MlpSpec spec;
  spec.inputs = 3;
  spec.hidden = {5, 4};
  spec.classes = 3;
  spec.seed = 11;
  return spec;
}

// Mean loss in double precision, straight from the definition (the finite-difference reference).
double reference_loss(const MlpSpec& spec, const std::vector<double>& parameters,
                      const std::vector<float>& inputs, const std::vector<int>& labels, int batch) {
  double total = 0;
  for (int row = 0; row < batch; ++row) {
    std::vector<double> current(
        inputs.begin() + static_cast<std::ptrdiff_t>(row) * spec.inputs,
        inputs.begin() + static_cast<std::ptrdiff_t>(row + 1) * spec.inputs);
    for (int layer = 0; layer < spec.layer_count(); ++layer) {
      const int fan_in = spec.fan_in(layer);
      const int fan_out = spec.fan_out(layer);
      std::vector<double> next(fan_out);
      for (int j = 0; j < fan_out; ++j) {
        double z = parameters[spec.bias_offset(layer) + j];
        for (int i = 0; i < fan_in; ++i) {
          z += current[i] *
               parameters[spec.weight_offset(layer) + static_cast<std::size_t>(i) * fan_out + j];
        }
        next[j] = layer + 1 < spec.layer_count() ? std::max(z, 0.0) : z;
      }
      current = next;
    }
    const double largest = *std::max_element(current.begin(), current.end());
    double sum = 0;
    for (double z : current) sum += std::exp(z - largest);
    total += std::log(sum) + largest - current[labels[row]];
  }
  return total / batch;
}

struct Batch {
  std::vector<float> inputs;
  std::vector<int> labels;
};

Batch random_batch(const MlpSpec& spec, int batch, std::uint64_t seed) {
  Batch data;
  data.inputs.resize(static_cast<std::size_t>(batch) * spec.inputs);
  gpubench::fill_uniform(data.inputs.data(), data.inputs.size(), seed);
  gpubench::SeededRandom random(seed);
  for (int row = 0; row < batch; ++row) {
    data.labels.push_back(static_cast<int>(random.below(spec.classes)));
  }
  return data;
}

TEST(MlpCpu, BackwardMatchesFiniteDifferences) {
  const MlpSpec spec = small_net();
  const int batch = 7;  // not a multiple of the small path's 8 lanes: padding is exercised too
  const Batch data = random_batch(spec, batch, 3);
  const std::vector<float> parameters = gpubench::initial_parameters(spec);

  std::vector<float> blas_gradient(parameters.size());
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::MlpBlasTrainer blas(spec, batch);
  const float blas_loss = blas.loss_and_gradient(parameters.data(), data.inputs.data(),
                                                 data.labels.data(), blas_gradient.data());

  std::vector<double> point(parameters.begin(), parameters.end());
  EXPECT_NEAR(blas_loss, reference_loss(spec, point, data.inputs, data.labels, batch), 1e-6);

  // Central differences in double with step 1e-6: truncation error ~1e-12 and rounding ~1e-10,
  // far below the fp32 error of the analytic gradient (~1e-7 relative). Tolerance: 1e-5 absolute
  // plus 1e-4 relative, i.e. 100x the fp32 error, and 1000x smaller than a typical entry.
  const double step = 1e-6;
  std::vector<float> small_gradient(parameters.size());
  const bool check_small = gpubench::cpu::small_path_supported();
  if (check_small) {
    gpubench::cpu::MlpSmallTrainer small(spec, batch);
    small.set_batch(data.inputs.data(), data.labels.data());
    small.loss_and_gradient(parameters.data(), small_gradient.data());
  }
  double largest_entry = 0;
  for (std::size_t index = 0; index < parameters.size(); ++index) {
    std::vector<double> plus = point;
    std::vector<double> minus = point;
    plus[index] += step;
    minus[index] -= step;
    const double numeric = (reference_loss(spec, plus, data.inputs, data.labels, batch) -
                            reference_loss(spec, minus, data.inputs, data.labels, batch)) /
                           (2 * step);
    const double tolerance = 1e-5 + 1e-4 * std::fabs(numeric);
    EXPECT_NEAR(blas_gradient[index], numeric, tolerance) << "OpenBLAS path, parameter " << index;
    if (check_small) {
      EXPECT_NEAR(small_gradient[index], numeric, tolerance) << "small path, parameter " << index;
    }
    largest_entry = std::max(largest_entry, std::fabs(numeric));
  }
  EXPECT_GT(largest_entry, 1e-2);  // the check compared real gradients, not zeros
}

TEST(MlpCpu, SmallPathEqualsBlasPath) {
  if (!gpubench::cpu::small_path_supported()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  for (const int batch : {1, 37, 120}) {
    for (const std::vector<int>& hidden : {std::vector<int>{10}, std::vector<int>{17, 9}}) {
      MlpSpec spec;
      spec.inputs = 4;
      spec.hidden = hidden;
      spec.classes = 3;
      spec.learning_rate = 0.1F;
      spec.seed = 5;
      const Batch data = random_batch(spec, batch, 9);
      std::vector<float> blas_parameters = gpubench::initial_parameters(spec);
      std::vector<float> small_parameters = blas_parameters;
      gpubench::cpu::MlpBlasTrainer blas(spec, batch);
      gpubench::cpu::MlpSmallTrainer small(spec, batch);
      small.set_batch(data.inputs.data(), data.labels.data());
      // 200 steps: both compute the same sums in different orders (and exp/log differ by ~1e-7),
      // so the trajectories drift apart by rounding only; 1e-4 relative plus 1e-6 absolute on the
      // loss (fp32 rounding of log(sum) near 0 when the loss gets small) and 1e-3 absolute on
      // parameters of size ~0.5 leave room for that and catch any real difference.
      for (int step = 0; step < 200; ++step) {
        const float blas_loss =
            blas.step(blas_parameters.data(), data.inputs.data(), data.labels.data());
        const float small_loss = small.step(small_parameters.data());
        ASSERT_NEAR(small_loss, blas_loss, 1e-4 * blas_loss + 1e-6)
            << "batch " << batch << " step " << step;
      }
      for (std::size_t i = 0; i < blas_parameters.size(); ++i) {
        ASSERT_NEAR(small_parameters[i], blas_parameters[i], 1e-3) << "parameter " << i;
      }
    }
  }
}

TEST(MlpCpu, BlasPathGivesTheSameResultOnAllCores) {
  MlpSpec spec;
  spec.inputs = 64;
  spec.hidden = {256};
  spec.classes = 10;
  const int batch = 512;
  const Batch data = random_batch(spec, batch, 4);
  std::vector<float> one_thread = gpubench::initial_parameters(spec);
  std::vector<float> all_cores = one_thread;
  gpubench::cpu::MlpBlasTrainer trainer(spec, batch);
  gpubench::cpu::set_blas_threads(1);
  const float loss_one = trainer.step(one_thread.data(), data.inputs.data(), data.labels.data());
  gpubench::cpu::set_blas_threads(gpubench::cpu::blas_threads_for_all_cores());
  const float loss_all = trainer.step(all_cores.data(), data.inputs.data(), data.labels.data());
  gpubench::cpu::set_blas_threads(1);
  EXPECT_NEAR(loss_all, loss_one, 1e-6 * loss_one);
  for (std::size_t i = 0; i < one_thread.size(); ++i) {
    ASSERT_NEAR(all_cores[i], one_thread[i], 1e-6) << "parameter " << i;
  }
}

// The sharded step (kernels/common/worker_threads.hpp) against one worker: only the order of the
// sums over rows differs (each shard sums its rows, then the shard sums are added), so the
// trajectories agree to fp32 rounding. Tolerance: 1e-5 relative on the loss (about 80 fp32
// epsilons) and 2e-6 absolute on parameters of size ~0.3; measured at most 1.2e-7 and 1.2e-7 over
// these 30 steps at lr 0.1. A shard that lost a row, divided by its own size instead of the
// batch's, or was summed twice is off by percents in the first step.
constexpr double kShardedLossTolerance = 1e-5;
constexpr double kShardedParameterTolerance = 2e-6;
constexpr int kShardedSteps = 30;

struct Trajectory {
  std::vector<float> losses;
  std::vector<float> parameters;
};

Trajectory train_mlp(const MlpSpec& spec, const Batch& data, int batch, int workers) {
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::MlpBlasTrainer trainer(spec, batch, workers);
  Trajectory result;
  result.parameters = gpubench::initial_parameters(spec);
  for (int step = 0; step < kShardedSteps; ++step) {
    result.losses.push_back(
        trainer.step(result.parameters.data(), data.inputs.data(), data.labels.data()));
  }
  return result;
}

TEST(MlpCpu, ShardedStepsFollowTheOneWorkerTrajectoryAndRepeatExactly) {
  MlpSpec spec;
  spec.inputs = 16;
  spec.hidden = {24, 12};
  spec.classes = 5;
  spec.learning_rate = 0.1F;
  spec.seed = 7;
  // 37 rows: divides evenly among none of 2, 3, 4 workers; 3 rows: fewer than 4 workers.
  for (const int batch : {37, 3}) {
    const Batch data = random_batch(spec, batch, 21);
    const Trajectory one = train_mlp(spec, data, batch, 1);
    for (const int workers : {2, 3, 4}) {
      gpubench::cpu::MlpBlasTrainer probe(spec, batch, workers);
      EXPECT_EQ(probe.workers(), std::min(workers, batch));
      const Trajectory sharded = train_mlp(spec, data, batch, workers);
      double loss_deviation = 0;
      for (int step = 0; step < kShardedSteps; ++step) {
        ASSERT_NEAR(sharded.losses[step], one.losses[step],
                    kShardedLossTolerance * one.losses[step])
            << "batch " << batch << ", " << workers << " workers, step " << step;
        loss_deviation =
            std::max(loss_deviation, std::fabs(sharded.losses[step] / one.losses[step] - 1.0));
      }
      double parameter_deviation = 0;
      for (std::size_t i = 0; i < one.parameters.size(); ++i) {
        ASSERT_NEAR(sharded.parameters[i], one.parameters[i], kShardedParameterTolerance)
            << "batch " << batch << ", " << workers << " workers, parameter " << i;
        parameter_deviation = std::max<double>(
            parameter_deviation, std::fabs(sharded.parameters[i] - one.parameters[i]));
      }
      std::printf("batch %d, %d workers: loss within %.2g relative, parameters within %.2g\n",
                  batch, workers, loss_deviation, parameter_deviation);
      // The same worker count repeats itself bit for bit.
      const Trajectory again = train_mlp(spec, data, batch, workers);
      EXPECT_EQ(again.losses, sharded.losses);
      EXPECT_EQ(again.parameters, sharded.parameters);
    }
    EXPECT_LT(one.losses.back(), 0.97F * one.losses.front());  // it trained: the check compares
  }
}

TEST(MlpCpu, ShardedGradientAndLossEqualTheWholeBatchs) {
  const MlpSpec spec = small_net();
  const int batch = 11;
  const Batch data = random_batch(spec, batch, 5);
  const std::vector<float> parameters = gpubench::initial_parameters(spec);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::MlpBlasTrainer one(spec, batch, 1);
  gpubench::cpu::MlpBlasTrainer three(spec, batch, 3);
  std::vector<float> expected(parameters.size());
  std::vector<float> sharded(parameters.size());
  const float loss_one = one.loss_and_gradient(parameters.data(), data.inputs.data(),
                                               data.labels.data(), expected.data());
  const float loss_three = three.loss_and_gradient(parameters.data(), data.inputs.data(),
                                                   data.labels.data(), sharded.data());
  EXPECT_NEAR(loss_three, loss_one, kShardedLossTolerance * loss_one);
  EXPECT_NEAR(three.loss(parameters.data(), data.inputs.data(), data.labels.data()), loss_one,
              kShardedLossTolerance * loss_one);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(sharded[i], expected[i], 1e-7 + kShardedLossTolerance * std::fabs(expected[i]))
        << "parameter " << i;
  }
}

TEST(MlpCpu, ShardedStepsRefuseOpenBlasThreadsInsideShards) {
  if (gpubench::cpu::blas_threads_for_all_cores() < 2) GTEST_SKIP() << "single-threaded OpenBLAS";
  const MlpSpec spec = small_net();
  const Batch data = random_batch(spec, 8, 5);
  std::vector<float> parameters = gpubench::initial_parameters(spec);
  gpubench::cpu::MlpBlasTrainer trainer(spec, 8, 2);
  gpubench::cpu::set_blas_threads(2);
  EXPECT_THROW(trainer.step(parameters.data(), data.inputs.data(), data.labels.data()),
               std::logic_error);
  gpubench::cpu::set_blas_threads(1);
  EXPECT_NO_THROW(trainer.step(parameters.data(), data.inputs.data(), data.labels.data()));
}

// Debian's OpenBLAS is the pthread build: single-threaded cblas_sgemm called from several threads
// at once must give exactly what the same calls give one after another (its buffer allocator is
// shared and locked). Shapes of the sharded MLP and CNN products, many rounds, so a race in the
// allocator would show.
TEST(MlpCpu, ConcurrentSingleThreadedProductsEqualSerialOnes) {
  gpubench::cpu::set_blas_threads(1);
  constexpr int kWorkers = 4;
  constexpr int kRounds = 200;
  struct Product {
    int m, n, k;
  };
  const Product shapes[kWorkers] = {{512, 64, 75}, {96, 256, 64}, {800, 32, 256}, {37, 512, 128}};
  std::vector<std::vector<float>> a(kWorkers), b(kWorkers), serial(kWorkers), parallel(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    const Product& shape = shapes[w];
    a[w].resize(static_cast<std::size_t>(shape.m) * shape.k);
    b[w].resize(static_cast<std::size_t>(shape.k) * shape.n);
    gpubench::fill_uniform(a[w].data(), a[w].size(), 100 + w);
    gpubench::fill_uniform(b[w].data(), b[w].size(), 200 + w);
    serial[w].resize(static_cast<std::size_t>(shape.m) * shape.n);
    parallel[w].resize(serial[w].size());
  }
  const auto multiply = [&](int w, std::vector<float>* c) {
    const Product& shape = shapes[w];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, shape.m, shape.n, shape.k, 1.0F,
                a[w].data(), shape.k, b[w].data(), shape.n, 0.0F, c->data(), shape.n);
  };
  for (int w = 0; w < kWorkers; ++w) multiply(w, &serial[w]);
  int mismatches = 0;
  for (int round = 0; round < kRounds; ++round) {
    gpubench::cpu::run_on_workers(kWorkers, [&](int w) { multiply(w, &parallel[w]); });
    for (int w = 0; w < kWorkers; ++w) mismatches += parallel[w] != serial[w] ? 1 : 0;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(MlpCpu, WorkersRunEveryShardAndPassOnTheirErrors) {
  std::vector<int> ran(5, 0);
  gpubench::cpu::run_on_workers(5, [&](int worker) { ran[worker] += 1; });
  EXPECT_EQ(ran, std::vector<int>(5, 1));
  EXPECT_THROW(gpubench::cpu::run_on_workers(3,
                                             [](int worker) {
                                               if (worker == 2) throw std::runtime_error("two");
                                             }),
               std::runtime_error);
  // Shards: consecutive, covering every row once, sizes differing by at most one.
  for (const int rows : {1, 7, 64, 65}) {
    for (const int shards : {1, 2, 3, 7}) {
      if (shards > rows) continue;
      int next = 0;
      for (int shard = 0; shard < shards; ++shard) {
        const gpubench::cpu::ShardRows range = gpubench::cpu::shard_rows(rows, shards, shard);
        EXPECT_EQ(range.begin, next);
        EXPECT_GE(range.count(), rows / shards);
        EXPECT_LE(range.count(), rows / shards + 1);
        next = range.end;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

// The thread rule (mlp_cpu_thread_plan) picks from the work, the same on any core count: tiny
// steps stay on one worker, shards keep at least 32 rows and 1 MFLOP, and a batch too small to
// shard runs OpenBLAS's threads only when its products are large.
TEST(MlpCpu, ThreadRulePicksShardsFromTheWork) {
  const auto plan = [](int inputs, std::vector<int> hidden, int classes, int batch, int threads) {
    MlpSpec spec;
    spec.inputs = inputs;
    spec.hidden = std::move(hidden);
    spec.classes = classes;
    const gpubench::cpu::CpuThreadPlan result =
        gpubench::cpu::mlp_cpu_thread_plan(spec, batch, threads);
    return std::vector<int>{result.workers, result.blas_threads};
  };
  using Plan = std::vector<int>;  // workers, OpenBLAS threads
  // Iris (41 kflop per step): one worker, one thread, on any machine.
  EXPECT_EQ(plan(4, {10}, 3, 120, 2), (Plan{1, 1}));
  EXPECT_EQ(plan(4, {10}, 3, 120, 64), (Plan{1, 1}));
  // Synthetic 4096 x 64-512-10 (663 MFLOP): a shard per core up to 128 cores (32 rows each).
  EXPECT_EQ(plan(64, {512}, 10, 4096, 2), (Plan{2, 1}));
  EXPECT_EQ(plan(64, {512}, 10, 4096, 16), (Plan{16, 1}));
  EXPECT_EQ(plan(64, {512}, 10, 4096, 64), (Plan{64, 1}));
  // 256 x 64-64-10 (5.2 MFLOP): five shards of 1 MFLOP at most, whatever the cores.
  EXPECT_EQ(plan(64, {64}, 10, 256, 16), (Plan{5, 1}));
  // 64 x 64-64-10 (1.3 MFLOP): too little for two shards.
  EXPECT_EQ(plan(64, {64}, 10, 64, 2), (Plan{1, 1}));
  // 16 x 64-4096-10 (21 MFLOP, 16 rows): too few rows to shard; OpenBLAS's threads instead.
  EXPECT_EQ(plan(64, {4096}, 10, 16, 8), (Plan{1, 8}));
  EXPECT_EQ(plan(64, {4096}, 10, 1, 8), (Plan{1, 1}));  // 1.3 MFLOP
  // One core: nothing to split.
  EXPECT_EQ(plan(64, {512}, 10, 4096, 1), (Plan{1, 1}));
}

TEST(MlpCpu, IrisReachesNinetyPercentTestAccuracyAfter20000Epochs) {
  const gpubench::DatasetSplit iris = gpubench::load_split_dataset("iris");
  MlpSpec spec;
  spec.inputs = 4;
  spec.hidden = {10};
  spec.classes = 3;
  spec.learning_rate = 0.01F;
  spec.epochs = 20000;
  const int batch = iris.train.rows();
  ASSERT_EQ(batch, 120);
  std::vector<float> blas_parameters = gpubench::initial_parameters(spec);
  std::vector<float> small_parameters = blas_parameters;

  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::MlpBlasTrainer blas(spec, batch);
  float first_loss = 0;
  float blas_loss = 0;
  for (int epoch = 0; epoch < spec.epochs; ++epoch) {
    blas_loss =
        blas.step(blas_parameters.data(), iris.train.inputs.data(), iris.train.labels.data());
    if (epoch == 0) first_loss = blas_loss;
  }
  EXPECT_LT(blas_loss, 0.5F * first_loss);
  const double blas_accuracy =
      gpubench::cpu::mlp_accuracy(spec, blas_parameters.data(), iris.test.inputs.data(),
                                  iris.test.labels.data(), iris.test.rows());
  EXPECT_GE(blas_accuracy, 0.9);

  if (!gpubench::cpu::small_path_supported()) return;
  gpubench::cpu::MlpSmallTrainer small(spec, batch);
  small.set_batch(iris.train.inputs.data(), iris.train.labels.data());
  float small_loss = 0;
  for (int epoch = 0; epoch < spec.epochs; ++epoch)
    small_loss = small.step(small_parameters.data());
  // Same weights, same data, sums in a different order: 20000 steps of a contracting iteration
  // keep the two final losses within 1e-3 relative.
  EXPECT_NEAR(small_loss, blas_loss, 1e-3 * blas_loss);
  EXPECT_DOUBLE_EQ(
      gpubench::cpu::mlp_accuracy(spec, small_parameters.data(), iris.test.inputs.data(),
                                  iris.test.labels.data(), iris.test.rows()),
      blas_accuracy);
}

TEST(MlpCpu, SoftmaxCrossEntropyIsNumericallyStable) {
  const float huge[3] = {1000.0F, 0.0F, -1000.0F};
  float probabilities[3];
  EXPECT_NEAR(gpubench::cpu::softmax_cross_entropy(huge, 3, 0, probabilities), 0.0F, 1e-6F);
  EXPECT_NEAR(gpubench::cpu::softmax_cross_entropy(huge, 3, 1, nullptr), 1000.0F, 1e-3F);
  EXPECT_FLOAT_EQ(probabilities[0], 1.0F);
  EXPECT_FLOAT_EQ(probabilities[2], 0.0F);
  const float equal[4] = {88.0F, 88.0F, 88.0F, 88.0F};  // exp(88) alone is 1.6e38, near FLT_MAX
  EXPECT_NEAR(gpubench::cpu::softmax_cross_entropy(equal, 4, 2, nullptr), std::log(4.0F), 1e-6F);

  // The same extreme logits through a whole training step: finite loss, finite weights.
  MlpSpec spec;
  spec.inputs = 2;
  spec.hidden = {3};
  spec.classes = 2;
  std::vector<float> parameters = gpubench::initial_parameters(spec);
  for (float& value : parameters) value *= 1e4F;
  const std::vector<float> inputs = {1e3F, -1e3F, 5e2F, 2e2F};
  const std::vector<int> labels = {1, 0};
  gpubench::cpu::MlpBlasTrainer blas(spec, 2);
  EXPECT_TRUE(std::isfinite(blas.step(parameters.data(), inputs.data(), labels.data())));
  if (gpubench::cpu::small_path_supported()) {
    gpubench::cpu::MlpSmallTrainer small(spec, 2);
    small.set_batch(inputs.data(), labels.data());
    EXPECT_TRUE(std::isfinite(small.step(parameters.data())));
  }
  for (float value : parameters) EXPECT_TRUE(std::isfinite(value));
}

TEST(MlpCpu, InitialParametersAreDeterministicAndBounded) {
  MlpSpec spec = small_net();
  const std::vector<float> first = gpubench::initial_parameters(spec);
  EXPECT_EQ(first, gpubench::initial_parameters(spec));
  EXPECT_EQ(first.size(), spec.parameter_count());
  EXPECT_EQ(spec.parameter_count(), 3U * 5 + 5 + 5 * 4 + 4 + 4 * 3 + 3);
  for (int layer = 0; layer < spec.layer_count(); ++layer) {
    const float bound = 1.0F / std::sqrt(static_cast<float>(spec.fan_in(layer)));
    for (std::size_t i = spec.weight_offset(layer); i < spec.weight_offset(layer + 1); ++i) {
      EXPECT_LE(std::fabs(first[i]), bound);
    }
  }
  spec.seed = 12;
  EXPECT_NE(first, gpubench::initial_parameters(spec));
  EXPECT_EQ(gpubench::mlp_step_flop(small_net(), 10),
            10 * (4.0 * (3 * 5 + 5 * 4 + 4 * 3) + 2.0 * (5 * 4 + 4 * 3)));
}

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

TEST(MlpCpu, BadConfigurationsAreClearErrors) {
  MlpSpec zero_width = small_net();
  zero_width.hidden = {10, 0};
  EXPECT_NE(message_of([&] { zero_width.validate(); }).find("hidden layer 1 has width 0"),
            std::string::npos);
  EXPECT_NE(message_of([&] { gpubench::cpu::MlpBlasTrainer(zero_width, 4); }).find("width 0"),
            std::string::npos);
  if (gpubench::cpu::small_path_supported()) {
    EXPECT_NE(message_of([&] { gpubench::cpu::MlpSmallTrainer(zero_width, 4); }).find("width 0"),
              std::string::npos);
  }
  MlpSpec one_class = small_net();
  one_class.classes = 1;
  EXPECT_NE(message_of([&] { one_class.validate(); }).find("at least two classes"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              gpubench::validate_batch(small_net(), 200, 120);
            }).find("batch 200 is larger than the 120 training rows"),
            std::string::npos);
  EXPECT_NE(message_of([&] { gpubench::cpu::MlpBlasTrainer(small_net(), 0); }).find("batch 0"),
            std::string::npos);
  const std::vector<int> labels_with_negative = {2, 0, -1};
  EXPECT_NE(message_of([&] {
              gpubench::validate_labels(small_net(), labels_with_negative.data(), 3);
            }).find("label -1 of row 2 is outside 0..2"),
            std::string::npos);
  const std::vector<int> labels_in_range = {2, 0, 1};
  EXPECT_EQ(message_of([&] { gpubench::validate_labels(small_net(), labels_in_range.data(), 3); }),
            "no error");
  if (gpubench::cpu::small_path_supported()) {
    gpubench::cpu::MlpSmallTrainer small(small_net(), 2);
    const std::vector<float> inputs(6, 0.5F);
    const std::vector<int> bad_labels = {0, 3};
    EXPECT_NE(message_of([&] {
                small.set_batch(inputs.data(), bad_labels.data());
              }).find("label 3 of row 1"),
              std::string::npos);
  }
}

}  // namespace
