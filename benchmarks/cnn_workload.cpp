#include "benchmarks/cnn_workload.hpp"

#include <limits>

namespace gpubench {

// The network reads the image data sets as they are (harness/image_dataset.hpp): its input is their
// format.
static_assert(CnnSpec::kChannels == kCifar10Channels && CnnSpec::kImageSize == kCifar10ImageSize &&
              CnnSpec::kClasses == kCifar10Classes &&
              CnnSpec::image_floats() == kCifar10ImageFloats);

const TrainingWorkload& cnn_training_workload() {
#if GPUBENCH_HAS_CUDA
  static const TrainingWorkload workload{"cnn", register_cnn_cpu, register_cnn_gpu,
                                         cnn_largest_batch_rows};
#else
  static const TrainingWorkload workload{"cnn", register_cnn_cpu, nullptr, nullptr};
#endif
  return workload;
}

CnnWorkload make_cnn_workload(const CnnCase& cnn_case) {
  CnnWorkload workload;
  // A batch below 1 is a configuration error before any image is read.
  validate_cnn_batch(cnn_case.batch, std::numeric_limits<int>::max());
  workload.data = load_image_data(cnn_case.data, cnn_case.batch);
  validate_cnn_batch(cnn_case.batch, workload.data.train.rows);
  workload.initial = initial_cnn_parameters(workload.spec);  // validates the spec
  return workload;
}

std::map<std::string, ResultRow::OperationWork> cnn_operation_counters(const CnnSpec& spec,
                                                                       int batch,
                                                                       CnnTrainerKind trainer) {
  std::map<std::string, ResultRow::OperationWork> counters;
  for (const auto& [operation, work] : cnn_operation_work(spec, batch, trainer)) {
    counters[operation] = {work.flop, work.bytes};
  }
  return counters;
}

RowId cnn_row_id(const char* backend, const char* variant, const CnnCase& cnn_case, int readback) {
  return RowId{"cnn",
               backend,
               variant,
               {text_parameter("data", cnn_case.data, LabelKey::data),
                number_parameter("batch", cnn_case.batch, Counter::batch),
                number_parameter("readback", readback, Counter::readback)}};
}

}  // namespace gpubench
