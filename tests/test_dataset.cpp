// The tiny-MLP data sets: row counts of the CSV files, the stratified 80/20 split, min-max scaling
// fitted on the training rows, the synthetic clusters, and clear errors for bad files.

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/dataset.hpp"

namespace {

using gpubench::Dataset;
using gpubench::DatasetSplit;

std::map<int, int> class_counts(const Dataset& data) {
  std::map<int, int> counts;
  for (int label : data.labels) ++counts[label];
  return counts;
}

// A CSV file under /tmp, removed when the test ends.
class TempCsv {
 public:
  explicit TempCsv(const std::string& text)
      : path_("/tmp/gpubench_test_dataset_" + std::to_string(getpid()) + "_" +
              std::to_string(counter_++) + ".csv") {
    std::ofstream(path_) << text;
  }
  ~TempCsv() { std::remove(path_.c_str()); }
  TempCsv(const TempCsv&) = delete;
  TempCsv& operator=(const TempCsv&) = delete;
  TempCsv(TempCsv&&) = delete;
  TempCsv& operator=(TempCsv&&) = delete;
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

std::string error_of(const std::string& path) {
  try {
    gpubench::load_csv_dataset(path);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

TEST(Dataset, IrisAndDigitsHaveTheirRowsFeaturesAndClasses) {
  const Dataset iris = gpubench::load_named_dataset("iris");
  EXPECT_EQ(iris.rows(), 150);
  EXPECT_EQ(iris.features, 4);
  EXPECT_EQ(iris.classes, 3);
  EXPECT_EQ(iris.inputs.size(), 150U * 4U);
  EXPECT_FLOAT_EQ(iris.row(0)[0], 5.1F);  // first data row, after the header
  for (const auto& [label, count] : class_counts(iris)) EXPECT_EQ(count, 50) << label;

  const Dataset digits = gpubench::load_named_dataset("digits");
  EXPECT_EQ(digits.rows(), 1797);
  EXPECT_EQ(digits.features, 64);
  EXPECT_EQ(digits.classes, 10);
}

TEST(Dataset, IrisSplitIs120By30AndStratified) {
  const DatasetSplit split = gpubench::load_split_dataset("iris");
  EXPECT_EQ(split.train.rows(), 120);
  EXPECT_EQ(split.test.rows(), 30);
  for (const auto& [label, count] : class_counts(split.test)) EXPECT_EQ(count, 10) << label;
  for (const auto& [label, count] : class_counts(split.train)) EXPECT_EQ(count, 40) << label;
  // Shuffled after the split: the first rows of the training set are not all one class.
  int classes_in_prefix[3] = {};
  for (int row = 0; row < 12; ++row) classes_in_prefix[split.train.labels[row]] = 1;
  EXPECT_EQ(classes_in_prefix[0] + classes_in_prefix[1] + classes_in_prefix[2], 3);
}

TEST(Dataset, DigitsSplitKeepsEveryRowAndEachClassProportion) {
  const Dataset digits = gpubench::load_named_dataset("digits");
  const DatasetSplit split = gpubench::load_split_dataset("digits");
  EXPECT_EQ(split.train.rows() + split.test.rows(), 1797);
  EXPECT_NEAR(split.test.rows(), 360, 3);
  const auto all = class_counts(digits);
  const auto test = class_counts(split.test);
  for (const auto& [label, count] : all) {
    EXPECT_LE(std::abs(test.at(label) - 0.2 * count), 0.5 + 1e-9) << "class " << label;
  }
}

TEST(Dataset, SplitIsDeterministicForASeed) {
  const Dataset iris = gpubench::load_named_dataset("iris");
  const DatasetSplit first = gpubench::stratified_split(iris, 0.2, 7);
  const DatasetSplit second = gpubench::stratified_split(iris, 0.2, 7);
  const DatasetSplit other = gpubench::stratified_split(iris, 0.2, 8);
  EXPECT_EQ(first.train.inputs, second.train.inputs);
  EXPECT_EQ(first.test.labels, second.test.labels);
  EXPECT_NE(first.train.inputs, other.train.inputs);
}

TEST(Dataset, MinMaxScalingFitsTrainingRowsToUnitInterval) {
  for (const char* name : {"iris", "digits"}) {
    const DatasetSplit split = gpubench::load_split_dataset(name);
    const Dataset& train = split.train;
    for (int feature = 0; feature < train.features; ++feature) {
      float low = 1e30F;
      float high = -1e30F;
      for (int row = 0; row < train.rows(); ++row) {
        const float value = train.row(row)[feature];
        ASSERT_GE(value, 0.0F) << name << " feature " << feature;
        ASSERT_LE(value, 1.0F) << name << " feature " << feature;
        low = std::min(low, value);
        high = std::max(high, value);
      }
      EXPECT_EQ(low, 0.0F) << name << " feature " << feature;
      // digits has pixels that are 0 on every training image: scaled to a constant 0.
      if (high != 0.0F) {
        EXPECT_EQ(high, 1.0F) << name << " feature " << feature;
      }
    }
  }
}

TEST(Dataset, GaussianClustersAreDeterministicAndBalanced) {
  const Dataset first = gpubench::make_gaussian_clusters(1000, 16, 10, 5);
  const Dataset second = gpubench::make_gaussian_clusters(1000, 16, 10, 5);
  EXPECT_EQ(first.rows(), 1000);
  EXPECT_EQ(first.features, 16);
  EXPECT_EQ(first.classes, 10);
  EXPECT_EQ(first.inputs, second.inputs);
  for (const auto& [label, count] : class_counts(first)) EXPECT_EQ(count, 100) << label;
  EXPECT_NE(first.inputs, gpubench::make_gaussian_clusters(1000, 16, 10, 6).inputs);
  EXPECT_EQ(gpubench::make_gaussian_clusters(1, 1, 2, 1).rows(), 1);
  EXPECT_THROW(gpubench::make_gaussian_clusters(0, 4, 3, 1), std::invalid_argument);
  EXPECT_THROW(gpubench::make_gaussian_clusters(10, 4, 1, 1), std::invalid_argument);
}

TEST(Dataset, MissingFileIsAClearError) {
  const std::string message = error_of("/nonexistent/folder/iris.csv");
  EXPECT_NE(message.find("cannot open data file '/nonexistent/folder/iris.csv'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("GPUBENCH_DATA_DIR"), std::string::npos) << message;
}

TEST(Dataset, MalformedCsvIsAClearErrorWithLineAndField) {
  const TempCsv wrong_count("a,b,label\n1,2,0\n3,4\n");
  EXPECT_NE(error_of(wrong_count.path()).find(":3: expected 3 fields, found 2"), std::string::npos)
      << error_of(wrong_count.path());

  const TempCsv not_a_number("1,2,0\n1,x2,1\n");
  EXPECT_NE(error_of(not_a_number.path()).find(":2: field 2 'x2' is not a finite number"),
            std::string::npos)
      << error_of(not_a_number.path());

  // Without a header, a bad field in the first row is reported, not mistaken for a header.
  const TempCsv bad_first_row("5.1,abc,0\n4.9,3.0,1\n");
  EXPECT_NE(error_of(bad_first_row.path()).find(":1: field 2 'abc' is not a finite number"),
            std::string::npos)
      << error_of(bad_first_row.path());

  const TempCsv bad_label("f1,f2,label\n1,2,0.5\n");
  EXPECT_NE(error_of(bad_label.path()).find("is not a non-negative integer"), std::string::npos)
      << error_of(bad_label.path());

  const TempCsv header_only("f1,f2,label\n\n");
  EXPECT_NE(error_of(header_only.path()).find("has no data rows"), std::string::npos)
      << error_of(header_only.path());

  const TempCsv one_column("1\n2\n");
  EXPECT_NE(error_of(one_column.path()).find("at least 2"), std::string::npos)
      << error_of(one_column.path());

  // Windows line endings and blank lines are fine.
  const TempCsv crlf("f1,label\r\n0.5,1\r\n\r\n1.5,0\r\n");
  const Dataset data = gpubench::load_csv_dataset(crlf.path());
  EXPECT_EQ(data.rows(), 2);
  EXPECT_EQ(data.classes, 2);
}

TEST(Dataset, EnvironmentVariableOverridesDataDirectory) {
  EXPECT_FALSE(gpubench::data_directory().empty());
  ASSERT_EQ(setenv("GPUBENCH_DATA_DIR", "/nonexistent/gpubench_data", 1), 0);
  EXPECT_EQ(gpubench::data_directory(), "/nonexistent/gpubench_data");
  try {
    gpubench::load_named_dataset("iris");
    ADD_FAILURE() << "expected an error for a missing data folder";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/gpubench_data/iris.csv"),
              std::string::npos)
        << error.what();
  }
  ASSERT_EQ(unsetenv("GPUBENCH_DATA_DIR"), 0);
  EXPECT_THROW(gpubench::load_named_dataset("mnist"), std::invalid_argument);
}

}  // namespace
