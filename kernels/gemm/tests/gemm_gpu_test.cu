// GPU correctness of the Hopper GEMM: every configuration x epilogue x B
// layout x dtype at ragged M, fresh random data, poisoned outputs, against a
// naive fp32 GPU reference with the epilogue applied on the host in double.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cusync/policies.h"
#include "cusync/stage.h"
#include "kernels/gemm/gemm.h"
#include "kernels/testing/require_hopper.h"
#include "kernels/gemm/gemm_staged.cuh"

using namespace cusync_gemm;

namespace {


#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

uint16_t toBits(float f, DType t) {
  if (t == DType::BF16) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    uint16_t u;
    std::memcpy(&u, &b, 2);
    return u;
  }
  __half h = __float2half_rn(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float fromBits(uint16_t u, DType t) {
  if (t == DType::BF16) {
    __nv_bfloat16 b;
    std::memcpy(&b, &u, 2);
    return __bfloat162float(b);
  }
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

template <class T>
__device__ float ld(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(p[i]);
  else return __half2float(p[i]);
}

template <class T>
__global__ void refGemm(const T* A, const T* B, float* D, int M, int N, int K, int kn) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y;
  if (n >= N || m >= M) return;
  float s = 0.f;
  for (int k = 0; k < K; ++k) s += ld(A, (int64_t)m * K + k) * ld(B, kn ? (int64_t)k * N + n : (int64_t)n * K + k);
  D[(int64_t)m * N + n] = s;
}

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { cudaMalloc(&p, bytes); }
  ~Dev() { cudaFree(p); }
};

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double silu(double x) { return x / (1 + std::exp(-x)); }

struct Case {
  DType dt;
  BLayout bl;
  TileConfig cfg;
  Epilogue epi;
  int splitK = 0;
};

std::mt19937& rng() {
  static std::mt19937 g(12345);
  return g;
}

void runCase(const Case& c, int M, int N, int K, bool withBias) {
  const int nOut = c.epi == Epilogue::SwiGLU ? N / 2 : N;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K), hB((size_t)N * K), hBias(N), hRes((size_t)M * N);
  std::vector<float> fA(hA.size()), fB(hB.size()), fBias(N), fRes(hRes.size());
  auto fill = [&](std::vector<uint16_t>& h, std::vector<float>& f) {
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = toBits(U(rng()), c.dt);
      f[i] = fromBits(h[i], c.dt);
    }
  };
  fill(hA, fA);
  fill(hB, fB);
  fill(hBias, fBias);
  fill(hRes, fRes);
  const int guardRows = 3;
  Dev dA(hA.size() * 2), dB(hB.size() * 2), dBias(N * 2), dRes(hRes.size() * 2);
  Dev dC((size_t)(M + guardRows) * nOut * 2), dD((size_t)M * N * 4);
  ASSERT_EQ(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dB.p, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dBias.p, hBias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dRes.p, hRes.data(), hRes.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dC.p, 0xFF, (size_t)(M + guardRows) * nOut * 2), cudaSuccess);  // NaN poison

  GemmArgs a;
  a.M = M, a.N = N, a.K = K, a.dtype = c.dt, a.bLayout = c.bl, a.A = dA.p, a.B = dB.p, a.C = dC.p;
  a.epilogue = c.epi;
  a.bias = (withBias || c.epi == Epilogue::Bias) ? dBias.p : nullptr;
  a.residual = c.epi == Epilogue::Residual ? dRes.p : nullptr;
  a.config = c.cfg;
  a.splitK = c.splitK;
  ASSERT_NO_THROW(gemm(a, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  dim3 rg((N + 127) / 128, M);
  if (c.dt == DType::BF16)
    refGemm<<<rg, 128>>>((const __nv_bfloat16*)dA.p, (const __nv_bfloat16*)dB.p, (float*)dD.p, M, N, K, c.bl == BLayout::KN);
  else
    refGemm<<<rg, 128>>>((const __half*)dA.p, (const __half*)dB.p, (float*)dD.p, M, N, K, c.bl == BLayout::KN);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> D((size_t)M * N);
  std::vector<uint16_t> hC((size_t)(M + guardRows) * nOut);
  ASSERT_EQ(cudaMemcpy(D.data(), dD.p, D.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hC.data(), dC.p, hC.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  const bool useBias = a.bias != nullptr;
  double num = 0, den = 0, maxRef = 0;
  std::vector<double> ref((size_t)M * nOut);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < nOut; ++j) {
      double v;
      if (c.epi == Epilogue::SwiGLU) {
        const int gc = 16 * (j / 8) + j % 8, uc = gc + 8;
        const double g = D[(size_t)m * N + gc] + (useBias ? fBias[gc] : 0);
        const double u = D[(size_t)m * N + uc] + (useBias ? fBias[uc] : 0);
        v = silu(g) * u;
      } else {
        v = D[(size_t)m * N + j] + (useBias && c.epi != Epilogue::Identity ? fBias[j] : 0);
        if (c.epi == Epilogue::Gelu) v = gelu(v);
        if (c.epi == Epilogue::Residual) v += fRes[(size_t)m * N + j];
      }
      ref[(size_t)m * nOut + j] = v;
      maxRef = std::max(maxRef, std::fabs(v));
    }
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = fromBits(hC[i], c.dt);
    const double d = o - ref[i];
    if (!std::isfinite(o) || std::fabs(d) > 0.02 * maxRef + 0.02 * std::fabs(ref[i])) {
      if (bad++ < 5)
        ADD_FAILURE() << "element (" << i / nOut << "," << i % nOut << ") got " << o << " want " << ref[i];
    }
    num += d * d;
    den += ref[i] * ref[i];
  }
  for (size_t i = ref.size(); i < hC.size(); ++i)
    if (hC[i] != 0xFFFF) {
      ADD_FAILURE() << "guard row element " << i - ref.size() << " was overwritten";
      break;
    }
  const double rel = std::sqrt(num / std::max(den, 1e-30));
  EXPECT_EQ(bad, 0);
  EXPECT_LT(rel, c.dt == DType::BF16 ? 1e-2 : 2e-3) << "relative error";
}

std::string caseName(const Case& c) {
  return std::string(c.dt == DType::BF16 ? "bf16" : "fp16") + "_" + (c.bl == BLayout::NK ? "NK" : "KN") + "_" +
         [&] {
           std::string n = toString(c.cfg);
           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
           return n;
         }() + "_" +
         toString(c.epi);
}

class GemmGpu : public ::testing::TestWithParam<Case> {};

TEST_P(GemmGpu, RaggedM) {
  REQUIRE_HOPPER();
  for (int M : {1, 17, 100, 1000}) {
    SCOPED_TRACE("M=" + std::to_string(M));
    runCase(GetParam(), M, 400, 328, /*withBias=*/GetParam().epi != Epilogue::Identity);
    if (HasFatalFailure() || HasFailure()) return;
  }
}

std::vector<Case> allCases() {
  std::vector<Case> v;
  for (DType dt : {DType::BF16, DType::FP16})
    for (BLayout bl : {BLayout::NK, BLayout::KN})
      for (TileConfig cfg : kAllTileConfigs)
        for (Epilogue e : {Epilogue::Identity, Epilogue::Bias, Epilogue::Gelu, Epilogue::SwiGLU, Epilogue::Residual})
          v.push_back({dt, bl, cfg, e, isTailSplitConfig(cfg) ? 3 : 0});
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, GemmGpu, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return caseName(i.param); });

