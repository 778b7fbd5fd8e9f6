// Host side of the MLP pipelines (mlp.h): variant dispatch, the cuBLASLt
// pipelines and their SwiGLU kernel.
#include "kernels/mlp/mlp.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "cusync/error.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp_plan.h"
#include "kernels/mlp/synced.h"

namespace cusync_mlp {

namespace {

[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp", what); }

void cudaOk(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw cusync::Error(cusync::ErrorCode::CudaError, "mlp", std::string(what) + ": " + cudaGetErrorString(e));
}

void ltOk(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw cusync::Error(cusync::ErrorCode::CudaError, "mlp", std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// out[m][8q + r] = silu(g) * u, g = in[m][16q + r], u = in[m][16q + 8 + r]
// (the interleaved layout of cusync_gemm::swigluInterleavedRow). One thread
// per 16 input columns: two 16-byte loads, one 16-byte store.
__global__ void swigluKernel(const __nv_bfloat16* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t M,
                             int64_t N1) {
  const int64_t q16 = N1 / 16;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M * q16) return;
  const int64_t m = i / q16, q = i % q16;
  const uint4* src = reinterpret_cast<const uint4*>(in + m * N1 + 16 * q);
  const uint4 gv = src[0], uv = src[1];
  const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&gv);
  const __nv_bfloat162* u2 = reinterpret_cast<const __nv_bfloat162*>(&uv);
  uint4 ov;
  __nv_bfloat162* o2 = reinterpret_cast<__nv_bfloat162*>(&ov);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 g = __bfloat1622float2(g2[j]);
    const float2 u = __bfloat1622float2(u2[j]);
    const float a = g.x / (1.f + __expf(-g.x)) * u.x;
    const float b = g.y / (1.f + __expf(-g.y)) * u.y;
    o2[j] = __floats2bfloat162_rn(a, b);
  }
  *reinterpret_cast<uint4*>(out + m * (N1 / 2) + 8 * q) = ov;
}

struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~LtPlan() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

Model parseModel(const std::string& s) {
  if (s == "gpt3") return Model::GPT3;
  if (s == "llama") return Model::LLaMA;
  bad("unknown model '" + s + "' (gpt3 or llama)");
}
Variant parseVariant(const std::string& s) {
  for (Variant v : {Variant::Stream, Variant::Pdl, Variant::RowSync, Variant::TileSync, Variant::Cublas})
    if (s == toString(v)) return v;
  bad("unknown variant '" + s + "' (stream, pdl, rowsync, tilesync or cublas)");
}

struct Mlp::Impl {
  Model model;
  Dims d;
  int64_t maxM;
  int sms = 0;
  cublasLtHandle_t lt = nullptr;
  void* ws = nullptr;
  size_t wsBytes = size_t(32) << 20;
  void* scratch = nullptr;  // LLaMA cuBLAS: GEMM1 output [maxM, N1]
  std::map<std::tuple<int64_t, int, int>, std::unique_ptr<detail::SyncedPair>> pairs;
  std::map<std::pair<int64_t, int>, std::unique_ptr<LtPlan>> lt1, lt2;

  bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaOk(cudaStreamIsCapturing(s, &st), "cudaStreamIsCapturing");
    return st != cudaStreamCaptureStatusNone;
  }

  void checkM(int64_t M) {
    if (M < 1 || M > maxM) bad("M = " + std::to_string(M) + " outside [1, " + std::to_string(maxM) + "]");
  }

