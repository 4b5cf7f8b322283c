#include "harness/image_dataset.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "harness/data_file.hpp"
#include "kernels/common/seeded_random.hpp"

namespace gpubench {

namespace {

constexpr int kImageSize = kCifar10ImageSize;
constexpr int kPlanePixels = kImageSize * kImageSize;
constexpr int kImageFloats = kCifar10ImageFloats;
constexpr int kClasses = kCifar10Classes;
constexpr int kChannels = kCifar10Channels;

std::string cifar10_help() {
  return " (GPUBENCH_CIFAR10_DIR must name the folder holding CIFAR-10's binary version: "
         "data_batch_1.bin .. data_batch_5.bin and test_batch.bin, 10000 records of 3073 bytes "
         "each)";
}

void append(ImageSet* set, ImageSet&& more) {
  set->pixels.insert(set->pixels.end(), more.pixels.begin(), more.pixels.end());
  set->labels.insert(set->labels.end(), more.labels.begin(), more.labels.end());
  set->rows += more.rows;
}

// One class of the synthetic set: a grating sin(2 pi (x cos t + y sin t) / period + phase) whose
// amplitude per channel is its colour, on a background colour. sin(a + phase) = sin a cos phase +
// cos a sin phase, so an image costs two multiply-adds per pixel, not a sine.
struct ClassPattern {
  std::array<float, kChannels> background{};
  std::array<float, kChannels> amplitude{};
  std::vector<float> sine;    // sin a per pixel (row-major 32 x 32)
  std::vector<float> cosine;  // cos a per pixel
};

std::vector<ClassPattern> make_class_patterns() {
  constexpr double kPi = 3.14159265358979323846;
  SeededRandom random(kSyntheticImagePatternSeed);
  std::vector<ClassPattern> patterns(kClasses);
  for (int label = 0; label < kClasses; ++label) {
    ClassPattern& pattern = patterns[label];
    for (int c = 0; c < kChannels; ++c) {
      // Backgrounds close together: colour alone separates the classes only partly, so the net
      // has to learn the gratings too.
      pattern.background[c] = static_cast<float>(random.uniform(0.4, 0.6));
      pattern.amplitude[c] = static_cast<float>(random.uniform(0.1, 0.25));
    }
    // Orientations spread over half a turn, one per class, with a little jitter; periods 4 to 12
    // pixels (Nyquist is 2), both seen well through 5 x 5 kernels and after pooling.
    const double angle = kPi * (label + random.uniform(-0.2, 0.2)) / kClasses;
    const double period = random.uniform(4.0, 12.0);
    pattern.sine.resize(kPlanePixels);
    pattern.cosine.resize(kPlanePixels);
    for (int y = 0; y < kImageSize; ++y) {
      for (int x = 0; x < kImageSize; ++x) {
        const double a = 2.0 * kPi * (x * std::cos(angle) + y * std::sin(angle)) / period;
        pattern.sine[y * kImageSize + x] = static_cast<float>(std::sin(a));
        pattern.cosine[y * kImageSize + x] = static_cast<float>(std::cos(a));
      }
    }
  }
  return patterns;
}

}  // namespace

std::optional<std::string> cifar10_directory() {
  const char* environment = std::getenv("GPUBENCH_CIFAR10_DIR");
  if (environment == nullptr || environment[0] == '\0') return std::nullopt;
  return std::string(environment);
}

ImageSet read_cifar10_file(const std::string& path, int max_rows) {
  require_regular_file(path, "CIFAR-10 file", cifar10_help());
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw std::runtime_error("cannot open CIFAR-10 file '" + path + "': " + std::strerror(errno) +
                             cifar10_help());
  }
  file.seekg(0, std::ios::end);
  const std::streamoff bytes = file.tellg();
  file.seekg(0, std::ios::beg);
  if (bytes < 0 || !file) throw std::runtime_error("cannot read the size of '" + path + "'");
  if (bytes == 0 || bytes % kCifar10RecordBytes != 0) {
    throw std::runtime_error("CIFAR-10 file '" + path + "' is " + std::to_string(bytes) +
                             " bytes, expected a positive multiple of " +
                             std::to_string(kCifar10RecordBytes) +
                             " (1 label byte + 3072 pixel bytes per image; 30730000 for 10000 "
                             "images)");
  }
  const auto records = static_cast<int>(bytes / kCifar10RecordBytes);
  ImageSet set;
  set.rows = max_rows < 0 ? records : std::min(records, max_rows);
  set.pixels.resize(static_cast<std::size_t>(set.rows) * kImageFloats);
  set.labels.resize(static_cast<std::size_t>(set.rows));
  // ToTensor() divides by 255 in float; a table of those 256 quotients gives the same values.
  std::array<float, 256> scaled{};
  for (int byte = 0; byte < 256; ++byte) scaled[byte] = static_cast<float>(byte) / 255.0F;
  std::array<unsigned char, kCifar10RecordBytes> record{};
  for (int row = 0; row < set.rows; ++row) {
    if (!file.read(reinterpret_cast<char*>(record.data()), kCifar10RecordBytes)) {
      throw std::runtime_error("cannot read record " + std::to_string(row) + " of '" + path + "'");
    }
    if (record[0] >= kClasses) {
      throw std::runtime_error("CIFAR-10 file '" + path + "': record " + std::to_string(row) +
                               " (byte offset " +
                               std::to_string(static_cast<long long>(row) * kCifar10RecordBytes) +
                               ") has label " + std::to_string(record[0]) + ", above 9");
    }
    set.labels[row] = record[0];
    float* image = set.pixels.data() + static_cast<std::size_t>(row) * kImageFloats;
    for (int i = 0; i < kImageFloats; ++i) image[i] = scaled[record[1 + i]];
  }
  return set;
}

