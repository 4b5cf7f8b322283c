// The two roofs' inputs: the memory ceilings the harness measures (harness/cpu_bandwidth.hpp) and
// the work models rows divide by them (bytes_moved, flop_op:, bytes_op:; docs/workloads.md).

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/cpu_bandwidth.hpp"
#include "harness/schema.hpp"
#include "kernels/cnn/cnn_cpu.hpp"
#include "kernels/cnn/cnn_spec.hpp"
#include "kernels/common/step_observer.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace {

using gpubench::CnnSpec;
using gpubench::CnnTrainerKind;

TEST(CpuBandwidth, TriadWritesEveryElement) {
  const std::vector<double> b = {1, 2, 3, 4, 5};
  std::vector<double> a = {0.5, 0.25, -1, 0, 8};
  gpubench::inplace_triad(a.data(), b.data(), 2.0, a.size());
  EXPECT_EQ(a, (std::vector<double>{2, 2.5, 1, 4, 21}));
}

TEST(CpuBandwidth, ATriadElementIsStreamsTwentyFourBytes) {
  // 8 read from a, 8 from b, 8 written back to a (a line already read: no write-allocate read).
  EXPECT_DOUBLE_EQ(gpubench::triad_bytes(1000), 24000);
}

TEST(CpuBandwidth, SmallTrialsMeasureAPositiveRate) {
  gpubench::TriadTrials trials;
  trials.elements = std::size_t{1} << 16;
  trials.threads = 2;
  trials.passes = 4;
  trials.repetitions = 3;
  const gpubench::TriadResult result = gpubench::measure_triad(trials);
  EXPECT_EQ(result.why, "");
  EXPECT_GT(result.bytes_per_s, 0);
  EXPECT_GE(result.repetitions_run, 2);
  EXPECT_LE(result.repetitions_run, 3);
}

TEST(CpuBandwidth, FewerElementsThanThreadsIsNoMeasurement) {
  gpubench::TriadTrials trials;
  trials.elements = 1;
  trials.threads = 2;
  const gpubench::TriadResult result = gpubench::measure_triad(trials);
  EXPECT_EQ(result.bytes_per_s, 0);
  EXPECT_NE(result.why, "");
}

TEST(CpuBandwidth, CachesAreReadFromTheMachine) {
  const gpubench::CacheSizes caches = gpubench::read_cache_sizes();
  if (caches.source == "unknown") GTEST_SKIP() << "neither sysfs nor sysconf gives cache sizes";
  EXPECT_GT(caches.llc_bytes, 0U);
  EXPECT_GE(caches.llc_level, 2);
  EXPECT_GE(caches.llc_instances, 1);
}

TEST(WorkSchema, TrafficCountersAreDeclaredWithUnits) {
  using gpubench::Counter;
  EXPECT_EQ(gpubench::counter_spec(Counter::bytes_moved).key, "bytes_moved");
  EXPECT_EQ(gpubench::counter_spec(Counter::bytes_moved).unit, "B");
  EXPECT_EQ(gpubench::counter_spec(Counter::arithmetic_intensity).key, "arithmetic_intensity");
  EXPECT_EQ(gpubench::counter_spec(Counter::arithmetic_intensity).unit, "flop/B");
  const std::string schema = gpubench::schema_json();
  EXPECT_NE(schema.find("\"flop_op:\""), std::string::npos);
  EXPECT_NE(schema.find("\"bytes_op:\""), std::string::npos);
}

TEST(WorkModel, MlpStepBytesCountEachOperandOnce) {
  gpubench::MlpSpec spec;
  spec.inputs = 4;
  spec.hidden = {10};
  spec.classes = 3;
  // Batch 2, by hand (elements): layer 0 forward 8 + 40 + 10 + 20, weight gradient 8 + 20 + 40 +
  // 10; layer 1 forward 20 + 30 + 3 + 6, weight gradient 20 + 6 + 30 + 3, input gradient
  // 6 + 30 + 20 + 20; loss 6 + 2 + 6; update 3 x 83 parameters.
  const double elements = 78 + 78 + 59 + 59 + 76 + 14 + 3 * 83;
  ASSERT_EQ(spec.parameter_count(), 83U);
  EXPECT_DOUBLE_EQ(gpubench::mlp_step_bytes(spec, 2), 4 * elements);
}

TEST(WorkModel, CnnOperationsAddUpToTheStepFlop) {
  const CnnSpec spec;
  for (const CnnTrainerKind trainer : {CnnTrainerKind::cpu, CnnTrainerKind::gpu}) {
    double flop = 0;
    double bytes = 0;
    for (const auto& [operation, work] : gpubench::cnn_operation_work(spec, 8, trainer)) {
      EXPECT_GT(work.bytes, 0) << operation;
      flop += work.flop;
      bytes += work.bytes;
    }
    EXPECT_DOUBLE_EQ(flop, gpubench::cnn_step_flop(spec, 8));
    // The operations move the im2col columns too, which the layer model leaves out.
    EXPECT_GT(bytes, gpubench::cnn_step_bytes(spec, 8));
  }
}

TEST(WorkModel, CnnStepBytesGrowWithTheBatchAndKeepTheParameters) {
  const CnnSpec spec;
  // The parameters' traffic (forward, gradient, update) does not grow with the batch; the
  // activations' does, linearly.
  const double one = gpubench::cnn_step_bytes(spec, 1);
  const double two = gpubench::cnn_step_bytes(spec, 2);
  const double three = gpubench::cnn_step_bytes(spec, 3);
  EXPECT_DOUBLE_EQ(three - two, two - one);
  EXPECT_GT(one - (two - one), 3 * 4 * static_cast<double>(spec.parameter_count()));
}

// Records the names a trainer gives its operations.
class NameRecorder : public gpubench::StepObserver {
 public:
  void begin(const char* operation) override { names.insert(operation); }
  void end(const char* /*operation*/) noexcept override {}
  std::set<std::string> names;
};

TEST(WorkModel, CnnCpuModelNamesTheCpuTrainersOperations) {
  const CnnSpec spec;
  constexpr int kBatch = 2;
  std::vector<float> parameters = gpubench::initial_cnn_parameters(spec);
  std::vector<float> images(static_cast<std::size_t>(kBatch) * CnnSpec::image_floats(), 0.5F);
  std::vector<int> labels = {3, 7};
  gpubench::cpu::CnnCpuTrainer trainer(spec, kBatch);
  NameRecorder recorder;
  trainer.set_observer(&recorder);
  trainer.step(parameters.data(), images.data(), labels.data());
  std::set<std::string> modelled;
  for (const auto& entry : gpubench::cnn_operation_work(spec, kBatch, CnnTrainerKind::cpu)) {
    modelled.insert(entry.first);
  }
  EXPECT_EQ(recorder.names, modelled);
}

}  // namespace
