// GPU test entry: says once, clearly, when there is no GPU to run on.
#include <cstdio>

#include "gpu_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!::testing::GTEST_FLAG(list_tests) && !gpuPresent())
    std::printf("cusync GPU tests: no CUDA GPU present, every GPU test is skipped (CPU tests: ctest -L cpu)\n");
  return RUN_ALL_TESTS();
}
