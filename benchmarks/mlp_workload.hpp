#pragma once
// What every MLP row (CPU and GPU) builds from its sweep case: the data, the network with its
// seeded initial weights, and the row's identity.

#include <string>
#include <vector>

#include "benchmarks/sweep.hpp"
#include "harness/dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/mlp/mlp_spec.hpp"

namespace gpubench {

struct MlpWorkload {
  MlpData data;
  MlpSpec spec;
  std::vector<float> initial;  // initial_parameters(spec)
};

// Loads the case's data and builds its network for `epochs` SGD steps (validated; throws naming
// the problem).
MlpWorkload make_mlp_workload(const MlpCase& mlp_case, int epochs);

// The `hidden:H` name parameter of `hidden` layers ("hidden:HxL" for L layers of width H), also
// written as the counter `hidden` (the first layer's width).
NameParameter hidden_parameter(const std::vector<int>& hidden);

// mlp/<backend>/<variant>/data:D/batch:B/hidden:H[xL]/readback:R
RowId mlp_row_id(const char* backend, const char* variant, const MlpCase& mlp_case, int readback);

}  // namespace gpubench
