#pragma once
// Tabular data sets (rows of features and a class label) for the training workloads: the Iris and
// digits CSV files, the fixed-seed stratified 80/20 split with min-max scaling fitted on the
// training rows, and seeded synthetic Gaussian clusters of any size. Everything here is
// deterministic: the same seed gives the same rows, in the same order, on every machine, so every
// path trains on identical data.

#include <cstdint>
#include <string>
#include <vector>

namespace gpubench {

struct Dataset {
  std::string name;
  int features = 0;
  int classes = 0;            // the data set's, every label is below it
  std::vector<float> inputs;  // rows x features, row-major
  std::vector<int> labels;    // one class index per row

  int rows() const { return static_cast<int>(labels.size()); }
  const float* row(int index) const {
    return inputs.data() + static_cast<std::size_t>(index) * static_cast<std::size_t>(features);
  }
};

struct DatasetSplit {
  Dataset train;
  Dataset test;
};

// The seed of the split every benchmark and test uses.
inline constexpr std::uint64_t kSplitSeed = 2024;

// Folder holding iris.csv and digits.csv: $GPUBENCH_DATA_DIR if set and non-empty, else the
// project's data/ folder compiled in.
std::string data_directory();

// What a data set's CSV file holds: `features` numbers and a class label per row. The class count
// is the data set's, not the file's: a label outside 0..classes-1 is an error in the file, never a
// larger network (one stray label 999999 would make a 1,000,000-class output layer).
struct CsvShape {
  int features = 0;
  int classes = 0;
};

// iris: 4 features, 3 classes; digits: 64 features, 10 classes. Throws std::invalid_argument for
// another name.
CsvShape named_dataset_shape(const std::string& name);

// Reads a CSV file of `shape.features` numbers and a class label per line (the last column, an
// integer 0..shape.classes-1). A first line that is not all numbers is a header and skipped; blank
// lines are skipped. The Dataset's classes is shape.classes. Throws std::runtime_error naming the
// file (and line and field) for a missing file, a path that is a directory or another non-regular
// file, a line whose field count is not features + 1, a field that is not a finite number, a label
// that is not an integer or not one of the classes, or no rows at all; std::invalid_argument for a
// shape with fewer than 1 feature or 2 classes. `name` names the data set in the errors (the path
// when empty).
Dataset load_csv_dataset(const std::string& path, const CsvShape& shape,
                         const std::string& name = "");

// "iris" or "digits" from data_directory(), checked against named_dataset_shape(name); throws
// std::invalid_argument for another name.
Dataset load_named_dataset(const std::string& name);

// Per class, a seeded shuffle puts round(test_fraction x class rows) rows in the test set and the
// rest in the training set; each set is then shuffled (seeded) so classes are interleaved and any
// prefix of the training rows is a mixed batch.
DatasetSplit stratified_split(const Dataset& data, double test_fraction, std::uint64_t seed);

// Scales every feature to [0, 1] with the minimum and maximum of the training rows, applied to both
// sets (test values may fall outside [0, 1]). A feature constant on the training rows becomes 0.
void min_max_scale(DatasetSplit* split);

// load_named_dataset + stratified_split(0.2, kSplitSeed) + min_max_scale: Iris gives 120 training
// and 30 test rows, digits 1437 and 360.
DatasetSplit load_split_dataset(const std::string& name);

// `rows` samples of `features` values in `classes` Gaussian clusters: class centres uniform in
// [-1, 1]^features, samples centre + N(0, 0.5^2) per feature, labels row % classes (balanced).
// Throws std::invalid_argument for a non-positive size or fewer than two classes.
Dataset make_gaussian_clusters(int rows, int features, int classes, std::uint64_t seed);

// What one benchmark trains on from a tabular data set: `batch` rows, and the held-out rows where
// the data set has them. iris and digits: the first `batch` rows of the (shuffled, scaled) training
// split, and the whole test split; synthetic: `batch` generated rows (kSyntheticFeatures features,
// kSyntheticClasses classes, seed kSyntheticSeed) and no test rows. Every step trains on the same
// batch, so a step costs the same on every path and the GPU variants can capture it once.
struct TabularData {
  Dataset batch;
  Dataset test;  // empty for synthetic data
};

inline constexpr int kSyntheticFeatures = 64;  // like digits: the synthetic sweep extends it
inline constexpr int kSyntheticClasses = 10;
inline constexpr std::uint64_t kSyntheticSeed = 7;

// Throws std::invalid_argument for an unknown name, a batch < 1, or a batch larger than the
// training rows ("batch 200 is larger than the 120 training rows of iris").
TabularData load_tabular_data(const std::string& name, int batch);

}  // namespace gpubench
