#include "harness/dataset.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <utility>

#include "harness/data_file.hpp"
#include "kernels/common/seeded_random.hpp"

#ifndef GPUBENCH_DATA_DIR
#define GPUBENCH_DATA_DIR "data"
#endif

namespace gpubench {

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(
        line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (std::string& field : fields) {
    const auto first = field.find_first_not_of(" \t");
    const auto last = field.find_last_not_of(" \t");
    field = first == std::string::npos ? "" : field.substr(first, last - first + 1);
  }
  return fields;
}

bool parse_number(const std::string& text, double* value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(*value);
}

// Fisher-Yates with the suite's deterministic generator.
void shuffle(std::vector<int>* values, SeededRandom* random) {
  for (std::size_t i = values->size(); i > 1; --i) {
    std::swap((*values)[i - 1], (*values)[random->below(i)]);
  }
}

Dataset select_rows(const Dataset& data, const std::vector<int>& rows, const std::string& suffix) {
  Dataset subset;
  subset.name = data.name + suffix;
  subset.features = data.features;
  subset.classes = data.classes;
  subset.inputs.reserve(rows.size() * static_cast<std::size_t>(data.features));
  for (int row : rows) {
    subset.inputs.insert(subset.inputs.end(), data.row(row), data.row(row) + data.features);
    subset.labels.push_back(data.labels[row]);
  }
  return subset;
}

}  // namespace

std::string data_directory() {
  const char* environment = std::getenv("GPUBENCH_DATA_DIR");
  if (environment != nullptr && environment[0] != '\0') return environment;
  return GPUBENCH_DATA_DIR;
}

CsvShape named_dataset_shape(const std::string& name) {
  if (name == "iris") return {4, 3};
  if (name == "digits") return {64, 10};
  throw std::invalid_argument("unknown data set '" + name + "' (known: iris, digits)");
}

Dataset load_csv_dataset(const std::string& path, const CsvShape& shape, const std::string& name) {
  if (shape.features < 1 || shape.classes < 2) {
    throw std::invalid_argument("a CSV data set needs at least 1 feature and 2 classes, not " +
                                std::to_string(shape.features) + " and " +
                                std::to_string(shape.classes));
  }
  require_regular_file(path, "data file");
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error("cannot open data file '" + path + "': " + std::strerror(errno) +
                             " (set GPUBENCH_DATA_DIR to the folder holding iris.csv and "
                             "digits.csv)");
  }
  Dataset data;
  data.name = name.empty() ? path : name;
  data.features = shape.features;
  data.classes = shape.classes;
  const auto columns = static_cast<std::size_t>(shape.features) + 1;
  const std::string classes_text = "the " + std::to_string(shape.classes) + " classes of " +
                                   data.name + " (0.." + std::to_string(shape.classes - 1) + ")";
  std::string line;
  int line_number = 0;
  bool first_content_line = true;
  std::vector<double> values;
  while (std::getline(file, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::vector<std::string> fields = split_fields(line);
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    // Every line, the header too: a file with another column count is another data set.
    if (fields.size() != columns) {
      throw std::runtime_error(where + "expected " + std::to_string(columns) + " fields (" +
                               std::to_string(shape.features) + " features and a label), found " +
                               std::to_string(fields.size()));
    }
    values.resize(fields.size());
    bool any_number = false;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      any_number = parse_number(fields[i], &values[i]) || any_number;
    }
    if (first_content_line) {
      first_content_line = false;
      // A header has no numeric field; a first row with some numbers is data (and a bad field in
      // it is reported below instead of the row being dropped as a header).
      if (!any_number) continue;
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
      double ignored = 0;
      if (!parse_number(fields[i], &ignored)) {
        throw std::runtime_error(where + "field " + std::to_string(i + 1) + " '" + fields[i] +
                                 "' is not a finite number");
      }
    }
    const double label = values.back();
    const auto label_error = [&](const char* problem) {
      std::string message = where + "label '" + fields.back() + "' (last column) " + problem;
      message += classes_text;
      return std::runtime_error(message);
    };
    if (label != std::floor(label)) throw label_error("is not an integer class index of ");
    if (label < 0 || label >= shape.classes) throw label_error("is not one of ");
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      data.inputs.push_back(static_cast<float>(values[i]));
    }
    data.labels.push_back(static_cast<int>(label));
  }
  // getline stops at a read error as at the end: without this a failing disk is a short file.
  if (file.bad()) throw std::runtime_error("read error in data file '" + path + "'");
  if (data.labels.empty()) throw std::runtime_error("data file '" + path + "' has no data rows");
  return data;
}