ImageSet make_synthetic_images(int rows, std::uint64_t image_seed) {
  if (rows < 1) {
    throw std::invalid_argument("synthetic image set needs rows >= 1, got " + std::to_string(rows));
  }
  static const std::vector<ClassPattern> patterns = make_class_patterns();
  ImageSet set;
  set.rows = rows;
  set.pixels.resize(static_cast<std::size_t>(rows) * kImageFloats);
  set.labels.resize(static_cast<std::size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    // Each image its own stream, started at a pseudo-random point of the generator's cycle, so
    // image i is the same whatever the number of rows.
    SeededRandom random(SeededRandom(image_seed + static_cast<std::uint64_t>(row)).next_u64());
    const int label = static_cast<int>(random.below(kClasses));
    set.labels[row] = label;
    const ClassPattern& pattern = patterns[label];
    constexpr double kTwoPi = 2.0 * 3.14159265358979323846;
    const double phase = kTwoPi * random.uniform();
    const auto contrast = static_cast<float>(random.uniform(0.6, 1.4));
    const auto brightness = static_cast<float>(random.uniform(-0.1, 0.1));
    const auto sine_weight = static_cast<float>(std::cos(phase));
    const auto cosine_weight = static_cast<float>(std::sin(phase));
    float* image = set.pixels.data() + static_cast<std::size_t>(row) * kImageFloats;
    for (int c = 0; c < kChannels; ++c) {
      const float amplitude = contrast * pattern.amplitude[c];
      const float background = pattern.background[c] + brightness;
      float* plane = image + static_cast<std::size_t>(c) * kPlanePixels;
      for (int i = 0; i < kPlanePixels; ++i) {
        const float grating = sine_weight * pattern.sine[i] + cosine_weight * pattern.cosine[i];
        const auto noise = static_cast<float>(random.uniform(-0.15, 0.15));
        plane[i] = std::clamp(background + amplitude * grating + noise, 0.0F, 1.0F);
      }
    }
  }
  return set;
}

ImageData load_image_data(const std::string& name, int train_rows) {
  if (train_rows < 1) {
    throw std::invalid_argument("image data needs train_rows >= 1, got " +
                                std::to_string(train_rows));
  }
  ImageData data;
  data.name = name;
  if (name == "synthetic") {
    data.train = make_synthetic_images(train_rows, kSyntheticImageTrainSeed);
    data.test = make_synthetic_images(kSyntheticImageTestRows, kSyntheticImageTestSeed);
    return data;
  }
  if (name != "cifar10") {
    throw std::invalid_argument("unknown image data set '" + name +
                                "' (known: synthetic, cifar10)");
  }
  const std::optional<std::string> directory = cifar10_directory();
  if (!directory) {
    throw std::runtime_error("data set cifar10: GPUBENCH_CIFAR10_DIR is not set" + cifar10_help());
  }
  for (int file = 1; file <= kCifar10TrainFiles && data.train.rows < train_rows; ++file) {
    append(&data.train,
           read_cifar10_file(*directory + "/data_batch_" + std::to_string(file) + ".bin",
                             train_rows - data.train.rows));
  }
  if (data.train.rows < train_rows) {
    throw std::invalid_argument("cifar10: " + std::to_string(train_rows) +
                                " training images asked for, but the files in '" + *directory +
                                "' hold " + std::to_string(data.train.rows));
  }
  data.test = read_cifar10_file(*directory + "/test_batch.bin");
  return data;
}

}  // namespace gpubench