TEST(GemmGpuMisc, AutoConfigLargeK) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::Auto, Epilogue::Identity}, 300, 1024, 4096, false);
}

TEST(GemmGpuMisc, ResidualWithoutBias) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x128, Epilogue::Residual}, 130, 256, 64, false);
}

// A producer GEMM posting through Out and a consumer GEMM waiting on it
// (In), three runs in a row on one stream: the semaphores count runs, the
// consumer's waits pass, and the consumer reads the producer's output
// correctly (bit for bit against the same chain without sync).
template <class Pol>
void pairThreeRuns(TileConfig c1, TileConfig c2, int split1, int split2, uint32_t postsPerTile, int consumerOpts = 0) {
  using namespace cusync::policy;
  const int M = 300, N1 = 512, K1 = 256, N2 = 256;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K1), hW1((size_t)N1 * K1), hW2((size_t)N2 * N1);
  for (auto& x : hA) x = toBits(U(rng()), DType::BF16);
  for (auto& x : hW1) x = toBits(U(rng()) * 0.1f, DType::BF16);
  for (auto& x : hW2) x = toBits(U(rng()) * 0.1f, DType::BF16);
  Dev dA(hA.size() * 2), dW1(hW1.size() * 2), dW2(hW2.size() * 2), dX((size_t)M * N1 * 2), dY((size_t)M * N2 * 2),
      dY2((size_t)M * N2 * 2), dX2((size_t)M * N1 * 2);
  CK(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dW1.p, hW1.data(), hW1.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dW2.p, hW2.data(), hW2.size() * 2, cudaMemcpyHostToDevice));
  GemmArgs g1;
  g1.M = M, g1.N = N1, g1.K = K1, g1.A = dA.p, g1.B = dW1.p, g1.C = dX.p, g1.config = c1, g1.splitK = split1;
  GemmArgs g2;
  g2.M = M, g2.N = N2, g2.K = N1, g2.A = dX.p, g2.B = dW2.p, g2.C = dY.p, g2.config = c2, g2.splitK = split2;
  cusync::Stage<NoSync, Pol> s1("gemm1", stageGrid(g1, g1.config), stageTile(g1.config));
  cusync::Stage<Pol, NoSync> s2("gemm2", stageGrid(g2, g2.config), stageTile(g2.config), Pol{}, NoSync{}, consumerOpts);
  cusync::pair(s1, s2);
  s1.setOrder(GroupedOrder{8});
  for (int run = 0; run < 3; ++run) {
    CK(cudaMemset(dY.p, 0xFF, (size_t)M * N2 * 2));
    ASSERT_NO_THROW(gemm(g1, s1, nullptr));
    ASSERT_NO_THROW(gemm(g2, s2, nullptr));
    CK(cudaDeviceSynchronize());
  }
  std::vector<uint32_t> sems(s1.semaphoreCount());
  CK(cudaMemcpy(sems.data(), s1.semaphores(), sems.size() * 4, cudaMemcpyDeviceToHost));
  for (uint32_t s : sems) EXPECT_EQ(s, 3u * postsPerTile);
  // Same chain without sync must match bit for bit.
  GemmArgs g1b = g1, g2b = g2;
  g1b.C = dX2.p;
  g2b.A = dX2.p;
  g2b.C = dY2.p;
  ASSERT_NO_THROW(gemm(g1b, nullptr));
  ASSERT_NO_THROW(gemm(g2b, nullptr));
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> y((size_t)M * N2), y2((size_t)M * N2);
  CK(cudaMemcpy(y.data(), dY.p, y.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y2.data(), dY2.p, y2.size() * 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(y, y2);
}

TEST(GemmGpuHooks, RowSyncPairThreeRuns) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x128, TileConfig::T128x128, 0, 0,
                                         stageGrid(probe, TileConfig::T128x128).x);
}

