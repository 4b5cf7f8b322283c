// The CNN image data: CIFAR-10 binary records decoded into NCHW floats in [0, 1] (on small files
// the tests write themselves), clear errors for bad files, and the synthetic set's determinism and
// learnability.

#include <gtest/gtest.h>

#include <stdlib.h>    // mkdtemp, setenv, unsetenv
#include <sys/stat.h>  // mkdir
#include <unistd.h>    // rmdir
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/image_dataset.hpp"

namespace {

using gpubench::ImageSet;

constexpr int kPlane = 32 * 32;
constexpr int kImageFloats = 3 * kPlane;

// A fresh folder under /tmp, removed with the files written into it when the test ends.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = "/tmp/gpubench_test_image_dataset_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempFolder() {
    for (const std::string& file : files_) std::remove(file.c_str());
    rmdir(path_.c_str());
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  TempFolder(TempFolder&&) = delete;
  TempFolder& operator=(TempFolder&&) = delete;

  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    files_.push_back(file);
    return file;
  }
  // A folder named `name` inside this one (removed like a file: std::remove removes an empty one).
  std::string make_folder(const std::string& name) {
    std::string folder = path_ + "/" + name;
    if (mkdir(folder.c_str(), 0700) != 0) throw std::runtime_error("mkdir failed");
    files_.push_back(folder);
    return folder;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Sets an environment variable for the scope of a test and restores what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ScopedEnvironment(ScopedEnvironment&&) = delete;
  ScopedEnvironment& operator=(ScopedEnvironment&&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The pixel byte a test record holds at channel c, row y, column x: every (c, y, x) of a record
// distinct in its low bits, and records distinct through `record`, so a swapped plane, row or
// column, or an off-by-one record, reads a different value.
unsigned char pixel_byte(int record, int c, int y, int x) {
  return static_cast<unsigned char>((record * 71 + c * 85 + y * 7 + x * 3) % 256);
}

std::vector<unsigned char> records(const std::vector<int>& labels, int first_record = 0) {
  std::vector<unsigned char> bytes;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(static_cast<unsigned char>(labels[r]));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          bytes.push_back(pixel_byte(first_record + static_cast<int>(r), c, y, x));
        }
      }
    }
  }
  return bytes;
}

std::string runtime_error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "no error";
}

std::string invalid_argument_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "no error";
}

void expect_record(const ImageSet& set, int row, int record, int label) {
  EXPECT_EQ(set.labels[row], label) << "row " << row;
  const float* image = set.image(row);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        // Exactly ToTensor()'s float quotient, not merely close to it.
        ASSERT_EQ(image[c * kPlane + y * 32 + x],
                  static_cast<float>(pixel_byte(record, c, y, x)) / 255.0F)
            << "row " << row << " channel " << c << " y " << y << " x " << x;
      }
    }
  }
}

TEST(ImageDataset, DecodesLabelsAndChannelMajorPlanesScaledToUnitRange) {
  TempFolder folder;
  const std::string path = folder.write("data_batch_1.bin", records({3, 9, 0}));
  const ImageSet set = gpubench::read_cifar10_file(path);
  ASSERT_EQ(set.rows, 3);
  ASSERT_EQ(set.pixels.size(), 3U * kImageFloats);
  for (int row = 0; row < 3; ++row) expect_record(set, row, row, std::array<int, 3>{3, 9, 0}[row]);
  // The extremes of the scale: byte 0 -> 0 and byte 255 -> 1.
  std::vector<unsigned char> extremes = records({1});
  extremes[1] = 0;
  extremes[2] = 255;
  const ImageSet scaled = gpubench::read_cifar10_file(folder.write("extremes.bin", extremes));
  EXPECT_EQ(scaled.pixels[0], 0.0F);
  EXPECT_EQ(scaled.pixels[1], 1.0F);

  const ImageSet first_two = gpubench::read_cifar10_file(path, 2);
  ASSERT_EQ(first_two.rows, 2);
  EXPECT_EQ(first_two.labels, (std::vector<int>{3, 9}));
  EXPECT_EQ(first_two.pixels.size(), 2U * kImageFloats);
}

