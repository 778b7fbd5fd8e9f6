// GPU tests of the Hopper kernels skip, with a message CTest recognizes
// ("no CUDA GPU present"), where there is no GPU or no sm_90 GPU to run them.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <string>

namespace cusync_testing {

// Empty when the Hopper kernels can run here, otherwise the reason.
inline std::string hopperMissing() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return "no CUDA GPU present";
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  if (p.major != 9) return "no CUDA GPU present that runs sm_90a kernels (Hopper)";
  return {};
}

}  // namespace cusync_testing

#define REQUIRE_HOPPER()                                           \
  do {                                                             \
    const std::string why_ = cusync_testing::hopperMissing();      \
    if (!why_.empty()) GTEST_SKIP() << why_;                       \
  } while (0)
