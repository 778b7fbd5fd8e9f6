// The reference the convolution results are checked against: a naive conv2d
// in fp32 on the GPU (one thread per output element, no tensor cores, no
// tiling to get wrong); rel_err.cuh measures a result against it. Layouts as
// kernels/conv/conv.h: x [N, H, W, C], w [K, R, S, C], y [N, P, Q, K], bf16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "rel_err.cuh"

namespace bench {

// A convolution's geometry, from any type with the fields of
// cusync_conv::Conv2dArgs (geomOf).
struct ConvGeom {
  int64_t N, H, W, C, K;
  int R, S, padH, padW, strideH, strideW;
  __host__ __device__ int64_t P() const { return (H + 2 * padH - R) / strideH + 1; }
  __host__ __device__ int64_t Q() const { return (W + 2 * padW - S) / strideW + 1; }
};

template <class Args>
ConvGeom geomOf(const Args& a) {
  return {a.N, a.H, a.W, a.C, a.K, a.R, a.S, a.padH, a.padW, a.strideH, a.strideW};
}

// One image's output: y[p, q, k] = act(sum_{r, s, c} x[p sh + r - ph, q sw + s - pw, c] w[k, r, s, c] + bias[k]),
// x the image's [H, W, C], in fp32; yf (fp32) and yb (rounded to bf16) each optional.
__global__ void referenceConvImage(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                   ConvGeom g, bool relu, float* yf, __nv_bfloat16* yb) {
  const int64_t P = g.P(), Q = g.Q(), n = P * Q * g.K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % g.K, q = (i / g.K) % Q, p = i / (g.K * Q);
    float acc = bias ? __bfloat162float(bias[k]) : 0.f;
    for (int r = 0; r < g.R; ++r) {
      const int64_t h = p * g.strideH + r - g.padH;
      if (h < 0 || h >= g.H) continue;
      for (int s = 0; s < g.S; ++s) {
        const int64_t ww = q * g.strideW + s - g.padW;
        if (ww < 0 || ww >= g.W) continue;
        const __nv_bfloat16* xp = x + (h * g.W + ww) * g.C;
        const __nv_bfloat16* wp = w + ((k * g.R + r) * g.S + s) * g.C;
        for (int64_t c = 0; c < g.C; ++c) acc += __bfloat162float(xp[c]) * __bfloat162float(wp[c]);
      }
    }
    if (relu) acc = fmaxf(acc, 0.f);
    if (yf) yf[i] = acc;
    if (yb) yb[i] = __float2bfloat16_rn(acc);
  }
}

inline cudaError_t referenceConv(const void* xImage, const void* w, const void* bias, const ConvGeom& g, bool relu,
                                 float* yf, void* yb, cudaStream_t s) {
  referenceConvImage<<<1024, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(xImage),
                                          static_cast<const __nv_bfloat16*>(w),
                                          static_cast<const __nv_bfloat16*>(bias), g, relu, yf,
                                          static_cast<__nv_bfloat16*>(yb));
  return cudaGetLastError();
}

}  // namespace bench