TEST(ImageDataset, WrongSizeMissingFileAndBadLabelAreClearErrors) {
  TempFolder folder;
  std::vector<unsigned char> bytes = records({1, 2});
  bytes.resize(bytes.size() + 5);
  const std::string odd = folder.write("odd.bin", bytes);
  const std::string size_error = runtime_error_of([&] { gpubench::read_cifar10_file(odd); });
  EXPECT_NE(size_error.find(odd), std::string::npos) << size_error;
  EXPECT_NE(size_error.find("is 6151 bytes, expected a positive multiple of 3073"),
            std::string::npos)
      << size_error;
  const std::string empty = folder.write("empty.bin", {});
  EXPECT_NE(runtime_error_of([&] { gpubench::read_cifar10_file(empty); }).find("is 0 bytes"),
            std::string::npos);

  const std::string missing = folder.path() + "/data_batch_9.bin";
  const std::string missing_error = runtime_error_of([&] { gpubench::read_cifar10_file(missing); });
  EXPECT_NE(missing_error.find("cannot open CIFAR-10 file '" + missing + "'"), std::string::npos)
      << missing_error;
  EXPECT_NE(missing_error.find("GPUBENCH_CIFAR10_DIR"), std::string::npos) << missing_error;

  const std::string bad_label = folder.write("bad_label.bin", records({9, 0, 10}));
  const std::string label_error = runtime_error_of([&] { gpubench::read_cifar10_file(bad_label); });
  EXPECT_NE(label_error.find(bad_label + "': record 2 (byte offset 6146) has label 10, above 9"),
            std::string::npos)
      << label_error;
  // Records beyond max_rows are not read, so their labels do not matter.
  EXPECT_EQ(gpubench::read_cifar10_file(bad_label, 2).rows, 2);
}

