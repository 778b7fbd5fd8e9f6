// Helpers shared by the GPU tests.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <algorithm>
#include <random>
#include <thread>
#include <vector>

inline bool gpuPresent() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_GPU() \
  if (!gpuPresent()) GTEST_SKIP() << "no CUDA GPU present"

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (cudaMalloc(&ptr, count * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  cudaError_t upload(const std::vector<T>& h) {
    if (h.size() != n) return cudaErrorInvalidValue;
    const cudaError_t e = cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
  }
  // NaN for floats. Synchronous: the kernels run on non-blocking streams,
  // which do not wait for work on the legacy default stream.
  cudaError_t poison() {
    const cudaError_t e = cudaMemset(ptr, 0xFF, n * sizeof(T));
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

inline std::vector<float> randomFloats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// C = A[:, :K] * B in double; A's rows are lda apart. Rows are split over
// the host's cores: the reference must not dominate the test's time.
inline std::vector<double> hostGemm(const std::vector<double>& A, const std::vector<float>& B, int M, int N, int K,
                                    int lda) {
  std::vector<double> C(size_t(M) * N, 0.0);
  auto rows = [&](int begin, int end) {
    for (int i = begin; i < end; ++i)
      for (int k = 0; k < K; ++k) {
        const double a = A[size_t(i) * lda + k];
        for (int j = 0; j < N; ++j) C[size_t(i) * N + j] += a * B[size_t(k) * N + j];
      }
  };
  const int workers = std::max(1, std::min<int>(16, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  const int chunk = (M + workers - 1) / workers;
  for (int w = 0; w < workers; ++w) pool.emplace_back(rows, std::min(M, w * chunk), std::min(M, (w + 1) * chunk));
  for (auto& t : pool) t.join();
  return C;
}

// max |out - ref| / max |ref|; NaN (an unwritten, poisoned output) gives +inf.
inline double relativeError(const std::vector<float>& out, const std::vector<double>& ref) {
  double maxRef = 0, maxErr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    maxRef = std::max(maxRef, std::fabs(ref[i]));
    maxErr = std::max(maxErr, std::fabs(out[i] - ref[i]));
  }
  return maxRef > 0 ? maxErr / maxRef : maxErr;
}
