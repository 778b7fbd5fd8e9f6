// The reference the convolution results are checked against: a naive conv2d
// in fp32 on the GPU (one thread per output element, no tensor cores, no
// tiling to get wrong), and the relative error ||out - ref|| / ||ref|| of a
// bf16 result, accumulated on the GPU. Layouts as kernels/conv/conv.h:
// x [N, H, W, C], w [K, R, S, C], y [N, P, Q, K], bf16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

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

// sums[0] += sum (out - ref)^2, sums[1] += sum ref^2; *bad += non-finite outputs.
template <class Ref>
__global__ void relErrSums(const __nv_bfloat16* out, const Ref* ref, int64_t n, double* sums,
                           unsigned long long* bad) {
  double num = 0, den = 0;
  unsigned long long nb = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float o = __bfloat162float(out[i]);
    float r;
    if constexpr (sizeof(Ref) == 2) r = __bfloat162float(ref[i]);
    else r = ref[i];
    if (!isfinite(o)) ++nb;
    else num += double(o - r) * (o - r);
    den += double(r) * r;
  }
  for (int off = 16; off > 0; off /= 2) {
    num += __shfl_down_sync(0xffffffffu, num, off);
    den += __shfl_down_sync(0xffffffffu, den, off);
    nb += __shfl_down_sync(0xffffffffu, nb, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], num);
    atomicAdd(&sums[1], den);
    if (nb) atomicAdd(bad, nb);
  }
}

// The relative error of bf16 results against a reference (fp32 or bf16),
// over any number of slices: add() each, then value(); all on stream s.
class RelErr {
 public:
  explicit RelErr(cudaStream_t s) : s_(s) {
    if (cudaMalloc(&d_, 2 * sizeof(double) + sizeof(unsigned long long)) == cudaSuccess)
      status_ = cudaMemsetAsync(d_, 0, 2 * sizeof(double) + sizeof(unsigned long long), s_);
    else
      d_ = nullptr, status_ = cudaErrorMemoryAllocation;
  }
  ~RelErr() { cudaFree(d_); }
  RelErr(const RelErr&) = delete;
  RelErr& operator=(const RelErr&) = delete;

  template <class Ref>
  void add(const void* out, const Ref* ref, int64_t n) {
    if (status_ != cudaSuccess || n == 0) return;
    relErrSums<Ref><<<512, 256, 0, s_>>>(static_cast<const __nv_bfloat16*>(out), ref, n, sums(), bad());
    status_ = cudaGetLastError();
  }
  // ||out - ref|| / ||ref|| (||ref|| taken as 1 where it is 0); infinity
  // with a non-finite output; NaN when a CUDA call failed (status()).
  double value() {
    if (status_ == cudaSuccess) status_ = cudaStreamSynchronize(s_);
    double h[2] = {0, 0};
    unsigned long long nb = 0;
    if (status_ == cudaSuccess) status_ = cudaMemcpy(h, d_, sizeof h, cudaMemcpyDeviceToHost);
    if (status_ == cudaSuccess) status_ = cudaMemcpy(&nb, bad(), sizeof nb, cudaMemcpyDeviceToHost);
    if (status_ != cudaSuccess) return NAN;
    if (nb) return INFINITY;
    return std::sqrt(h[0] / (h[1] > 0 ? h[1] : 1));
  }
  cudaError_t status() const { return status_; }

 private:
  double* sums() { return static_cast<double*>(d_); }
  unsigned long long* bad() { return reinterpret_cast<unsigned long long*>(static_cast<double*>(d_) + 2); }
  cudaStream_t s_;
  void* d_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace bench
