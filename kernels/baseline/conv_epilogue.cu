// Bias (+ residual) + ReLU over a bf16 NHWC tensor (conv_epilogue.h).
#include "kernels/baseline/conv_epilogue.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cusync/memory.h"

namespace cusync_baseline {

namespace {

// Eight channels (16 bytes) per thread where K is a multiple of 8 and the
// tensors are 16-byte aligned; one element per thread otherwise.
template <bool kVector>
__global__ void biasResidualReluKernel(__nv_bfloat16* y, const __nv_bfloat16* bias, const __nv_bfloat16* residual,
                                       int64_t n, int64_t K) {
  constexpr int kWidth = kVector ? 8 : 1;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x * kWidth;
  for (int64_t i = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * kWidth; i < n; i += stride) {
    const int64_t k = i % K;
    __nv_bfloat16 v[kWidth], b[kWidth], r[kWidth];
    if constexpr (kVector) {
      *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(y + i);
      *reinterpret_cast<uint4*>(b) = *reinterpret_cast<const uint4*>(bias + k);
      if (residual) *reinterpret_cast<uint4*>(r) = *reinterpret_cast<const uint4*>(residual + i);
    } else {
      v[0] = y[i], b[0] = bias[k];
      if (residual) r[0] = residual[i];
    }
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      float a = __bfloat162float(v[j]) + __bfloat162float(b[j]);
      if (residual) a += __bfloat162float(r[j]);
      v[j] = __float2bfloat16_rn(fmaxf(a, 0.f));
    }
    if constexpr (kVector) *reinterpret_cast<uint4*>(y + i) = *reinterpret_cast<const uint4*>(v);
    else y[i] = v[0];
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void biasResidualRelu(void* y, const void* bias, const void* residual, int64_t pixels, int64_t K,
                      cudaStream_t stream) {
  const int64_t n = pixels * K;
  if (n == 0) return;
  auto* yy = static_cast<__nv_bfloat16*>(y);
  const auto* bb = static_cast<const __nv_bfloat16*>(bias);
  const auto* rr = static_cast<const __nv_bfloat16*>(residual);
  const bool vector = K % 8 == 0 && aligned16(y) && aligned16(bias) && (!residual || aligned16(residual));
  const int threads = 256;
  const int64_t items = vector ? n / 8 : n;
  // Enough blocks to fill any GPU several times over; the loop covers the rest.
  const unsigned blocks = unsigned(std::min<int64_t>((items + threads - 1) / threads, 65536));
  if (vector) biasResidualReluKernel<true><<<blocks, threads, 0, stream>>>(yy, bb, rr, n, K);
  else biasResidualReluKernel<false><<<blocks, threads, 0, stream>>>(yy, bb, rr, n, K);
  cusync::cudaCheck(cudaGetLastError(), "biasResidualRelu launch");
}

}  // namespace cusync_baseline
