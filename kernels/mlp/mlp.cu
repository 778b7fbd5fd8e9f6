// Host side of the MLP pipelines (mlp.h): variant dispatch, the cuBLASLt
// pipelines and their SwiGLU kernel.
#include "kernels/mlp/mlp.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "cusync/error.h"
#include "cusync/memory.h"
#include "kernels/baseline/cublaslt_gemm.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp_plan.h"
#include "kernels/mlp/synced.h"

namespace cusync_mlp {

namespace {

[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp", what); }

void cudaOk(cudaError_t e, const char* what) { cusync::cudaCheck(e, what, "mlp"); }

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

}  // namespace

void swiglu(const void* gateUp, void* out, int64_t M, int64_t N1, cudaStream_t stream) {
  if (M < 1 || N1 < 16 || N1 % 16 != 0)
    bad("swiglu: M = " + std::to_string(M) + ", N1 = " + std::to_string(N1) + " (M >= 1, N1 a multiple of 16)");
  if (reinterpret_cast<uintptr_t>(gateUp) % 16 != 0 || reinterpret_cast<uintptr_t>(out) % 16 != 0)
    bad("swiglu: pointers must be 16-byte aligned");
  const int64_t threads = M * (N1 / 16);
  swigluKernel<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(gateUp), static_cast<__nv_bfloat16*>(out), M, N1);
  cudaOk(cudaGetLastError(), "swiglu kernel launch");
}

Model parseModel(const std::string& s) {
  if (s == "gpt3") return Model::GPT3;
  if (s == "llama") return Model::LLaMA;
  bad("unknown model '" + s + "' (gpt3 or llama)");
}
Variant parseVariant(const std::string& s) {
  for (Variant v : {Variant::NoSync, Variant::Pdl, Variant::RowSync, Variant::TileSync, Variant::Fused, Variant::Cublas})
    if (s == toString(v)) return v;
  bad("unknown variant '" + s + "' (nosync, pdl, rowsync, tilesync, fused or cublas)");
}

struct Mlp::Impl {
  Model model;
  Dims d;
  int64_t maxM;
  int sms = 0;
  // The same workspace cuBLASLt had in every measurement of this pipeline.
  std::unique_ptr<cusync_baseline::LtContext> lt;
  void* scratch = nullptr;  // LLaMA cuBLAS: GEMM1 output [maxM, N1]
  std::map<std::tuple<int64_t, int, int>, std::unique_ptr<detail::SyncedPair>> pairs;
  std::map<int64_t, std::unique_ptr<cusync_baseline::LtGemm>> lt1, lt2;

  bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaOk(cudaStreamIsCapturing(s, &st), "cudaStreamIsCapturing");
    return st != cudaStreamCaptureStatusNone;
  }

  void checkM(int64_t M) {
    if (M < 1 || M > maxM) bad("M = " + std::to_string(M) + " outside [1, " + std::to_string(maxM) + "]");
  }

  // cuBLASLt's plan of GEMM `which` (GPT-3's GEMM1 with its GELU epilogue).
  cusync_baseline::LtGemm* ltPlan(int64_t M, int which, bool create) {
    auto& tab = which == 1 ? lt1 : lt2;
    auto it = tab.find(M);
    if (it != tab.end()) return it->second.get();
    if (!create) return nullptr;
    const int64_t N = which == 1 ? d.N1 : d.N2, K = which == 1 ? d.K1 : d.K2;
    const auto e = which == 1 && model == Model::GPT3 ? cusync_baseline::LtEpilogue::Gelu : cusync_baseline::LtEpilogue::None;
    return (tab[M] = std::make_unique<cusync_baseline::LtGemm>(*lt, M, N, K, e)).get();
  }

  detail::SyncedPair* pair(int64_t M, Variant v, Order o, bool create) {
    const auto key = std::make_tuple(M, int(v), int(resolveOrder(v, o)));
    auto it = pairs.find(key);
    if (it != pairs.end()) return it->second.get();
    if (!create) return nullptr;
    const PairPlan plan = v == Variant::Fused ? planFused(model, M, sms) : planPair(model, M, v, o, sms);
    std::unique_ptr<detail::SyncedPair> p;
    if (v == Variant::Fused) p = detail::makeFusedPair(plan);
    else if (v == Variant::Pdl) p = detail::makeSyncedPair<WholeSync>(plan);
    else if (v == Variant::RowSync) p = detail::makeSyncedPair<cusync::policy::RowSync>(plan);
    else p = detail::makeSyncedPair<cusync::policy::TileSync>(plan);
    detail::SyncedPair* raw = p.get();
    pairs[key] = std::move(p);
    return raw;
  }

  void prepare(int64_t M, Variant v, Order o) {
    checkM(M);
    if (v == Variant::Pdl || v == Variant::RowSync || v == Variant::TileSync || v == Variant::Fused) pair(M, v, o, true);
    if (v == Variant::Cublas) {
      ltPlan(M, 1, true);
      ltPlan(M, 2, true);
    }
  }

  void need(int64_t M, Variant v, Order o, cudaStream_t s) {
    const bool have = (v == Variant::NoSync) || (v == Variant::Cublas ? ltPlan(M, 1, false) && ltPlan(M, 2, false)
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
    const cusync_baseline::LtGemm* p = ltPlan(M, 1, false);
    if (model == Model::GPT3) {
      p->run(b.X, b.W1, b.H, s);
      return;
    }
    p->run(b.X, b.W1, scratch, s);
    swiglu(scratch, b.H, M, d.N1, s);
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
  m.lt = std::make_unique<cusync_baseline::LtContext>(size_t(32) << 20);
  if (model == Model::LLaMA) cudaOk(cudaMalloc(&m.scratch, size_t(maxM) * m.d.N1 * 2), "cudaMalloc(scratch)");
}

Mlp::~Mlp() {
  if (!impl_) return;
  impl_->pairs.clear();
  impl_->lt1.clear();
  impl_->lt2.clear();
  impl_->lt.reset();
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
    case Variant::NoSync:
      cusync_gemm::gemm(m.args(1, M, b), s);
      cusync_gemm::gemm(m.args(2, M, b), s);
      return;
    case Variant::Cublas:
      m.cublas1(M, b, s);
      m.ltPlan(M, 2, false)->run(b.H, b.W2, b.Y, s);
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
  impl_->ltPlan(M, 2, false)->run(b.H, b.W2, b.Y, s);
}

std::string Mlp::configs(int64_t M, Variant v) const {
  if (v == Variant::Cublas) return "cublas";
  const PairPlan p = v == Variant::Fused ? planFused(impl_->model, M, impl_->sms)
                                         : planPair(impl_->model, M, Variant::TileSync, Order::Auto, impl_->sms);
  cusync_gemm::GemmArgs a1 = p.g1.args, a2 = p.g2.args;
  if (v == Variant::NoSync) {
    a1.config = a2.config = cusync_gemm::TileConfig::Auto;
    a1.config = cusync_gemm::resolveConfig(a1, impl_->sms, cusync_gemm::LaunchContext::Standalone);
    a2.config = cusync_gemm::resolveConfig(a2, impl_->sms, cusync_gemm::LaunchContext::Standalone);
  }
  return std::string(cusync_gemm::toString(a1.config)) + "/" + cusync_gemm::toString(a2.config);
}

}  // namespace cusync_mlp
