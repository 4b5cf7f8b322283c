// Row-major cuBLAS GEMM equals the row-major OpenBLAS GEMM for every precision, on odd shapes that
// catch a swapped operand order or leading dimension. Label `gpu`; skipped without a device.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "harness/validation.hpp"
#include "kernels/common/cuda_resources.hpp"
#include "kernels/common/openblas.hpp"
#include "kernels/gemm/gemm_cpu.hpp"
#include "kernels/gemm/gemm_cuda.hpp"
#include "tests/gpu_test_main.hpp"

namespace {

using gpubench::cuda::Precision;
using Shape = std::tuple<int, int, int>;

class GpuGemm : public ::testing::TestWithParam<std::tuple<Precision, Shape>> {};

TEST_P(GpuGemm, RowMajorCublasEqualsOpenBlas) {
  const auto [precision, shape] = GetParam();
  const auto [m, n, k] = shape;
  const std::size_t a_count = static_cast<std::size_t>(m) * k;
  const std::size_t b_count = static_cast<std::size_t>(k) * n;
  const std::size_t c_count = static_cast<std::size_t>(m) * n;
  std::vector<float> a_values(a_count), b_values(b_count);
  gpubench::fill_uniform(a_values.data(), a_count, 11);
  gpubench::fill_uniform(b_values.data(), b_count, 12);
  const std::size_t element = gpubench::cuda::operand_element_bytes(precision);
  std::vector<std::byte> a_host(a_count * element), b_host(b_count * element);
  gpubench::cuda::convert_operands_from_float(precision, a_values.data(), a_host.data(), a_count);
  gpubench::cuda::convert_operands_from_float(precision, b_values.data(), b_host.data(), b_count);

  // CPU reference in double from the exact values the GPU sees, and |A| |B| for the error bound.
  std::vector<double> a(a_count), b(b_count), a_abs(a_count), b_abs(b_count);
  for (std::size_t i = 0; i < a_count; ++i) {
    a[i] = gpubench::cuda::operand_as_double(precision, a_host.data(), i);
    a_abs[i] = std::fabs(a[i]);
  }
  for (std::size_t i = 0; i < b_count; ++i) {
    b[i] = gpubench::cuda::operand_as_double(precision, b_host.data(), i);
    b_abs[i] = std::fabs(b[i]);
  }
  std::vector<double> expected(c_count), magnitude(c_count);
  gpubench::cpu::set_blas_threads(1);
  gpubench::cpu::dgemm_row_major(m, n, k, a.data(), b.data(), expected.data());
  gpubench::cpu::dgemm_row_major(m, n, k, a_abs.data(), b_abs.data(), magnitude.data());

  gpubench::Stream stream;
  gpubench::CublasHandle handle(stream.get());
  gpubench::DeviceBuffer a_device(a_host.size()), b_device(b_host.size());
  gpubench::DeviceBuffer c_device(c_count * gpubench::cuda::output_element_bytes(precision));
  // Copies, poison and GEMM in order on one stream (the handle's): the legacy default stream that
  // plain cudaMemcpy and cudaMemset use does not order work against a non-blocking stream.
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(a_device.data(), a_host.data(), a_host.size(),
                                      cudaMemcpyHostToDevice, stream.get()));
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(b_device.data(), b_host.data(), b_host.size(),
                                      cudaMemcpyHostToDevice, stream.get()));
  GPUBENCH_CUDA_CHECK(
      cudaMemsetAsync(c_device.data(), 0xFF, c_device.bytes(), stream.get()));  // NaN poison
  GPUBENCH_CUBLAS_CHECK(gpubench::cuda::gemm_row_major(
      handle.get(), precision, m, n, k, a_device.data(), b_device.data(), c_device.data()));
  std::vector<std::byte> c_host(c_device.bytes());
  GPUBENCH_CUDA_CHECK(cudaMemcpyAsync(c_host.data(), c_device.data(), c_device.bytes(),
                                      cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();

  const double u_operand = precision == Precision::tf32 ? 0x1p-11 : 0.0;
  const double relative =
      2.0 * (2.0 * u_operand + k * gpubench::cuda::accumulator_unit_roundoff(precision));
  const double output_relative = 2.0 * gpubench::cuda::output_unit_roundoff(precision);
  for (std::size_t index = 0; index < c_count; ++index) {
    const double value = gpubench::cuda::output_as_double(precision, c_host.data(), index);
    ASSERT_TRUE(std::isfinite(value)) << "element " << index << " not written";
    ASSERT_NEAR(value, expected[index],
                relative * magnitude[index] + output_relative * std::fabs(expected[index]) + 1e-300)
        << gpubench::cuda::precision_name(precision) << " element (" << index / n << ", "
        << index % n << ") of " << m << "x" << n << "x" << k;
  }
}

std::string name_of(const ::testing::TestParamInfo<GpuGemm::ParamType>& info) {
  const auto [precision, shape] = info.param;
  return std::string(gpubench::cuda::precision_name(precision)) + "_" +
         std::to_string(std::get<0>(shape)) + "x" + std::to_string(std::get<1>(shape)) + "x" +
         std::to_string(std::get<2>(shape));
}

INSTANTIATE_TEST_SUITE_P(
    EveryPrecision, GpuGemm,
    ::testing::Combine(::testing::ValuesIn(gpubench::cuda::kAllPrecisions),
                       ::testing::Values(Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 33, 65},
                                         Shape{1000, 1, 1000}, Shape{128, 96, 257})),
    name_of);

}  // namespace

GPUBENCH_GPU_TEST_MAIN()
