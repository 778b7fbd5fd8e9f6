// GPU correctness of the Hopper GEMM: every configuration x epilogue x B
// layout x dtype at ragged M, fresh random data, poisoned outputs, against a
// naive fp32 GPU reference with the epilogue applied on the host in double.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/tests/gemm_test_util.h"
#include "kernels/testing/require_hopper.h"

using namespace cusync_gemm;
using namespace gemm_test;

namespace {

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
      for (const TileConfigRow& r : kTileConfigs) {
        if (!runsAsGemm(r.config)) continue;  // the convolution's rows run in conv_gpu_test
        for (Epilogue e : {Epilogue::Identity, Epilogue::Bias, Epilogue::Gelu, Epilogue::SwiGLU, Epilogue::Residual})
          if (e != Epilogue::SwiGLU || supportsSwiGLU(r.config))
            v.push_back({dt, bl, r.config, e, r.schedule == Schedule::TailSplit ? 3 : 0});
      }
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

// Explicit split counts (1, 3, every k-block) at ragged M.
TEST(GemmGpuSplitK, SplitOverrides) {
  REQUIRE_HOPPER();
  for (int s : {1, 3, 6, 100})
    for (int M : {1, 17, 100, 1000}) {
      SCOPED_TRACE("splitK=" + std::to_string(s) + " M=" + std::to_string(M));
      runCase({DType::BF16, BLayout::NK, TileConfig::T64x128SplitK, Epilogue::Gelu, s}, M, 400, 328, true);
      runCase({DType::FP16, BLayout::KN, TileConfig::T64x128SplitK, Epilogue::Residual, s}, M, 400, 328, true);
      runCase({DType::BF16, BLayout::KN, TileConfig::T64x128SplitK, Epilogue::SwiGLU, s}, M, 400, 328, true);
      runCase({DType::FP16, BLayout::NK, TileConfig::T64x128SplitK, Epilogue::Bias, s}, M, 400, 328, true);
      if (HasFatalFailure() || HasFailure()) return;
    }
}

// More than eight parts, all running at once (4 tiles x up to 32 parts fit
// 132 SMs): they share the fixup, parts 0-7 owning a warp slab each and the
// rest only writing theirs.
TEST(GemmGpuSplitK, ManyPartsShareTheFixup) {
  REQUIRE_HOPPER();
  for (int s : {9, 16, 32})
    for (int M : {1, 100}) {
      SCOPED_TRACE("splitK=" + std::to_string(s) + " M=" + std::to_string(M));
      runCase({DType::BF16, BLayout::NK, TileConfig::T64x128SplitK, Epilogue::Bias, s}, M, 256, 4096, true);
      runCase({DType::FP16, BLayout::KN, TileConfig::T64x128SplitK, Epilogue::SwiGLU, s}, M, 256, 4096, true);
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
TEST(GemmGpuTailSplit, Cuts) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256TailSplit, Epilogue::Gelu, 7}, 300, 1024, 4096, true);
  runCase({DType::BF16, BLayout::KN, TileConfig::T128x256TailSplit, Epilogue::SwiGLU, 5}, 1000, 1280, 1600, true);
  runCase({DType::FP16, BLayout::NK, TileConfig::T128x256TailSplit, Epilogue::Residual, 8}, 5, 256, 512, true);
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256TailSplit, Epilogue::Bias, 3}, 1100, 4096, 256, true);
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x192TailSplit, Epilogue::Gelu, 6}, 300, 1000, 4096, true);
  runCase({DType::FP16, BLayout::KN, TileConfig::T128x192TailSplit, Epilogue::SwiGLU, 4}, 700, 1536, 1024, true);
}

