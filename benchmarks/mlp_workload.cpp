#include "benchmarks/mlp_workload.hpp"

#include <string>

namespace gpubench {

const TrainingWorkload& mlp_training_workload() {
#if GPUBENCH_HAS_CUDA
  static const TrainingWorkload workload{"mlp", register_mlp_cpu, register_mlp_gpu,
                                         mlp_largest_batch_rows};
#else
  static const TrainingWorkload workload{"mlp", register_mlp_cpu, nullptr, nullptr};
#endif
  return workload;
}

MlpWorkload make_mlp_workload(const MlpCase& mlp_case, int epochs) {
  MlpWorkload workload;
  workload.data = load_tabular_data(mlp_case.data, mlp_case.batch);
  workload.spec.inputs = workload.data.batch.features;
  workload.spec.hidden = mlp_case.hidden;
  workload.spec.classes = workload.data.batch.classes;
  workload.spec.epochs = epochs;
  workload.initial = initial_parameters(workload.spec);  // validates the spec
  return workload;
}

NameParameter hidden_parameter(const std::vector<int>& hidden) {
  NameParameter parameter = number_parameter("hidden", hidden.front(), Counter::hidden);
  if (hidden.size() > 1) parameter.text += "x" + std::to_string(hidden.size());
  return parameter;
}

RowId mlp_row_id(const char* backend, const char* variant, const MlpCase& mlp_case, int readback) {
  return RowId{
      "mlp",
      backend,
      variant,
      {text_parameter("data", mlp_case.data, LabelKey::data),
       number_parameter("batch", mlp_case.batch, Counter::batch), hidden_parameter(mlp_case.hidden),
       number_parameter("readback", readback, Counter::readback)}};
}

}  // namespace gpubench