  LtPlan* ltPlan(int64_t M, int which, bool create) {
    auto& tab = which == 1 ? lt1 : lt2;
    auto it = tab.find({M, 0});
    if (it != tab.end()) return it->second.get();
    if (!create) return nullptr;
    const int64_t N = which == 1 ? d.N1 : d.N2, K = which == 1 ? d.K1 : d.K2;
    auto p = std::make_unique<LtPlan>();
    ltOk(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    ltOk(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof(tA)), "set TRANSA");
    ltOk(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof(tB)), "set TRANSB");
    if (which == 1 && model == Model::GPT3) {
      cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_GELU;
      ltOk(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)), "set EPILOGUE");
    }
    ltOk(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, K, N, K), "layout W");
    ltOk(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, K, M, K), "layout X");
    ltOk(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, N, M, N), "layout C");
    cublasLtMatmulPreference_t pref;
    ltOk(cublasLtMatmulPreferenceCreate(&pref), "preference");
    ltOk(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes)),
         "preference workspace");
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    ltOk(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found), "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0) bad("cuBLASLt found no algorithm");
    p->algo = res.algo;
    LtPlan* raw = p.get();
    tab[{M, 0}] = std::move(p);
    return raw;
  }

  void ltRun(LtPlan* p, const void* W, const void* A, void* C, cudaStream_t s) {
    const float one = 1.f, zero = 0.f;
    ltOk(cublasLtMatmul(lt, p->op, &one, W, p->la, A, p->lb, &zero, C, p->lc, C, p->lc, &p->algo, ws, wsBytes, s),
         "cublasLtMatmul");
  }

  detail::SyncedPair* pair(int64_t M, Variant v, Order o, bool create) {
    const auto key = std::make_tuple(M, int(v), int(resolveOrder(v, o)));
    auto it = pairs.find(key);
    if (it != pairs.end()) return it->second.get();
    if (!create) return nullptr;
    const PairPlan plan = planPair(model, M, v, o, sms);
    std::unique_ptr<detail::SyncedPair> p;
    if (v == Variant::Pdl) p = detail::makeWholeSyncPair(plan);
    else if (v == Variant::RowSync) p = detail::makeRowSyncPair(plan);
    else p = detail::makeTileSyncPair(plan);
    detail::SyncedPair* raw = p.get();
    pairs[key] = std::move(p);
    return raw;
  }

  void prepare(int64_t M, Variant v, Order o) {
    checkM(M);
    if (v == Variant::Pdl || v == Variant::RowSync || v == Variant::TileSync) pair(M, v, o, true);
    if (v == Variant::Cublas) {
      ltPlan(M, 1, true);
      ltPlan(M, 2, true);
    }
  }

  void need(int64_t M, Variant v, Order o, cudaStream_t s) {
    const bool have = (v == Variant::Stream) || (v == Variant::Cublas ? ltPlan(M, 1, false) && ltPlan(M, 2, false)
                                                                       : pair(M, v, o, false) != nullptr);
    if (have) return;
    if (capturing(s))
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp",
                          std::string("call prepare(M, ") + toString(v) + ") before capturing run() in a CUDA graph");
    prepare(M, v, o);
  }

  cusync_gemm::GemmArgs args(int which, int64_t M, const Buffers& b) const {
    cusync_gemm::GemmArgs a;
    a.M = M;
    if (which == 1) {
      a.N = d.N1, a.K = d.K1, a.A = b.X, a.B = b.W1, a.C = b.H, a.trace = b.trace1;
      a.epilogue = model == Model::GPT3 ? cusync_gemm::Epilogue::Gelu : cusync_gemm::Epilogue::SwiGLU;
    } else {
      a.N = d.N2, a.K = d.K2, a.A = b.H, a.B = b.W2, a.C = b.Y, a.trace = b.trace2;
    }
    return a;
  }

  void cublas1(int64_t M, const Buffers& b, cudaStream_t s) {
    LtPlan* p = ltPlan(M, 1, false);
    if (model == Model::GPT3) {
      ltRun(p, b.W1, b.X, b.H, s);
      return;
    }
    ltRun(p, b.W1, b.X, scratch, s);
    const int64_t threads = M * (d.N1 / 16);
    swigluKernel<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, s>>>(
        static_cast<const __nv_bfloat16*>(scratch), static_cast<__nv_bfloat16*>(b.H), M, d.N1);
    cudaOk(cudaGetLastError(), "swiglu kernel launch");
  }
};

Mlp::Mlp(Model model, int64_t maxM) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.model = model;
  m.d = dims(model);
  m.maxM = maxM;
  if (maxM < 1) bad("maxM must be positive");
  int dev = 0;
  cudaOk(cudaGetDevice(&dev), "cudaGetDevice");
  cudaOk(cudaDeviceGetAttribute(&m.sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  ltOk(cublasLtCreate(&m.lt), "cublasLtCreate");
  cudaOk(cudaMalloc(&m.ws, m.wsBytes), "cudaMalloc(cuBLAS workspace)");
  if (model == Model::LLaMA) cudaOk(cudaMalloc(&m.scratch, size_t(maxM) * m.d.N1 * 2), "cudaMalloc(scratch)");
}

Mlp::~Mlp() {
  if (!impl_) return;
  impl_->pairs.clear();
  impl_->lt1.clear();
  impl_->lt2.clear();
  if (impl_->lt) cublasLtDestroy(impl_->lt);
  cudaFree(impl_->ws);
  cudaFree(impl_->scratch);
}

Model Mlp::model() const { return impl_->model; }
int64_t Mlp::maxM() const { return impl_->maxM; }

void Mlp::prepare(int64_t M, Variant v, Order o) { impl_->prepare(M, v, o); }

void Mlp::run(int64_t M, const Buffers& b, Variant v, cudaStream_t s, Order o, bool pdl) {
  Impl& m = *impl_;
  m.checkM(M);
  if (!b.X || !b.W1 || !b.H || !b.W2 || !b.Y) bad("null buffer");
  m.need(M, v, o, s);
  switch (v) {
    case Variant::Stream:
      cusync_gemm::gemm(m.args(1, M, b), s);
      cusync_gemm::gemm(m.args(2, M, b), s);
      return;
    case Variant::Cublas:
      m.cublas1(M, b, s);
      m.ltRun(m.ltPlan(M, 2, false), b.W2, b.H, b.Y, s);
      return;
    default:
      m.pair(M, v, o, false)->launch(b, s, pdl ? cusync::LaunchMode::Pdl : cusync::LaunchMode::Serial);
      return;
  }
}

void Mlp::gemm1(int64_t M, const Buffers& b, cudaStream_t s) {
  impl_->checkM(M);
  cusync_gemm::gemm(impl_->args(1, M, b), s);
}
void Mlp::gemm2(int64_t M, const Buffers& b, cudaStream_t s) {
  impl_->checkM(M);
  cusync_gemm::gemm(impl_->args(2, M, b), s);
}
void Mlp::cublasGemm1(int64_t M, const Buffers& b, cudaStream_t s) {
  impl_->need(M, Variant::Cublas, Order::Auto, s);
  impl_->cublas1(M, b, s);
}
void Mlp::cublasGemm2(int64_t M, const Buffers& b, cudaStream_t s) {
  impl_->need(M, Variant::Cublas, Order::Auto, s);
  impl_->ltRun(impl_->ltPlan(M, 2, false), b.W2, b.H, b.Y, s);
}

std::string Mlp::configs(int64_t M) const {
  const PairPlan p = planPair(impl_->model, M, Variant::TileSync, Order::Auto, impl_->sms);
  return std::string(cusync_gemm::toString(p.g1.args.config)) + "/" + cusync_gemm::toString(p.g2.args.config);
}

}  // namespace cusync_mlp