// Wide tiles at ragged N and M with long K: every column of the last,
// part-filled tile and every row of the last band, per configuration.
TEST(GemmGpuMisc, RaggedWideTiles) {
  REQUIRE_HOPPER();
  for (TileConfig c : {TileConfig::T128x192, TileConfig::T128x256, TileConfig::T128x128, TileConfig::T128x256Pair,
                       TileConfig::T128x192KCut, TileConfig::T128x256KCut})
    for (Epilogue e : {Epilogue::Identity, Epilogue::SwiGLU, Epilogue::Residual}) {
      SCOPED_TRACE(std::string(toString(c)) + " " + toString(e));
      runCase({DType::BF16, BLayout::NK, c, e}, 777, 1200, 2048, true);
      if (HasFailure()) return;
    }
}

// Several waves of whole tiles (gemm() gives block b tiles b, b + blocks,
// ...: KernelFlags::staticAll), the narrow widths' last columns ragged.
TEST(GemmGpuMisc, SeveralWavesOfTiles) {
  REQUIRE_HOPPER();
  for (TileConfig c : {TileConfig::T128x168, TileConfig::T128x176, TileConfig::T128x144, TileConfig::T128x96,
                       TileConfig::T128x128, TileConfig::T128x192, TileConfig::T128x256})
    for (Epilogue e : {Epilogue::Identity, Epilogue::Gelu}) {
      SCOPED_TRACE(std::string(toString(c)) + " " + toString(e));
      runCase({DType::BF16, BLayout::NK, c, e}, 2000, 3000, 512, e != Epilogue::Identity);
      runCase({DType::FP16, BLayout::KN, c, e}, 1500, 2504, 256, true);
      if (HasFailure()) return;
    }
}

// gemm() starts each block on the tile at its own index and counts later
// tickets from there (KernelFlags::staticFirst). Tile and split schedules count
// tickets differently, so alternating configurations of one shape (same
// grid, same block count) must not share a ticket counter: every run right,
// several rounds in a row.
TEST(GemmGpuMisc, AlternatingConfigsOfOneShape) {
  REQUIRE_HOPPER();
  for (int round = 0; round < 3; ++round)
    for (TileConfig c : {TileConfig::T128x256, TileConfig::T128x256TailSplit, TileConfig::T128x192,
                         TileConfig::T128x192TailSplit, TileConfig::T64x128SplitK, TileConfig::T128x256Pair,
                         TileConfig::T128x192KCut}) {
      SCOPED_TRACE("round " + std::to_string(round) + " " + toString(c));
      runCase({DType::BF16, BLayout::NK, c, Epilogue::Bias, splitsK(c) ? 2 : 0}, 1000, 1280, 1024, true);
      if (HasFailure()) return;
    }
}

// KCut launches at the sizes they are picked for (few tiles, long K): the
// cuts fall inside tiles, a tile can span three groups (k-blocks per group
// under a column's), and several bands share each group.
TEST(GemmGpuKCut, FewTilesLongK) {
  REQUIRE_HOPPER();
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x192KCut, Epilogue::Identity}, 256, 3072, 8192, false);
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256KCut, Epilogue::SwiGLU}, 512, 1536, 4096, true);
  runCase({DType::FP16, BLayout::KN, TileConfig::T128x192KCut, Epilogue::Residual}, 300, 1000, 3000, true);
  runCase({DType::BF16, BLayout::KN, TileConfig::T128x256KCut, Epilogue::Gelu}, 1100, 512, 1024, true);
  // Group counts set by GemmArgs::kCutGroups: 7 groups of 3 bands (cuts
  // inside tiles), and more than fit (clamped to 132 / 3 on an H100).
  runCase({DType::BF16, BLayout::NK, TileConfig::T128x256KCut, Epilogue::Bias, 0, 7}, 300, 1000, 3000, true);
  runCase({DType::FP16, BLayout::NK, TileConfig::T128x192KCut, Epilogue::Identity, 0, 500}, 300, 1000, 3000, false);
}

