// cuBLASLt baseline GEMM (cublaslt_gemm.h).
#include "kernels/baseline/cublaslt_gemm.h"

#include <string>

#include "cusync/error.h"
#include "cusync/memory.h"

namespace cusync_baseline {

namespace {
void ltCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw cusync::Error(cusync::ErrorCode::CudaError, "cublasLt",
                        std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}
}  // namespace

LtContext::LtContext(size_t workspaceBytes) : wsBytes_(workspaceBytes) {
  ltCheck(cublasLtCreate(&handle_), "cublasLtCreate");
  cusync::cudaCheck(cudaMalloc(&ws_, wsBytes_), "cudaMalloc(cuBLASLt workspace)");
}

LtContext::~LtContext() {
  cublasLtDestroy(handle_);
  cudaFree(ws_);
}

// C[M,N] row-major = A[M,K] row-major x B[N,K]^T, as column-major C^T = B^T' x A'.
LtGemm::LtGemm(const LtContext& ctx, int64_t M, int64_t N, int64_t K, LtEpilogue e) : ctx_(ctx) {
  ltCheck(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
  ltCheck(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof(tA)), "set TRANSA");
  ltCheck(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof(tB)), "set TRANSB");
  if (e == LtEpilogue::Gelu) {
    cublasLtEpilogue_t g = CUBLASLT_EPILOGUE_GELU;
    ltCheck(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &g, sizeof(g)), "set EPILOGUE");
  }
  ltCheck(cublasLtMatrixLayoutCreate(&la_, CUDA_R_16BF, K, N, K), "layout B");  // weights, op T -> N x K
  ltCheck(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_16BF, K, M, K), "layout A");  // activations
  ltCheck(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16BF, N, M, N), "layout C");
  cublasLtMatmulPreference_t pref;
  ltCheck(cublasLtMatmulPreferenceCreate(&pref), "preference");
  size_t ws = ctx.workspaceBytes();
  ltCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
          "preference workspace");
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx.handle(), op_, la_, lb_, lc_, lc_, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  ltCheck(s, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0)
    throw cusync::Error(cusync::ErrorCode::CudaError, "cublasLt",
                        "no algorithm for M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                            ", K = " + std::to_string(K));
  algo_ = res.algo;
}

LtGemm::~LtGemm() {
  if (la_) cublasLtMatrixLayoutDestroy(la_);
  if (lb_) cublasLtMatrixLayoutDestroy(lb_);
  if (lc_) cublasLtMatrixLayoutDestroy(lc_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

void LtGemm::run(const void* A, const void* B, void* C, cudaStream_t stream) const {
  const float one = 1.f, zero = 0.f;
  ltCheck(cublasLtMatmul(ctx_.handle(), op_, &one, B, la_, A, lb_, &zero, C, lc_, C, lc_, &algo_, ctx_.workspace(),
                         ctx_.workspaceBytes(), stream),
          "cublasLtMatmul");
}

std::string LtGemm::describe() const {
  int id = 0, tile = 0, cluster = 0, splitk = 0;
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster), &w);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk), &w);
  // The enum values of cublasLt.h that Hopper kernels use; others print as numbers.
  static const char* kTiles[] = {"64x64", "128x32", "64x128", "128x64", "64x256", "128x128", "256x64",
                                 "64x512", "128x256", "256x128", "512x64", "64x96", "96x64", "96x128",
                                 "128x160", "160x128", "192x128", "128x192", "128x96"};
  static const char* kClusters[] = {"1x1x1", "2x1x1", "4x1x1", "1x2x1", "2x2x1", "4x2x1", "1x4x1", "2x4x1", "4x4x1"};
  const std::string t = tile >= CUBLASLT_MATMUL_TILE_64x64 && tile <= CUBLASLT_MATMUL_TILE_128x96
                            ? kTiles[tile - CUBLASLT_MATMUL_TILE_64x64]
                            : "tile" + std::to_string(tile);
  const std::string c = cluster >= CUBLASLT_CLUSTER_SHAPE_1x1x1 && cluster <= CUBLASLT_CLUSTER_SHAPE_4x4x1
                            ? kClusters[cluster - CUBLASLT_CLUSTER_SHAPE_1x1x1]
                            : "cluster" + std::to_string(cluster);
  return "a" + std::to_string(id) + " " + t + " c" + c + " k" + std::to_string(splitk);
}

}  // namespace cusync_baseline
