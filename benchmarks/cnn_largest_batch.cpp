// The CNN's largest-batch row (benchmarks/largest_batch.hpp): the tutorial network in fp32 on the
// sweep's image data (cifar10 when GPUBENCH_CIFAR10_DIR is set, else synthetic).

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "benchmarks/cnn_workload.hpp"
#include "benchmarks/gpu_training_phases.hpp"
#include "benchmarks/largest_batch.hpp"
#include "harness/image_dataset.hpp"
#include "kernels/cnn/cnn_cuda_memory.hpp"
#include "kernels/cnn/cnn_cuda_trainer.hpp"
#include "kernels/cnn/cnn_spec.hpp"

namespace gpubench {

namespace {

// Steps of the timed run: enough for a step time well above the host clock's resolution, few
// enough that a batch filling an 80 GB device trains in about a second.
constexpr int kCnnLargestBatchSteps = 10;
// Distinct images a run reads from its data set; a larger batch repeats them. Step time and
// memory do not depend on the pixel values (the products and the kernels run the same for any
// values), and repeating keeps a batch of thousands of images cheap to make, synthetic or not.
constexpr int kDistinctCnnImages = 1024;

// `batch` training images of the image data set `data`: its first min(batch, kDistinctCnnImages)
// images, repeated.
ImageSet repeated_cnn_images(const std::string& data, int batch) {
  const int distinct = std::min(batch, kDistinctCnnImages);
  const ImageSet source = load_image_data(data, distinct).train;
  constexpr auto kImageFloats = static_cast<std::size_t>(CnnSpec::image_floats());
  ImageSet images;
  images.rows = batch;
  images.pixels.resize(static_cast<std::size_t>(batch) * kImageFloats);
  images.labels.resize(static_cast<std::size_t>(batch));
  for (int image = 0; image < batch; ++image) {
    const int from = image % distinct;
    std::copy_n(source.image(from), kImageFloats,
                images.pixels.data() + static_cast<std::size_t>(image) * kImageFloats);
    images.labels[static_cast<std::size_t>(image)] = source.labels[static_cast<std::size_t>(from)];
  }
  return images;
}

LargestBatchTrainer cnn_largest_batch_trainer(const std::string& data) {
  const CnnSpec spec;
  LargestBatchTrainer trainer;
  trainer.device_bytes_at = [spec](int batch) { return cuda::cnn_gpu_device_bytes(spec, batch); };
  // The repeated images and labels, and the trainer's pageable and pinned copies of them (the
  // distinct images and the data set's test split, at most a few thousand images, are left out).
  trainer.host_bytes_at = [](int batch) {
    const std::size_t batch_bytes =
        static_cast<std::size_t>(batch) *
        (static_cast<std::size_t>(CnnSpec::image_floats()) * sizeof(float) + sizeof(int));
    return batch_bytes + cuda::cnn_gpu_host_bytes(batch);
  };
  // The im2col matrices must stay within cuBLAS's int dimensions: 10485 images.
  trainer.max_batch = cuda::cnn_gpu_max_batch(spec);
  trainer.steps = kCnnLargestBatchSteps;
  trainer.run = [spec, data](benchmark::State& state, int batch, int steps,
                             DeviceMemoryMeter& meter) {
    const ImageSet images = repeated_cnn_images(data, batch);
    const std::vector<float> initial = initial_cnn_parameters(spec);
    cuda::CnnGpuTrainer gpu_trainer(spec, batch, images.pixels.data(), images.labels.data(),
                                    initial.data());
    gpu_trainer.prepare(cuda::TrainingRunConfig{}, steps);  // eager, resident batch, no readbacks
    return time_largest_batch_steps(state, gpu_trainer, steps, meter);
  };
  return trainer;
}

}  // namespace

std::vector<LargestBatchRow> cnn_largest_batch_rows(const Sweep& /*sweep*/) {
  const std::string data = cnn_sweep_data();
  return {{data, {}, "fp32", cnn_largest_batch_trainer(data)}};
}

}  // namespace gpubench
