#pragma once
// What every CNN row (CPU and GPU) builds from its sweep case: the images, the network with its
// seeded initial weights, the row's identity, and the per-operation profile's length.

#include <vector>

#include "benchmarks/sweep.hpp"
#include "harness/image_dataset.hpp"
#include "harness/result_row.hpp"
#include "kernels/cnn/cnn_spec.hpp"

namespace gpubench {

// Steps the per-operation profile averages over (after the timed loop, outside it).
inline constexpr int kCnnProfileSteps = 3;

struct CnnWorkload {
  CnnData data;  // train: `batch` images, every step trains on them; test: held out
  CnnSpec spec;
  std::vector<float> initial;  // initial_cnn_parameters(spec)
};

// Loads the case's images and builds the network (validated; throws naming the problem).
CnnWorkload make_cnn_workload(const CnnCase& cnn_case);

// cnn/<backend>/<variant>/data:D/batch:B/readback:R
RowId cnn_row_id(const char* backend, const char* variant, const CnnCase& cnn_case, int readback);

}  // namespace gpubench
