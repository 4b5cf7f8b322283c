#pragma once
// Image data sets for the training workloads: CIFAR-10 read from its binary files when the user
// has them, otherwise a seeded synthetic set of the same shape. Nothing is downloaded: the suite
// reads CIFAR-10 from the folder GPUBENCH_CIFAR10_DIR names.
//
// CIFAR-10's binary version (https://www.cs.toronto.edu/~kriz/cifar.html) is six files,
// data_batch_1.bin .. data_batch_5.bin (training) and test_batch.bin, each 10000 records of 3073
// bytes: one label byte 0..9, then 3072 pixel bytes, the 32 x 32 red plane, then green, then blue,
// each plane row-major. That is already NCHW, so a record decodes in place: byte / 255, like
// torchvision's ToTensor(). The geometry below is the format's own; a network that reads these
// images checks its input shape against it (in its workload's files).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpubench {

// CIFAR-10's images: 3 colour planes of 32 x 32 pixels, 10 classes; the synthetic set has the same.
inline constexpr int kCifar10Channels = 3;
inline constexpr int kCifar10ImageSize = 32;
inline constexpr int kCifar10Classes = 10;
inline constexpr int kCifar10ImageFloats = kCifar10Channels * kCifar10ImageSize * kCifar10ImageSize;

struct ImageSet {
  int rows = 0;
  std::vector<float> pixels;  // rows x 3 x 32 x 32 (NCHW, planes row-major), values in [0, 1]
  std::vector<int> labels;    // one class index 0..9 per image

  const float* image(int index) const {
    return pixels.data() + static_cast<std::size_t>(index) * kCifar10ImageFloats;
  }
};

struct ImageData {
  ImageSet train;
  ImageSet test;
  std::string name;  // "cifar10" or "synthetic"
};

inline constexpr int kCifar10RecordBytes = 1 + kCifar10ImageFloats;  // 3073
inline constexpr int kCifar10TrainFiles = 5;
inline constexpr int kCifar10RecordsPerFile = 10000;
// Images in one CIFAR-10 training epoch (5 files of 10000), for t_epoch_cifar.
inline constexpr int kCifar10TrainImages = kCifar10TrainFiles * kCifar10RecordsPerFile;
inline constexpr int kSyntheticImageTestRows = 1000;
// The synthetic set's class patterns come from one seed and its images from another per split,
// so the training and test images are different draws of the same ten classes.
inline constexpr std::uint64_t kSyntheticImagePatternSeed = 31;
inline constexpr std::uint64_t kSyntheticImageTrainSeed = 32;
inline constexpr std::uint64_t kSyntheticImageTestSeed = 33;

// The folder GPUBENCH_CIFAR10_DIR names (set and non-empty), else nullopt: no CIFAR-10.
std::optional<std::string> cifar10_directory();

// The first `max_rows` records of one CIFAR-10 binary file (every record when max_rows < 0).
// Throws std::runtime_error naming the path and the problem for a file that cannot be opened or
// read, a path that is a directory or another non-regular file, a size that is not a positive
// multiple of 3073 bytes, or a label above 9 (and which record has it).
ImageSet read_cifar10_file(const std::string& path, int max_rows = -1);

// `rows` synthetic images in [0, 1], learnable but not trivially: each class is a sinusoidal
// grating of its own orientation, period and colour on its own background colour; each image
// shifts its class's grating by a random phase, scales its contrast, shifts its brightness, and
// adds uniform noise per pixel. Labels are uniform over the 10 classes. Image i depends only on
// (image_seed, i), so a set of n rows is a prefix of any larger one with the same seed.
// Throws std::invalid_argument for rows < 1.
ImageSet make_synthetic_images(int rows, std::uint64_t image_seed);

// What one benchmark trains on from an image data set:
//   "synthetic": `train_rows` synthetic images (kSyntheticImageTrainSeed) and
//                kSyntheticImageTestRows test images (kSyntheticImageTestSeed);
//   "cifar10":   the first `train_rows` images of data_batch_1.bin, data_batch_2.bin, ... and the
//                whole of test_batch.bin, from cifar10_directory().
// Throws std::invalid_argument for an unknown name, train_rows < 1, or more rows than the files
// hold, and std::runtime_error for cifar10 without GPUBENCH_CIFAR10_DIR or with a bad file.
ImageData load_image_data(const std::string& name, int train_rows);

}  // namespace gpubench
