#include "benchmarks/cnn_workload.hpp"

#include <limits>

namespace gpubench {

CnnWorkload make_cnn_workload(const CnnCase& cnn_case) {
  CnnWorkload workload;
  // A batch below 1 is a configuration error before any image is read.
  validate_cnn_batch(cnn_case.batch, std::numeric_limits<int>::max());
  workload.data = load_cnn_data(cnn_case.data, cnn_case.batch);
  validate_cnn_batch(cnn_case.batch, workload.data.train.rows);
  workload.initial = initial_cnn_parameters(workload.spec);  // validates the spec
  return workload;
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