Dataset load_named_dataset(const std::string& name) {
  const CsvShape shape = named_dataset_shape(name);  // throws for an unknown name
  return load_csv_dataset(data_directory() + "/" + name + ".csv", shape, name);
}

DatasetSplit stratified_split(const Dataset& data, double test_fraction, std::uint64_t seed) {
  if (!(test_fraction >= 0.0 && test_fraction < 1.0)) {
    throw std::invalid_argument("test fraction must be in [0, 1)");
  }
  SeededRandom random(seed);
  std::vector<std::vector<int>> by_class(static_cast<std::size_t>(data.classes));
  for (int row = 0; row < data.rows(); ++row) by_class[data.labels[row]].push_back(row);
  std::vector<int> train_rows;
  std::vector<int> test_rows;
  for (std::vector<int>& rows : by_class) {
    shuffle(&rows, &random);
    const auto test_count =
        static_cast<std::size_t>(std::lround(test_fraction * static_cast<double>(rows.size())));
    test_rows.insert(test_rows.end(), rows.begin(), rows.begin() + test_count);
    train_rows.insert(train_rows.end(), rows.begin() + test_count, rows.end());
  }
  shuffle(&train_rows, &random);
  shuffle(&test_rows, &random);
  return {select_rows(data, train_rows, "/train"), select_rows(data, test_rows, "/test")};
}

void min_max_scale(DatasetSplit* split) {
  const int features = split->train.features;
  for (int feature = 0; feature < features; ++feature) {
    float low = std::numeric_limits<float>::max();
    float high = std::numeric_limits<float>::lowest();
    for (int row = 0; row < split->train.rows(); ++row) {
      low = std::min(low, split->train.row(row)[feature]);
      high = std::max(high, split->train.row(row)[feature]);
    }
    const float range = high - low;
    for (Dataset* set : {&split->train, &split->test}) {
      for (int row = 0; row < set->rows(); ++row) {
        float& value = set->inputs[static_cast<std::size_t>(row) * features + feature];
        value = range > 0 ? (value - low) / range : 0.0F;
      }
    }
  }
}

DatasetSplit load_split_dataset(const std::string& name) {
  DatasetSplit split = stratified_split(load_named_dataset(name), 0.2, kSplitSeed);
  min_max_scale(&split);
  return split;
}

Dataset make_gaussian_clusters(int rows, int features, int classes, std::uint64_t seed) {
  if (rows < 1 || features < 1 || classes < 2) {
    throw std::invalid_argument(
        "synthetic data needs rows >= 1, features >= 1 and classes >= 2 "
        "(got " +
        std::to_string(rows) + ", " + std::to_string(features) + ", " + std::to_string(classes) +
        ")");
  }
  SeededRandom random(seed);
  std::vector<float> centres(static_cast<std::size_t>(classes) * features);
  for (float& value : centres) value = static_cast<float>(random.uniform(-1.0, 1.0));
  Dataset data;
  data.name = "synthetic";
  data.features = features;
  data.classes = classes;
  data.inputs.resize(static_cast<std::size_t>(rows) * features);
  data.labels.resize(static_cast<std::size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    const int label = row % classes;
    data.labels[row] = label;
    const float* centre = centres.data() + static_cast<std::size_t>(label) * features;
    float* sample = data.inputs.data() + static_cast<std::size_t>(row) * features;
    for (int feature = 0; feature < features; ++feature) {
      sample[feature] = centre[feature] + 0.5F * static_cast<float>(random.normal());
    }
  }
  return data;
}

TabularData load_tabular_data(const std::string& name, int batch) {
  if (batch < 1) throw std::invalid_argument("batch must be >= 1, got " + std::to_string(batch));
  TabularData data;
  if (name == "synthetic") {
    data.batch =
        make_gaussian_clusters(batch, kSyntheticFeatures, kSyntheticClasses, kSyntheticSeed);
    data.test.name = "synthetic/test";
    data.test.features = kSyntheticFeatures;
    data.test.classes = kSyntheticClasses;
    return data;
  }
  DatasetSplit split = load_split_dataset(name);  // throws for an unknown name
  if (batch > split.train.rows()) {
    throw std::invalid_argument("batch " + std::to_string(batch) + " is larger than the " +
                                std::to_string(split.train.rows()) + " training rows of " + name);
  }
  data.batch = std::move(split.train);
  data.batch.inputs.resize(static_cast<std::size_t>(batch) * data.batch.features);
  data.batch.labels.resize(static_cast<std::size_t>(batch));
  data.test = std::move(split.test);
  return data;
}

}  // namespace gpubench
