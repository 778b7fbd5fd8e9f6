// Roofline ceilings and random data (bench_ceilings.h).
#include "bench_ceilings.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "bench_util.cuh"
#include "kernels/baseline/cublaslt_gemm.h"

namespace bench {

namespace {

__global__ void fillRandom(__nv_bfloat16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    const float u = (uint32_t(x) >> 8) * (1.f / 16777216.f);
    p[i] = __float2bfloat16_rn((2.f * u - 1.f) * scale);
  }
}

}  // namespace

void fillRandomBf16(void* p, size_t n, uint64_t seed, float scale, cudaStream_t s) {
  fillRandom<<<2048, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed, scale);
  CUDA_OK(cudaGetLastError());
}

double measurePeakTflops(cudaStream_t s, int iters) {
  const int n = 8192;
  __nv_bfloat16 *A, *B, *C;
  CUDA_OK(cudaMalloc(&A, size_t(n) * n * 2));
  CUDA_OK(cudaMalloc(&B, size_t(n) * n * 2));
  CUDA_OK(cudaMalloc(&C, size_t(n) * n * 2));
  fillRandomBf16(A, size_t(n) * n, 1, 1.f, s);
  fillRandomBf16(B, size_t(n) * n, 2, 1.f, s);
  double ms = 0;
  {
    const cusync_baseline::LtContext lt(size_t(32) << 20);
    const cusync_baseline::LtGemm g(lt, n, n, n);
    ms = medianMs([&](int) { g.run(A, B, C, s); }, iters, s);
  }
  cudaFree(A), cudaFree(B), cudaFree(C);
  return 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12;
}

double measureBandwidthTBs(cudaStream_t s, int iters) {
  const size_t bytes = size_t(1) << 30;
  void *a, *b;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemsetAsync(a, 1, bytes, s));
  const double ms = medianMs([&](int) { CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); }, iters, s);
  cudaFree(a), cudaFree(b);
  return 2.0 * bytes / (ms * 1e-3) / 1e12;
}

}  // namespace bench
