// The vendor baseline: a bf16 GEMM through cuBLASLt as PyTorch's Linear runs
// it, C[M, N] = act(A[M, K] x B[N, K]^T) row-major, with the algorithm
// cuBLASLt's heuristic picks (optionally with its GELU epilogue). Shared by
// the benchmarks, the MLP's cuBLAS pipeline and the tests.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace cusync_baseline {

// A cuBLASLt handle and its workspace; one per stream at a time.
class LtContext {
 public:
  explicit LtContext(size_t workspaceBytes = size_t(64) << 20);
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return ws_; }
  size_t workspaceBytes() const { return wsBytes_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* ws_ = nullptr;
  size_t wsBytes_ = 0;
};

enum class LtEpilogue { None, Gelu };

// One planned GEMM shape. Throws cusync::Error(CudaError) when cuBLASLt fails
// or finds no algorithm.
class LtGemm {
 public:
  LtGemm(const LtContext& ctx, int64_t M, int64_t N, int64_t K, LtEpilogue e = LtEpilogue::None);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // C = act(A B^T) on `stream`; A [M, K], B [N, K], C [M, N], bf16 row-major.
  void run(const void* A, const void* B, void* C, cudaStream_t stream) const;
  // What cuBLASLt picked, in its own terms (its matrices are our transposes:
  // its tile "AxB" covers A of our columns and B of our rows), e.g.
  // "a66 256x128 c2x1x1 k1": algorithm id, tile, cluster shape, split-K count.
  std::string describe() const;

 private:
  const LtContext& ctx_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace cusync_baseline