// The reductions add partials in a fixed order: repeated runs are bit-identical.
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
  for (TileConfig cfg : {TileConfig::T64x128SplitK, TileConfig::T128x256TailSplit, TileConfig::T128x192KCut}) {
    SCOPED_TRACE(toString(cfg));
    GemmArgs a;
    a.M = M, a.N = N, a.K = K, a.A = dA.p, a.B = dB.p, a.C = dC.p, a.config = cfg;
    a.splitK = cfg == TileConfig::T64x128SplitK ? 8 : 4;
    a.kCutGroups = 4;
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

namespace {

// gemm() launches as a programmatic dependent of the previous kernel: a GEMM
// that reads the output of the one before it in the stream must still see
// all of it. The first GEMM is long (K = 8192) and leaves most SMs free, so
// the second one's blocks are resident while it runs; without the grid
// dependency wait they would read the poisoned C1.
TEST(GemmGpuMisc, BackToBackLaunchesSeeTheirInput) {
  REQUIRE_HOPPER();
  const int M = 300, K1 = 8192, N1 = 512, N2 = 384;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K1), hB1((size_t)N1 * K1), hB2((size_t)N2 * N1);
  for (auto& x : hA) x = toBits(U(rng()), DType::BF16);
  for (auto& x : hB1) x = toBits(U(rng()), DType::BF16);
  for (auto& x : hB2) x = toBits(U(rng()), DType::BF16);
  Dev dA(hA.size() * 2), dB1(hB1.size() * 2), dB2(hB2.size() * 2), dC1((size_t)M * N1 * 2), dC2((size_t)M * N2 * 2);
  CK(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB1.p, hB1.data(), hB1.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB2.p, hB2.data(), hB2.size() * 2, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  GemmArgs g1, g2;
  g1.M = M, g1.N = N1, g1.K = K1, g1.A = dA.p, g1.B = dB1.p, g1.C = dC1.p;
  g2.M = M, g2.N = N2, g2.K = N1, g2.A = dC1.p, g2.B = dB2.p, g2.C = dC2.p;
  for (TileConfig c : {TileConfig::Auto, TileConfig::T128x128, TileConfig::T64x128SplitK}) {
    SCOPED_TRACE(toString(c));
    g1.config = g2.config = c;
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaMemsetAsync(dC1.p, 0xFF, (size_t)M * N1 * 2, s));  // NaN poison
      CK(cudaMemsetAsync(dC2.p, 0xFF, (size_t)M * N2 * 2, s));
      gemm(g1, s);
      gemm(g2, s);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(s));
      std::vector<uint16_t> c1((size_t)M * N1), c2((size_t)M * N2);
      CK(cudaMemcpy(c1.data(), dC1.p, c1.size() * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(c2.data(), dC2.p, c2.size() * 2, cudaMemcpyDeviceToHost));
      // C2 against C1 as the device wrote it (in double), on a sample of rows.
      int bad = 0;
      for (int m = 0; m < M && bad < 5; m += 7)
        for (int n = 0; n < N2; ++n) {
          double want = 0, mag = 0;
          for (int k = 0; k < N1; ++k) {
            const double x = fromBits(c1[(size_t)m * N1 + k], DType::BF16) * fromBits(hB2[(size_t)n * N1 + k], DType::BF16);
            want += x, mag += std::fabs(x);
          }
          const double got = fromBits(c2[(size_t)m * N2 + n], DType::BF16);
          if (!(std::fabs(got - want) <= 1e-2 * mag + 1e-3)) {
            ADD_FAILURE() << "rep " << rep << " C2[" << m << "][" << n << "] = " << got << ", want " << want;
            if (++bad >= 5) break;
          }
        }
      // And C1 itself is finite everywhere (its own launch finished).
      for (size_t i = 0; i < c1.size(); i += 97)
        ASSERT_TRUE(std::isfinite(fromBits(c1[i], DType::BF16))) << "C1[" << i << "] not written";
      if (HasFailure()) break;
    }
  }
  CK(cudaStreamDestroy(s));
}

}  // namespace
