#pragma once
// main() for GPU test executables: exit with GPUBENCH_SKIP_CODE (CTest's SKIP_RETURN_CODE) and one
// line saying why when no device is visible, so ctest reports the test as skipped, not passed.

#include <gtest/gtest.h>

#include <cstdio>

#include "harness/gpu_info.hpp"

#define GPUBENCH_GPU_TEST_MAIN()                                                        \
  int main(int argc, char** argv) {                                                     \
    if (!gpubench::gpu_info()) {                                                        \
      std::printf("SKIPPED: no GPU: %s\n", gpubench::gpu_unavailable_reason().c_str()); \
      return GPUBENCH_SKIP_CODE;                                                        \
    }                                                                                   \
    ::testing::InitGoogleTest(&argc, argv);                                             \
    return RUN_ALL_TESTS();                                                             \
  }