// The consumer loads B before each wait (ReorderTileLoads) instead of after.
TEST(GemmGpuHooks, TileSyncPairReorderTileLoads) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T128x128, TileConfig::T128x256, 0, 0, 1, cusync::ReorderTileLoads);
}

// Split K on both sides: each producer tile is posted once however many
// splits computed it; consumer splits wait with walkStart at their first k.
TEST(GemmGpuHooks, RowSyncPairSplitK) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 3, 5,
                                         stageGrid(probe, TileConfig::T64x128SplitK).x);
}

TEST(GemmGpuHooks, TileSyncPairSplitK) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 2, 4, 1);
}

TEST(GemmGpuHooks, RowSyncPairSplitK256) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x256SplitK, TileConfig::T64x256SplitK, 4, 3,
                                         stageGrid(probe, TileConfig::T64x256SplitK).x);
}

// Tail split on both sides: each producer tile is posted once however many
// parts computed it; consumer parts wait from their first k.
TEST(GemmGpuHooks, RowSyncPairSplitTail) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256SplitTail, TileConfig::T128x256SplitTail, 3, 2,
                                         stageGrid(probe, TileConfig::T128x256SplitTail).x);
}

TEST(GemmGpuHooks, RowSyncPairSplitTail192) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x192SplitTail, TileConfig::T128x192, 2, 0,
                                         stageGrid(probe, TileConfig::T128x192SplitTail).x);
}

// 192-wide producer tiles against 64-wide consumer k-blocks: some k-blocks
// straddle two producer tiles, and TileSync must wait for both.
TEST(GemmGpuHooks, TileSyncPair192Straddles) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T128x192, TileConfig::T128x128, 0, 0, 1, cusync::ReorderTileLoads);
}

// Cluster pairs (B multicast) on both sides: 256-row stage tiles, the first
// block of a cluster posts once the second has stored its rows.
TEST(GemmGpuHooks, RowSyncPairClusters) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256Pair, TileConfig::T128x192Pair, 0, 0,
                                         stageGrid(probe, TileConfig::T128x256Pair).x);
}

TEST(GemmGpuHooks, TileSyncPairClusterConsumer) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T128x192, TileConfig::T128x256Pair, 0, 0, 1, cusync::ReorderTileLoads);
}

TEST(GemmGpuHooks, TileSyncPairSplitTailProducerOnly) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T128x256SplitTail, TileConfig::T128x256, 4, 0, 1);
}

TEST(GemmGpuHooks, TileSyncPairSplitKConsumerOnly) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::TileSync>(TileConfig::T128x128, TileConfig::T64x128SplitK, 0, 3, 1);
}

