// The tiny-MLP data sets: row counts of the CSV files, the stratified 80/20 split, min-max scaling
// fitted on the training rows, the synthetic clusters, and clear errors for bad files.

#include <gtest/gtest.h>

#include <stdlib.h>  // mkdtemp, setenv, unsetenv
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

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

// The shape of the small files the malformed-CSV tests write: two features, two classes.
constexpr gpubench::CsvShape kTwoByTwo{2, 2};

std::string error_of(const std::string& path, gpubench::CsvShape shape = kTwoByTwo) {
  try {
    gpubench::load_csv_dataset(path, shape);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

template <typename Body>
std::string runtime_error_of(Body&& body) {
  try {
    body();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A folder under /tmp standing in for GPUBENCH_DATA_DIR while it lives: the project's real
// iris.csv and digits.csv, one of them with a line replaced, or a directory where a file should be.
// The variable is restored, and the folder removed, when the test ends.
class TempDataDirectory {
 public:
  TempDataDirectory() : source_(gpubench::data_directory()) {
    std::string pattern = "/tmp/gpubench_test_data_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    for (const char* name : {"iris.csv", "digits.csv"}) {
      std::ofstream(path_ + "/" + name) << read_text(source_ + "/" + name);
    }
    if (const char* old = std::getenv("GPUBENCH_DATA_DIR")) old_ = old;
    setenv("GPUBENCH_DATA_DIR", path_.c_str(), 1);
  }
  ~TempDataDirectory() {
    if (old_) {
      setenv("GPUBENCH_DATA_DIR", old_->c_str(), 1);
    } else {
      unsetenv("GPUBENCH_DATA_DIR");
    }
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDataDirectory(const TempDataDirectory&) = delete;
  TempDataDirectory& operator=(const TempDataDirectory&) = delete;
  TempDataDirectory(TempDataDirectory&&) = delete;
  TempDataDirectory& operator=(TempDataDirectory&&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

  // Rewrites `name` with line `line_number` (1-based, the header is line 1) replaced by `line`.
  void replace_line(const std::string& name, int line_number, const std::string& line) const {
    std::istringstream original(read_text(source_ + "/" + name));
    std::ostringstream edited;
    std::string current;
    for (int number = 1; std::getline(original, current); ++number) {
      edited << (number == line_number ? line : current) << "\n";
    }
    std::ofstream(file(name)) << edited.str();
  }

  // The last field of line `line_number` of the project's `name` replaced by `label`.
  void replace_label(const std::string& name, int line_number, const std::string& label) const {
    std::istringstream original(read_text(source_ + "/" + name));
    std::string current;
    for (int number = 1; number <= line_number; ++number) std::getline(original, current);
    replace_line(name, line_number, current.substr(0, current.rfind(',') + 1) + label);
  }

 private:
  std::string source_;
  std::string path_;
  std::optional<std::string> old_;
};

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
  EXPECT_NE(
      error_of(wrong_count.path()).find(":3: expected 3 fields (2 features and a label), found 2"),
      std::string::npos)
      << error_of(wrong_count.path());
  // One field too many, on the first data row: the shape, not the first line, sets the count.
  const TempCsv extra_field("1,2,0,1\n3,4,1,0\n");
  EXPECT_NE(
      error_of(extra_field.path()).find(":1: expected 3 fields (2 features and a label), found 4"),
      std::string::npos)
      << error_of(extra_field.path());

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
  EXPECT_NE(error_of(bad_label.path())
                .find(":2: label '0.5' (last column) is not an integer class index of the 2 "
                      "classes of " +
                      bad_label.path() + " (0..1)"),
            std::string::npos)
      << error_of(bad_label.path());
  const TempCsv negative_label("f1,f2,label\n1,2,0\n1,2,-1\n");
  EXPECT_NE(error_of(negative_label.path()).find(":3: label '-1' (last column) is not one of"),
            std::string::npos)
      << error_of(negative_label.path());
  // 1 + the largest label would be 3 classes; the shape says 2.
  const TempCsv label_past_classes("1,2,0\n1,2,1\n1,2,2\n");
  EXPECT_NE(error_of(label_past_classes.path())
                .find(":3: label '2' (last column) is not one of the 2 classes"),
            std::string::npos)
      << error_of(label_past_classes.path());
  // An integer written as a float is still that class.
  const TempCsv float_label("1,2,1.0\n1,2,0\n");
  EXPECT_EQ(gpubench::load_csv_dataset(float_label.path(), kTwoByTwo).labels,
            (std::vector<int>{1, 0}));

  const TempCsv header_only("f1,f2,label\n\n");
  EXPECT_NE(error_of(header_only.path()).find("has no data rows"), std::string::npos)
      << error_of(header_only.path());

  const TempCsv one_column("1\n2\n");
  EXPECT_NE(
      error_of(one_column.path()).find(":1: expected 3 fields (2 features and a label), found 1"),
      std::string::npos)
      << error_of(one_column.path());

  // Windows line endings and blank lines are fine.
  const TempCsv crlf("f1,label\r\n0.5,1\r\n\r\n1.5,0\r\n");
  const Dataset data = gpubench::load_csv_dataset(crlf.path(), {1, 2});
  EXPECT_EQ(data.rows(), 2);
  EXPECT_EQ(data.classes, 2);
  // The class count is the shape's even when the file's labels do not reach it.
  EXPECT_EQ(gpubench::load_csv_dataset(crlf.path(), {1, 5}).classes, 5);
  EXPECT_THROW(gpubench::load_csv_dataset(crlf.path(), {1, 1}), std::invalid_argument);
}

TEST(Dataset, EachNamedSetHasItsShape) {
  EXPECT_EQ(gpubench::named_dataset_shape("iris").features, 4);
  EXPECT_EQ(gpubench::named_dataset_shape("iris").classes, 3);
  EXPECT_EQ(gpubench::named_dataset_shape("digits").features, 64);
  EXPECT_EQ(gpubench::named_dataset_shape("digits").classes, 10);
  EXPECT_THROW(gpubench::named_dataset_shape("mnist"), std::invalid_argument);
}

// One stray label made a 1,000,000-class network whose benchmark row never finished: the label is
// now an error naming the file and the line, thrown where the fixtures load their data
// (load_tabular_data), so the row fails with it and the sweep goes on.
TEST(Dataset, IrisLabelOutsideItsThreeClassesIsAnErrorNamingFileAndLine) {
  const TempDataDirectory directory;
  directory.replace_label("iris.csv", 42, "999999");
  const std::string expected = directory.file("iris.csv") +
                               ":42: label '999999' (last column) is not one of the 3 classes of "
                               "iris (0..2)";
  const std::string message = runtime_error_of([] { gpubench::load_named_dataset("iris"); });
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  const std::string fixture_message =
      runtime_error_of([] { gpubench::load_tabular_data("iris", 120); });
  EXPECT_NE(fixture_message.find(expected), std::string::npos) << fixture_message;
  // The other data set in the folder still loads.
  EXPECT_EQ(gpubench::load_named_dataset("digits").rows(), 1797);
}

// Label 3 used to train a 4-class network on Iris without a word.
TEST(Dataset, IrisExtraLabelThreeIsAnErrorNotAFourthClass) {
  const TempDataDirectory directory;
  directory.replace_label("iris.csv", 151, "3");  // the last row
  const std::string message = runtime_error_of([] { gpubench::load_tabular_data("iris", 120); });
  EXPECT_NE(
      message.find(directory.file("iris.csv") +
                   ":151: label '3' (last column) is not one of the 3 classes of iris (0..2)"),
      std::string::npos)
      << message;
}

TEST(Dataset, NegativeNonIntegerAndMisshapenIrisRowsNameTheirLine) {
  const TempDataDirectory directory;
  const auto iris_error = [] {
    return runtime_error_of([] { gpubench::load_named_dataset("iris"); });
  };
  directory.replace_label("iris.csv", 7, "-1");
  EXPECT_NE(iris_error().find("iris.csv:7: label '-1' (last column) is not one of"),
            std::string::npos)
      << iris_error();
  directory.replace_label("iris.csv", 8, "1.5");
  EXPECT_NE(iris_error().find("iris.csv:8: label '1.5' (last column) is not an integer class "
                              "index of the 3 classes of iris (0..2)"),
            std::string::npos)
      << iris_error();
  directory.replace_line("iris.csv", 9, "5.0,3.4,1.5,0.2,0.1,0");
  EXPECT_NE(iris_error().find("iris.csv:9: expected 5 fields (4 features and a label), found 6"),
            std::string::npos)
      << iris_error();
  // Digits' labels are 0..9: 10 is one too many.
  directory.replace_label("digits.csv", 2, "10");
  const std::string digits_error = runtime_error_of([] { gpubench::load_named_dataset("digits"); });
  EXPECT_NE(digits_error.find("digits.csv:2: label '10' (last column) is not one of the 10 "
                              "classes of digits (0..9)"),
            std::string::npos)
      << digits_error;
}

TEST(Dataset, DirectoryOrDeviceWhereADataFileShouldBeIsNamedAsSuch) {
  const TempDataDirectory directory;
  std::filesystem::remove(directory.file("iris.csv"));
  std::filesystem::create_directory(directory.file("iris.csv"));
  const std::string message = runtime_error_of([] { gpubench::load_tabular_data("iris", 120); });
  EXPECT_NE(
      message.find("data file '" + directory.file("iris.csv") + "' is a directory, not a file"),
      std::string::npos)
      << message;
  // A character device opens and reads as empty: it was "has no data rows".
  EXPECT_NE(error_of("/dev/null")
                .find("data file '/dev/null' is a character device, not a "
                      "regular file"),
            std::string::npos)
      << error_of("/dev/null");
  // A symbolic link to a regular file is that file.
  const std::string link = directory.file("digits_link.csv");
  std::filesystem::create_symlink(directory.file("digits.csv"), link);
  EXPECT_EQ(gpubench::load_csv_dataset(link, gpubench::named_dataset_shape("digits")).rows(), 1797);
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
