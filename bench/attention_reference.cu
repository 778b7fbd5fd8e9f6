// The reference attention kernel and the cuBLAS block (attention_reference.h).
#include "attention_reference.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "cusync/error.h"

namespace bench {

namespace {

constexpr int kD = kAttentionHeadDim;
// One thread per head dimension: four warps, each scoring keys whole.
constexpr int kThreads = kD;

// Keys go in chunks of kThreads: a warp scores one key at a time (each lane
// four dimensions, 256 contiguous bytes per key), then the chunk's scores
// turn into exponentials against the running maximum, and every thread
// accumulates its dimension of P V (coalesced rows of V).
__global__ void __launch_bounds__(kThreads)
    referenceAttentionKernel(const __nv_bfloat16* q, int64_t ldq, const __nv_bfloat16* kv, int64_t L, int heads,
                             float* outF, __nv_bfloat16* outB) {
  __shared__ float p[kThreads];  // the chunk's scores, then their exponentials
  const int64_t i = blockIdx.x;
  const int h = blockIdx.y;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int64_t W = int64_t(heads) * kD, ldkv = 2 * W;
  const float scale = rsqrtf(float(kD));
  const __nv_bfloat16* qRow = q + i * ldq + int64_t(h) * kD + lane * 4;
  float qd[4];
  for (int d = 0; d < 4; ++d) qd[d] = __bfloat162float(qRow[d]);

  const int64_t keys = L + i + 1;  // the cache and, causally, new tokens 0..i
  float m = -INFINITY, l = 0.f, acc = 0.f;
  for (int64_t j0 = 0; j0 < keys; j0 += kThreads) {
    const int n = int(keys - j0 < kThreads ? keys - j0 : kThreads);
    for (int j = warp; j < n; j += kThreads / 32) {
      const __nv_bfloat16* k = kv + (j0 + j) * ldkv + int64_t(h) * kD + lane * 4;
      float dot = 0.f;
      for (int d = 0; d < 4; ++d) dot += qd[d] * __bfloat162float(k[d]);
      for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      if (lane == 0) p[j] = dot * scale;
    }
    __syncthreads();
    float chunkMax = -INFINITY;
    for (int j = 0; j < n; ++j) chunkMax = fmaxf(chunkMax, p[j]);
    const float mNew = fmaxf(m, chunkMax);
    __syncthreads();  // every thread has read the scores before they are overwritten
    if (t < n) p[t] = expf(p[t] - mNew);
    __syncthreads();
    const float rescale = expf(m - mNew);  // 0 for the first chunk (m = -inf)
    l *= rescale;
    acc *= rescale;
    const __nv_bfloat16* v = kv + j0 * ldkv + W + int64_t(h) * kD + t;
    for (int j = 0; j < n; ++j) {
      l += p[j];
      acc += p[j] * __bfloat162float(v[j * ldkv]);
    }
    m = mNew;
    __syncthreads();  // before the next chunk's scores
  }
  const float o = acc / l;
  const int64_t at = i * W + int64_t(h) * kD + t;
  if (outF) outF[at] = o;
  if (outB) outB[at] = __float2bfloat16_rn(o);
}

void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw cusync::Error(cusync::ErrorCode::CudaError, "cublas attention", std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

cudaError_t referenceAttention(const void* q, int64_t ldq, const void* kv, int64_t M, int64_t L, int heads, float* outF,
                               void* outB, cudaStream_t s) {
  referenceAttentionKernel<<<dim3(unsigned(M), unsigned(heads)), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(q), ldq, static_cast<const __nv_bfloat16*>(kv), L, heads, outF,
      static_cast<__nv_bfloat16*>(outB));
  return cudaGetLastError();
}

CublasAttentionBlock::CublasAttentionBlock(const cusync_baseline::LtContext& lt, int64_t hidden, int heads, int64_t M,
                                           int64_t L)
    : M_(M),
      L_(L),
      heads_(heads),
      qkv_(lt, M, 3 * int64_t(heads) * kD, hidden),
      wo_(lt, M, hidden, int64_t(heads) * kD) {}

void CublasAttentionBlock::run(const CublasBlockBuffers& b, cudaStream_t s) const {
  const int64_t W = int64_t(heads_) * kD;
  qkv_.run(b.x, b.wqkv, b.qkv, s);
  // Columns [W, 3W) of a projection row are a cache row: keys of all heads, then values.
  const size_t row = size_t(2 * W) * 2;
  cudaCheck(cudaMemcpy2DAsync(static_cast<char*>(b.kv) + size_t(L_) * row, row, static_cast<const char*>(b.qkv) + W * 2,
                              size_t(3 * W) * 2, row, size_t(M_), cudaMemcpyDeviceToDevice, s),
            "cudaMemcpy2DAsync (the new keys and values into the cache)");
  cudaCheck(referenceAttention(b.qkv, 3 * W, b.kv, M_, L_, heads_, b.attnF, b.attn, s), "referenceAttention");
  wo_.run(b.attn, b.wo, b.out, s);
}

}  // namespace bench