// Explicit split counts (1, 3, every k-block) at ragged M.
TEST(GemmGpuSplitK, SplitOverrides) {
  REQUIRE_HOPPER();
  for (int s : {1, 3, 6, 100})
    for (int M : {1, 17, 100, 1000}) {
      SCOPED_TRACE("splitK=" + std::to_string(s) + " M=" + std::to_string(M));
      runCase({DType::BF16, BLayout::NK, TileConfig::T64x128SplitK, Epilogue::Gelu, s}, M, 400, 328, true);
      runCase({DType::FP16, BLayout::KN, TileConfig::T64x128SplitK, Epilogue::Residual, s}, M, 400, 328, true);
      runCase({DType::BF16, BLayout::KN, TileConfig::T64x256SplitK, Epilogue::SwiGLU, s}, M, 400, 328, true);
      runCase({DType::FP16, BLayout::NK, TileConfig::T64x256SplitK, Epilogue::Bias, s}, M, 400, 328, true);
      if (HasFatalFailure() || HasFailure()) return;
    }
}

TEST(GemmGpuSplitK, LargeKAuto) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::Auto, Epilogue::Bias}, 64, 1024, 8192, true);
  runCase({DType::BF16, BLayout::NK, TileConfig::T64x128SplitK, Epilogue::SwiGLU, 7}, 200, 1024, 4096, true);
}

// Tail split: uneven cuts of the k-blocks, one k-block per part, and (on a
// 132-SM GPU) a whole wave of unsplit tiles before the split ones.
TEST(GemmGpuSplitTail, Cuts) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256SplitTail, Epilogue::Gelu, 7}, 300, 1024, 4096, true);
  runCase({DType::BF16, BLayout::KN, TileConfig::T128x256SplitTail, Epilogue::SwiGLU, 5}, 1000, 1280, 1600, true);
  runCase({DType::FP16, BLayout::NK, TileConfig::T128x256SplitTail, Epilogue::Residual, 8}, 5, 256, 512, true);
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256SplitTail, Epilogue::Bias, 3}, 1100, 4096, 256, true);
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x192SplitTail, Epilogue::Gelu, 6}, 300, 1000, 4096, true);
  runCase({DType::FP16, BLayout::KN, TileConfig::T128x192SplitTail, Epilogue::SwiGLU, 4}, 700, 1536, 1024, true);
}

// Wide tiles at ragged N and M with long K: every column of the last,
// part-filled tile and every row of the last band, per configuration.
TEST(GemmGpuMisc, RaggedWideTiles) {
  REQUIRE_HOPPER();
  for (TileConfig c : {TileConfig::T128x192, TileConfig::T128x256, TileConfig::T128x128, TileConfig::T128x256Pair,
                       TileConfig::T128x192Pair})
    for (Epilogue e : {Epilogue::Identity, Epilogue::SwiGLU, Epilogue::Residual}) {
      SCOPED_TRACE(std::string(toString(c)) + " " + toString(e));
      runCase({DType::BF16, BLayout::NK, c, e}, 777, 1200, 2048, true);
      if (HasFailure()) return;
    }
}

// The reductions add partials in split order: repeated runs are bit-identical.
TEST(GemmGpuSplitK, Deterministic) {
  REQUIRE_HOPPER();
  const int M = 100, N = 512, K = 2048;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K), hB((size_t)N * K);
  for (auto& x : hA) x = toBits(U(rng()), DType::BF16);
  for (auto& x : hB) x = toBits(U(rng()), DType::BF16);
  Dev dA(hA.size() * 2), dB(hB.size() * 2), dC((size_t)M * N * 2);
  CK(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB.p, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
  for (TileConfig cfg : {TileConfig::T64x128SplitK, TileConfig::T128x256SplitTail}) {
    SCOPED_TRACE(toString(cfg));
    GemmArgs a;
    a.M = M, a.N = N, a.K = K, a.A = dA.p, a.B = dB.p, a.C = dC.p, a.config = cfg;
    a.splitK = cfg == TileConfig::T64x128SplitK ? 8 : 4;
    std::vector<uint16_t> first((size_t)M * N), again((size_t)M * N);
    for (int r = 0; r < 5; ++r) {
      CK(cudaMemset(dC.p, 0xFF, (size_t)M * N * 2));
      ASSERT_NO_THROW(gemm(a, nullptr));
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy((r == 0 ? first : again).data(), dC.p, first.size() * 2, cudaMemcpyDeviceToHost));
      if (r > 0) EXPECT_EQ(first, again) << "run " << r;
    }
  }
}

}  // namespace