TEST(ImageDataset, Cifar10FolderFromTheEnvironment) {
  TempFolder folder;
  folder.write("data_batch_1.bin", records({1, 2, 3}));
  folder.write("data_batch_2.bin", records({4, 5}, 3));
  folder.write("test_batch.bin", records({6, 7}, 10));
  {
    const ScopedEnvironment environment("GPUBENCH_CIFAR10_DIR", folder.path());
    ASSERT_EQ(gpubench::cifar10_directory(), folder.path());
    // Four rows: all of data_batch_1, then the first record of data_batch_2.
    const gpubench::ImageData data = gpubench::load_image_data("cifar10", 4);
    EXPECT_EQ(data.name, "cifar10");
    ASSERT_EQ(data.train.rows, 4);
    for (int row = 0; row < 4; ++row) expect_record(data.train, row, row, row + 1);
    ASSERT_EQ(data.test.rows, 2);
    expect_record(data.test, 1, 11, 7);
    // data_batch_3.bin is missing: asking for more rows than the two files hold names it.
    EXPECT_NE(
        runtime_error_of([] { gpubench::load_image_data("cifar10", 6); }).find("data_batch_3.bin"),
        std::string::npos);
  }
  {
    const ScopedEnvironment environment("GPUBENCH_CIFAR10_DIR", std::nullopt);
    EXPECT_EQ(gpubench::cifar10_directory(), std::nullopt);
    EXPECT_NE(runtime_error_of([] {
                gpubench::load_image_data("cifar10", 4);
              }).find("GPUBENCH_CIFAR10_DIR is not set"),
              std::string::npos);
  }
  {
    const ScopedEnvironment environment("GPUBENCH_CIFAR10_DIR", std::string());
    EXPECT_EQ(gpubench::cifar10_directory(), std::nullopt);
  }
  EXPECT_NE(invalid_argument_of([] {
              gpubench::load_image_data("imagenet", 4);
            }).find("unknown image data set 'imagenet'"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([] {
              gpubench::load_image_data("synthetic", 0);
            }).find("train_rows >= 1, got 0"),
            std::string::npos);
}

// A folder where a CIFAR-10 file should be opened as a stream and was reported as
// "9223372036854775807 bytes" (its seekg(end)); it is named as a folder, through load_image_data,
// which the CNN fixtures call, so the row fails with it and the sweep goes on.
TEST(ImageDataset, DirectoryAsCifar10FileIsNamedAsSuch) {
  TempFolder folder;
  const std::string batch_folder = folder.make_folder("data_batch_1.bin");
  folder.write("test_batch.bin", records({6, 7}));
  const ScopedEnvironment environment("GPUBENCH_CIFAR10_DIR", folder.path());
  const std::string message = runtime_error_of([] { gpubench::load_image_data("cifar10", 2); });
  EXPECT_NE(message.find("CIFAR-10 file '" + batch_folder + "' is a directory, not a file"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("9223372036854775807"), std::string::npos) << message;
  EXPECT_NE(message.find("GPUBENCH_CIFAR10_DIR must name the folder"), std::string::npos)
      << message;
  // A character device was "0 bytes".
  const std::string device_message =
      runtime_error_of([] { gpubench::read_cifar10_file("/dev/zero"); });
  EXPECT_NE(device_message.find("CIFAR-10 file '/dev/zero' is a character device, not a regular "
                                "file"),
            std::string::npos)
      << device_message;
}

TEST(ImageDataset, SyntheticSetIsDeterministicInRangeAndBalanced) {
  const ImageSet first = gpubench::make_synthetic_images(300, 5);
  const ImageSet again = gpubench::make_synthetic_images(300, 5);
  EXPECT_EQ(first.pixels, again.pixels);
  EXPECT_EQ(first.labels, again.labels);
  // A prefix of a larger set with the same seed, and something else with another seed.
  const ImageSet prefix = gpubench::make_synthetic_images(7, 5);
  EXPECT_EQ(prefix.labels, std::vector<int>(first.labels.begin(), first.labels.begin() + 7));
  EXPECT_EQ(prefix.pixels,
            std::vector<float>(first.pixels.begin(),
                               first.pixels.begin() + std::ptrdiff_t{7} * kImageFloats));
  EXPECT_NE(gpubench::make_synthetic_images(300, 6).pixels, first.pixels);

  std::array<int, 10> counts{};
  for (int label : first.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LE(label, 9);
    ++counts[label];
  }
  for (int count : counts) EXPECT_GT(count, 10);  // 30 expected per class
  double sum = 0;
  double sum_of_squares = 0;
  for (float value : first.pixels) {
    ASSERT_GE(value, 0.0F);
    ASSERT_LE(value, 1.0F);
    sum += value;
    sum_of_squares += static_cast<double>(value) * value;
  }
  const double mean = sum / static_cast<double>(first.pixels.size());
  const double spread =
      std::sqrt(sum_of_squares / static_cast<double>(first.pixels.size()) - mean * mean);
  EXPECT_GT(mean, 0.3);
  EXPECT_LT(mean, 0.7);
  EXPECT_GT(spread, 0.1);  // not flat

  const gpubench::ImageData data = gpubench::load_image_data("synthetic", 64);
  EXPECT_EQ(data.name, "synthetic");
  EXPECT_EQ(data.train.rows, 64);
  EXPECT_EQ(data.test.rows, gpubench::kSyntheticImageTestRows);
  EXPECT_NE(data.test.pixels, std::vector<float>(data.test.pixels.size(), 0.0F));
}

// Nearest class mean, fitted on one draw and scored on another: far above the 10% of chance,
// which pure noise, or labels unrelated to the pixels, would give.
TEST(ImageDataset, SyntheticSetIsLearnable) {
  const ImageSet train = gpubench::make_synthetic_images(2000, gpubench::kSyntheticImageTrainSeed);
  const ImageSet test = gpubench::make_synthetic_images(500, gpubench::kSyntheticImageTestSeed);
  std::vector<double> means(std::size_t{10} * kImageFloats, 0.0);
  std::array<int, 10> counts{};
  for (int row = 0; row < train.rows; ++row) {
    const int label = train.labels[row];
    ++counts[label];
    for (int i = 0; i < kImageFloats; ++i) means[label * kImageFloats + i] += train.image(row)[i];
  }
  for (int label = 0; label < 10; ++label) {
    for (int i = 0; i < kImageFloats; ++i) means[label * kImageFloats + i] /= counts[label];
  }
  int correct = 0;
  for (int row = 0; row < test.rows; ++row) {
    int best = -1;
    double best_distance = 0;
    for (int label = 0; label < 10; ++label) {
      double distance = 0;
      for (int i = 0; i < kImageFloats; ++i) {
        const double difference = test.image(row)[i] - means[label * kImageFloats + i];
        distance += difference * difference;
      }
      if (best < 0 || distance < best_distance) {
        best = label;
        best_distance = distance;
      }
    }
    if (best == test.labels[row]) ++correct;
  }
  const double accuracy = static_cast<double>(correct) / test.rows;
  EXPECT_GT(accuracy, 0.3) << "nearest-class-mean accuracy " << accuracy;
  // And not trivial either: colour alone should not give it away completely.
  EXPECT_LT(accuracy, 0.95) << "nearest-class-mean accuracy " << accuracy;
  std::printf("nearest-class-mean test accuracy: %.3f\n", accuracy);
}

}  // namespace
