// The attention block as vendor libraries run it, and the reference
// `cusync-bench attention` checks every variant against: cuBLASLt's QKV
// projection into a scratch [M, 3W] matrix, the new tokens' keys and values
// copied into rows [L, L + M) of the KV cache, a plain fp32 attention kernel
// (no tensor cores, no tiling to get wrong), cuBLASLt's output projection.
// Layouts as kernels/attention/attention.h and block_plan.h: W = heads * 128;
// x [M, hidden], Wqkv [3W, hidden] (Q's rows, then K's, then V's), Wo
// [hidden, W], the cache [capacity, 2W] (keys of all heads, then values).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/baseline/cublaslt_gemm.h"

namespace bench {

constexpr int kAttentionHeadDim = 128;

// Causal attention of M new tokens after L cached ones, in fp32 from bf16
// operands: new token i (query row i of `q`, row stride ldq elements)
// attends to cache rows [0, L + i] of head h, softmax(q k^T / sqrt(128)) v
// with the maximum subtracted. Writes outF (fp32) and outB (bf16) [M, W],
// each where not null. One block per (row, head).
cudaError_t referenceAttention(const void* q, int64_t ldq, const void* kv, int64_t M, int64_t L, int heads, float* outF,
                               void* outB, cudaStream_t s);

// The buffers of one step of the cuBLAS block (bf16, device).
struct CublasBlockBuffers {
  const void* x = nullptr;
  const void* wqkv = nullptr;
  const void* wo = nullptr;
  void* qkv = nullptr;       // [M, 3W] scratch: the projection, Q read from it in place
  void* kv = nullptr;        // [capacity, 2W]: rows [L, L + M) are written
  void* attn = nullptr;      // [M, W]
  float* attnF = nullptr;    // [M, W] fp32 copy of the attention's output, where not null (the reference)
  void* out = nullptr;       // [M, hidden]
};

// One planned step shape (cuBLASLt's algorithms chosen at construction).
class CublasAttentionBlock {
 public:
  // Throws cusync::Error(CudaError) where cuBLASLt has no algorithm.
  CublasAttentionBlock(const cusync_baseline::LtContext& lt, int64_t hidden, int heads, int64_t M, int64_t L);
  // Asynchronous on `s`; capturable in a CUDA graph. Throws cusync::Error
  // (CudaError) where a launch fails.
  void run(const CublasBlockBuffers& b, cudaStream_t s) const;
  // The projections alone, for the GEMM part of the baseline's time.
  const cusync_baseline::LtGemm& qkvGemm() const { return qkv_; }
  const cusync_baseline::LtGemm& woGemm() const { return wo_; }

 private:
  int64_t M_, L_;
  int heads_;
  cusync_baseline::LtGemm qkv_, wo_;
};

}  // namespace bench
