// CPU tests of the GEMM's configuration heuristic and argument checks: no GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cusync/error.h"
#include "cusync/tile_order.h"
#include "kernels/gemm/schedule/k_cut_range.h"
#include "kernels/gemm/schedule/static_tiles.h"
#include "kernels/gemm/gemm.h"

using namespace cusync_gemm;

namespace {

alignas(16) unsigned char buf[4096];

GemmArgs good() {
  GemmArgs a;
  a.M = 100, a.N = 256, a.K = 64;
  a.A = buf, a.B = buf + 1024, a.C = buf + 2048;
  return a;
}

// The heuristic's choices, as a stage of a pipeline and as a launch alone.
TileConfig stageChoice(int64_t M, int64_t N, int64_t K, int sms) {
  GemmArgs a;
  a.M = M, a.N = N, a.K = K;
  return resolveConfig(a, sms, LaunchContext::Stage);
}
TileConfig stageChoice(const GemmArgs& a, int sms) { return resolveConfig(a, sms, LaunchContext::Stage); }
TileConfig standaloneChoice(const GemmArgs& a, int sms) { return resolveConfig(a, sms, LaunchContext::Standalone); }
bool isTailSplit(TileConfig c) { return scheduleOf(c) == Schedule::TailSplit; }
bool isKCut(TileConfig c) { return scheduleOf(c) == Schedule::KCut; }
bool isPair(TileConfig c) { return scheduleOf(c) == Schedule::ClusterPair; }

void expectBad(const GemmArgs& a, const std::string& needle) {
  try {
    checkArgs(a);
    ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GemmArgs, GoodArgsPass) { EXPECT_NO_THROW(checkArgs(good())); }

TEST(GemmArgs, BadShapes) {
  GemmArgs a = good();
  a.M = 0;
  expectBad(a, "M = 0");
  a = good(), a.N = 100;
  expectBad(a, "N = 100");
  a = good(), a.K = 12;
  expectBad(a, "K = 12");
  a = good(), a.N = 264, a.epilogue = Epilogue::SwiGLU;
  expectBad(a, "SwiGLU needs N a multiple of 16");
}

TEST(GemmArgs, MisalignedPointers) {
  GemmArgs a = good();
  a.A = buf + 8;
  expectBad(a, "A is not 16-byte aligned");
  a = good(), a.B = buf + 2;
  expectBad(a, "B is not 16-byte aligned");
  a = good(), a.C = buf + 4;
  expectBad(a, "C is not 16-byte aligned");
  a = good(), a.epilogue = Epilogue::Bias, a.bias = buf + 6;
  expectBad(a, "bias is not 16-byte aligned");
  a = good(), a.epilogue = Epilogue::Residual, a.residual = buf + 2;
  expectBad(a, "residual is not 16-byte aligned");
}

TEST(GemmArgs, MissingOperands) {
  GemmArgs a = good();
  a.A = nullptr;
  expectBad(a, "non-null");
  a = good(), a.epilogue = Epilogue::Bias;
  expectBad(a, "needs a bias pointer");
  a = good(), a.epilogue = Epilogue::Residual;
  expectBad(a, "needs a residual pointer");
}

TEST(GemmConfig, HeuristicPicksImplementedConfigs) {
  for (int64_t M : {1, 17, 64, 256, 512, 1024, 2048, 4096, 10000})
    for (int64_t N : {256, 1024, 4608, 6144, 12288})
      for (int sms : {1, 78, 132}) {
        const TileConfig c = stageChoice(M, N, 4096, sms);
        EXPECT_NE(c, TileConfig::Auto);
        GemmArgs a = good();
        a.M = M, a.N = N, a.config = c;
        EXPECT_NO_THROW(checkArgs(a)) << toString(c);
      }
}

TEST(GemmConfig, LargeShapesUseWideTiles) {
  // 32 x 24 = 768 tiles of 128x256: 5.8 waves; splitting the last one in two
  // does not shorten it, and pairs sharing B by multicast are cheaper still.
  EXPECT_EQ(stageChoice(4096, 6144, 12288, 132), TileConfig::T128x256Pair);
  // 16 x 48 = 768 tiles.
  EXPECT_EQ(stageChoice(2048, 12288, 6144, 132), TileConfig::T128x256Pair);
}

TEST(GemmConfig, NarrowTilesFillWaves) {
  // gpt3-mlp1 M = 512: 4 x 32 = 128 tiles of 128x192 fill 97% of 132 SMs,
  // where 96 tiles of 128x256 fill 73% (measured 1.02x against 1.19x cuBLAS).
  EXPECT_EQ(stageChoice(512, 6144, 12288, 132), TileConfig::T128x192);
  // llama-qkv M = 1024: 128 tiles of 128x192 against 96 of 128x256.
  EXPECT_EQ(stageChoice(1024, 3072, 8192, 132), TileConfig::T128x192);
  EXPECT_LT(estimatedCost(512, 6144, 12288, 132, TileConfig::T128x192),
            estimatedCost(512, 6144, 12288, 132, TileConfig::T128x256));
  EXPECT_THROW(estimatedCost(512, 6144, 12288, 132, TileConfig::Auto), cusync::Error);
}

TEST(GemmConfig, PartWavesSplitTheTail) {
  // gpt3-qkv M = 1024: 8 x 24 = 192 tiles of 128x192: one whole wave, then
  // 60 tiles split in two (120 parts on 132 SMs).
  EXPECT_EQ(stageChoice(1024, 4608, 12288, 132), TileConfig::T128x192TailSplit);
  GemmArgs a = good();
  a.M = 1024, a.N = 4608, a.K = 12288;
  EXPECT_EQ(splitCount(a, TileConfig::T128x192TailSplit, 132), 2u);
  EXPECT_EQ(unsplitTiles(a, TileConfig::T128x192TailSplit, 132), 132u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x192TailSplit, 132), 132u);
  // llama-qkv M = 256: 32 tiles, no whole wave; every tile split, all parts in one wave.
  const TileConfig few = stageChoice(256, 3072, 8192, 132);
  EXPECT_TRUE(isTailSplit(few)) << toString(few);
  a.M = 256, a.N = 3072, a.K = 8192;
  const uint64_t tiles = stageGrid(a, few).count();
  EXPECT_GE(splitCount(a, few, 132), 2u);
  EXPECT_LE(tiles * splitCount(a, few, 132), 132u);
  EXPECT_EQ(unsplitTiles(a, few, 132), 0u);
  // More than half a wave left (128 tiles at M = 512): two parts each would
  // need a second wave, which measured slower.
  a.M = 512, a.N = 6144, a.K = 12288;
  EXPECT_EQ(splitCount(a, TileConfig::T128x192TailSplit, 132), 1u);
  EXPECT_EQ(unsplitTiles(a, TileConfig::T128x192TailSplit, 132), 128u);
  // Short K: gpt3-wo M = 512 (24 k-blocks) and llama-wo M = 512: the fixup outweighs the gain.
  EXPECT_FALSE(isTailSplit(stageChoice(512, 12288, 1536, 132)));
  EXPECT_FALSE(isTailSplit(stageChoice(256, 8192, 1024, 132)));
  // Whole waves: nothing to split.
  a.M = 128 * 11, a.N = 256 * 12, a.K = 4096;  // 132 tiles
  EXPECT_EQ(splitCount(a, TileConfig::T128x256TailSplit, 132), 1u);
  EXPECT_EQ(unsplitTiles(a, TileConfig::T128x256TailSplit, 132), 132u);
  // A forced count, clamped to the k-blocks.
  a.M = 5, a.N = 256, a.K = 512, a.splitK = 20;  // one tile of 8 k-blocks
  EXPECT_EQ(splitCount(a, TileConfig::T128x256TailSplit, 132), 8u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256TailSplit, 132), 8u);
  EXPECT_EQ(stageGrid(a, TileConfig::T128x256TailSplit), stageGrid(a, TileConfig::T128x256));
  EXPECT_EQ(stageGrid(a, TileConfig::T128x192TailSplit), stageGrid(a, TileConfig::T128x192));
  a.config = TileConfig::T128x256TailSplit;
  EXPECT_NO_THROW(checkArgs(a));
}

TEST(GemmConfig, EveryConfigHasAShape) {
  for (const TileConfigRow& r : kTileConfigs) {
    const TileConfig c = r.config;
    const TileShape t = tileShape(c);
    EXPECT_TRUE(t.bm == 64 || t.bm == 128 || (t.bm == 256 && isPair(c))) << toString(c);
    EXPECT_EQ(t.bn % (supportsSwiGLU(c) ? 16u : 8u), 0u) << toString(c);  // whole SwiGLU gate/up pairs
    EXPECT_EQ(t.bk, 64u);
    GemmArgs a = good();
    a.config = c;
    if (!runsAsGemm(c)) {
      expectBad(a, "conv2d runs it");  // the convolution's resident-filter rows
      continue;
    }
    EXPECT_NO_THROW(checkArgs(a)) << toString(c);
    EXPECT_GT(estimatedCost(1000, 4096, 4096, 132, c), 0.0) << toString(c);
  }
}

TEST(GemmConfig, PairLaunchGeometry) {
  GemmArgs a = good();
  a.M = 1000, a.N = 1000;  // 4 x 4 stage tiles of 256 x 256
  EXPECT_EQ(stageGrid(a, TileConfig::T128x256Pair), cusync::Dim3(4, 4, 1));
  EXPECT_EQ(stageTile(a, TileConfig::T128x256Pair), cusync::Dim3(256, 256, 64));
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256Pair, 132), 32u);  // a cluster of two per tile
  EXPECT_EQ(ticketBlocks(a, TileConfig::T128x256Pair, 132), 16u);
  a.M = 4096, a.N = 6144;  // 16 x 24 tiles of 256 x 256: 66 clusters on 132 SMs
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256Pair, 132), 132u);
  EXPECT_EQ(ticketBlocks(a, TileConfig::T128x256Pair, 132), 66u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256Pair, 133) % 2, 0u);
  EXPECT_EQ(ticketBlocks(a, TileConfig::T128x256, 132), persistentBlocks(a, TileConfig::T128x256, 132));
  // The heuristic picks pairs where K is long and the waves are as full
  // (gpt3-mlp1 M = 4096: measured 1.5% faster than single blocks).
  EXPECT_EQ(stageChoice(4096, 6144, 12288, 132), TileConfig::T128x256Pair);
  EXPECT_FALSE(isPair(stageChoice(4096, 8192, 1024, 132)));  // short K: the hand-over costs more
}

TEST(GemmConfig, OverrideWins) {
  GemmArgs a = good();
  a.M = 4096, a.N = 6144, a.config = TileConfig::T128x128;
  EXPECT_EQ(stageChoice(a, 132), TileConfig::T128x128);
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x128);
  a.config = TileConfig::Auto;
  EXPECT_EQ(stageChoice(a, 132), stageChoice(4096, 6144, 64, 132));
}

TEST(GemmConfig, StageGeometry) {
  GemmArgs a = good();
  a.M = 1000, a.N = 400;
  const cusync::Dim3 g = stageGrid(a, TileConfig::T128x256);
  EXPECT_EQ(g.x, 2u);
  EXPECT_EQ(g.y, 8u);
  const cusync::Dim3 t = stageTile(a, TileConfig::T128x256);
  EXPECT_EQ(t.x, 256u);
  EXPECT_EQ(t.y, 128u);
  EXPECT_EQ(t.z, 64u);
  // A SwiGLU stage's tiles write half the columns they compute.
  a.epilogue = Epilogue::SwiGLU;
  EXPECT_EQ(stageTile(a, TileConfig::T128x256).x, 128u);
  EXPECT_EQ(stageGrid(a, TileConfig::T128x256), g);
}

TEST(GemmConfig, SplitKConfigIsImplemented) {
  GemmArgs a = good();
  a.config = TileConfig::T64x128SplitK;
  EXPECT_NO_THROW(checkArgs(a));
  a.splitK = -1;
  expectBad(a, "splitK = -1");
}

// The GPT-3 and LLaMA layer shapes (N, K) of docs/design.md on a 132-SM H100.
const int64_t kShapesNK[][2] = {{6144, 12288}, {12288, 6144}, {5504, 8192}, {8192, 2752},
                                {4608, 12288}, {12288, 1536}, {3072, 8192}, {8192, 1024}};

TEST(GemmConfig, SmallMUsesSplitK) {
  for (const auto& s : kShapesNK) {
    const bool longK = s[1] >= 1024;  // every layer shape
    for (int64_t M : {1, 17, 64}) {
      EXPECT_EQ(stageChoice(M, s[0], s[1], 132) == TileConfig::T64x128SplitK, longK)
          << M << "x" << s[0] << "x" << s[1];
    }
    for (int64_t M : {65, 256, 512, 4096})
      EXPECT_NE(stageChoice(M, s[0], s[1], 132), TileConfig::T64x128SplitK) << M;
    GemmArgs a = good();
    a.M = 64, a.N = s[0], a.K = s[1];
    EXPECT_EQ(standaloneChoice(a, 132) == TileConfig::T64x128SplitK, longK);
  }
}

TEST(GemmConfig, SplitCount) {
  // Two splits only where 64x128 tiles fill at most half of 132 SMs and K is long.
  for (const auto& s : kShapesNK) {
    const int64_t tiles = (s[0] + 127) / 128;
    const uint32_t S = chooseSplits(64, s[0], s[1], 132);
    EXPECT_EQ(S, (s[1] >= 2048 && 2 * tiles <= 132) ? 2u : 1u) << s[0] << "x" << s[1];
    EXPECT_LE(S, (s[1] + 63) / 64);
  }
  EXPECT_EQ(chooseSplits(64, 4608, 12288, 132), 2u);  // gpt3-qkv: 36 tiles
  EXPECT_EQ(chooseSplits(64, 6144, 12288, 132), 2u);  // gpt3-mlp1: 48 tiles
  EXPECT_EQ(chooseSplits(64, 12288, 6144, 132), 1u);  // gpt3-mlp2: 96 tiles
  EXPECT_EQ(chooseSplits(256, 4608, 12288, 132), 1u);
  EXPECT_EQ(chooseSplits(1, 256, 64, 132), 1u);
  EXPECT_THROW(chooseSplits(0, 256, 64, 132), cusync::Error);
}

TEST(GemmConfig, SplitOverrideAndBlocks) {
  GemmArgs a = good();
  a.M = 64, a.N = 1024, a.K = 640;  // 8 tiles of 64x128, 10 k-blocks
  a.config = TileConfig::T64x128SplitK;
  a.splitK = 4;
  EXPECT_EQ(splitCount(a, a.config, 132), 4u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T64x128SplitK, 132), 32u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x128, 132), 8u);
  a.splitK = 50;  // clamped to the k-blocks
  EXPECT_EQ(splitCount(a, a.config, 132), 10u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T64x128SplitK, 16), 16u);
  a.splitK = 0;
  EXPECT_EQ(splitCount(a, a.config, 132), chooseSplits(64, 1024, 640, 132));
  EXPECT_EQ(splitCount(a, TileConfig::T128x256, 132), 1u);
  const cusync::Dim3 g = stageGrid(a, TileConfig::T64x128SplitK);
  EXPECT_EQ(g.x, 8u);
  EXPECT_EQ(g.y, 1u);
  EXPECT_EQ(stageTile(a, TileConfig::T64x128SplitK).y, 64u);
}

// KCut launches: the kernel's cut of the (column, k-block) sequence, played
// on the host. Every k-block of every column is computed once; a part
// without its tile's first k-block is the first unit of its group (so each
// block writes at most one partial); the part with the first k-block is the
// last unit of its group and finds the other parts in exactly the groups
// after it up to kCutGroupOf(the tile's last k-block).
// Static tiles (KernelFlags::staticRuns): the takers cover every tile once,
// a run takes the stage's tickets per run (numTiles + takers), and every
// taker of run r reads run r from the counter, whatever order they add in.
TEST(GemmStaticTiles, TakersCoverTilesAndCountRuns) {
  uint32_t seed = 12345;
  auto rnd = [&](uint32_t n) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % n;
  };
  for (uint32_t numTiles : {1u, 7u, 128u, 129u, 384u, 1000u}) {
    for (uint32_t takers : {1u, 3u, 64u, 66u, 128u, 132u}) {
      std::vector<int> seen(numTiles, 0);
      uint64_t perRun = 0;
      for (uint32_t b = 0; b < takers; ++b) {
        const uint32_t n = cusync_gemm::detail::staticTileCount(b, takers, numTiles);
        for (uint32_t i = 0; i < n; ++i) {
          const uint32_t tile = b + i * takers;
          ASSERT_LT(tile, numTiles) << "taker " << b << " of " << takers;
          ++seen[tile];
        }
        EXPECT_GE(b + n * takers, numTiles) << "taker " << b << " stops early";
        perRun += n + 1;
      }
      for (uint32_t t = 0; t < numTiles; ++t) ASSERT_EQ(seen[t], 1) << "tile " << t;
      const uint32_t ticketsPerRun = numTiles + takers;
      ASSERT_EQ(perRun, ticketsPerRun);
      unsigned long long counter = 0;
      for (uint32_t run = 1; run <= 4; ++run) {
        std::vector<uint32_t> order(takers);
        for (uint32_t b = 0; b < takers; ++b) order[b] = b;
        for (uint32_t b = takers; b > 1; --b) std::swap(order[b - 1], order[rnd(b)]);
        for (uint32_t b : order) {
          EXPECT_EQ(cusync_gemm::detail::staticRunOf(counter, ticketsPerRun), run);
          counter += cusync_gemm::detail::staticTileCount(b, takers, numTiles) + 1;
        }
      }
    }
  }
}

TEST(GemmKCut, CutsCoverEveryKBlockOnce) {
  using cusync_gemm::detail::kCutBegin;
  using cusync_gemm::detail::kCutGroupOf;
  for (uint64_t cols : {1u, 3u, 16u, 29u, 64u})
    for (uint64_t kIters : {1u, 6u, 24u, 128u, 192u})
      for (uint64_t G : {1u, 2u, 5u, 16u, 33u, 66u, 132u}) {
        const uint64_t total = cols * kIters;
        if (G > total) continue;  // kCutGroups() never makes more groups than k-blocks
        SCOPED_TRACE(std::to_string(cols) + " cols x " + std::to_string(kIters) + " k-blocks, G = " + std::to_string(G));
        std::vector<std::vector<uint32_t>> partsOf(cols);  // groups holding a part of column c
        std::vector<int> seen(total, 0);
        for (uint64_t g = 0; g < G; ++g) {
          const uint32_t b = kCutBegin(g, G, total), e = kCutBegin(g + 1, G, total);
          ASSERT_LT(b, e);
          for (uint32_t x = b; x < e;) {
            const uint32_t c = static_cast<uint32_t>(x / kIters), kb0 = static_cast<uint32_t>(x - c * kIters);
            const uint32_t kb1 = std::min<uint32_t>(static_cast<uint32_t>(kIters), kb0 + (e - x));
            for (uint32_t k = kb0; k < kb1; ++k) ++seen[c * kIters + k];
            if (kb0 > 0) EXPECT_EQ(x, b) << "a cut part is its group's first unit";
            if (kb0 == 0 && kb1 < kIters) EXPECT_EQ(x + (kb1 - kb0), e) << "the finisher is its group's last unit";
            EXPECT_EQ(kCutGroupOf(x, G, total), g);
            partsOf[c].push_back(static_cast<uint32_t>(g));
            x += kb1 - kb0;
          }
        }
        for (int v : seen) ASSERT_EQ(v, 1);
        for (uint64_t c = 0; c < cols; ++c) {
          const uint32_t first = kCutGroupOf(c * kIters, G, total);
          const uint32_t last = kCutGroupOf(c * kIters + kIters - 1, G, total);
          std::vector<uint32_t> expect;
          for (uint32_t h = first; h <= last; ++h) expect.push_back(h);
          EXPECT_EQ(partsOf[c], expect) << "column " << c;
        }
      }
}

// B's loads are marked evict-first only where the weights stream through L2
// once per band: few bands and long K.
TEST(GemmConfig, WeightsEvictFirst) {
  EXPECT_TRUE(weightsEvictFirst(256, 12288));   // gpt3-qkv M = 256
  EXPECT_TRUE(weightsEvictFirst(512, 4096));
  EXPECT_FALSE(weightsEvictFirst(513, 8192));   // 5 bands
  EXPECT_FALSE(weightsEvictFirst(512, 1536));   // gpt3-wo: short K
  EXPECT_FALSE(weightsEvictFirst(4096, 12288));
}

TEST(GemmKCut, Geometry) {
  GemmArgs a = good();
  a.M = 512, a.N = 5504, a.K = 8192;  // llama-mlp1: 4 bands, 29 columns of 192
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 33u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x192KCut, 132), 132u);
  EXPECT_EQ(ticketBlocks(a, TileConfig::T128x192KCut, 132), 132u);
  EXPECT_EQ(stageGrid(a, TileConfig::T128x192KCut), stageGrid(a, TileConfig::T128x192));
  EXPECT_EQ(stageTile(a, TileConfig::T128x256KCut), stageTile(a, TileConfig::T128x256));
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192, 132), 0u);
  a.M = 512, a.N = 12288, a.K = 1536;  // gpt3-wo: 64 columns of 192; 32 groups walk whole columns (33 would cut)
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 32u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x192KCut, 132), 128u);
  a.N = 5504, a.K = 8192;
  a.M = 1000;  // 8 bands: 16 groups
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256KCut, 132), 128u);
  a.M = 100, a.N = 64, a.K = 128;  // 1 column of 2 k-blocks: no more groups than k-blocks
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 2u);
  a.M = 128 * 200, a.N = 4096, a.K = 4096;  // more bands than SMs: one group
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x256KCut, 132), 1u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x256KCut, 132), 200u);
  EXPECT_EQ(splitCount(a, TileConfig::T128x256KCut, 132), 1u);
}

// GemmArgs::kCutGroups sets a KCut launch's group count, clamped so that every
// block stays resident (groups x bands <= SMs) and to the k-blocks of work.
TEST(GemmKCut, GroupOverride) {
  GemmArgs a = good();
  a.M = 512, a.N = 3072, a.K = 8192;  // 4 bands, 16 columns of 192, 128 k-blocks each
  a.kCutGroups = 10;
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 10u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x192KCut, 132), 40u);
  a.kCutGroups = 1000;  // at most 132 / 4
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 33u);
  EXPECT_EQ(persistentBlocks(a, TileConfig::T128x192KCut, 132), 132u);
  a.kCutGroups = 1;
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x256KCut, 132), 1u);
  a.M = 100, a.N = 64, a.K = 128, a.kCutGroups = 5;  // 2 k-blocks of work: 2 groups
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 2u);
  a.kCutGroups = 0;  // the heuristic's count, as without an override
  a.M = 512, a.N = 5504, a.K = 8192;
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 33u);
}

TEST(GemmKCut, OnlyTheNoSyncHeuristicPicksIt) {
  for (const auto& s : kShapesNK)
    for (int64_t M : {1, 64, 256, 512, 1024, 2048, 4096}) {
      GemmArgs a = good();
      a.M = M, a.N = s[0], a.K = s[1];
      EXPECT_FALSE(isKCut(stageChoice(a, 132))) << M << "x" << s[0] << "x" << s[1];
      const TileConfig c = standaloneChoice(a, 132);
      if (M <= 64) EXPECT_EQ(c, TileConfig::T64x128SplitK);
      // Under 4 bands the groups' spread over k costs more than the cut saves
      //: only KCut launches of whole columns.
      if (M <= 384 && isKCut(c)) {
        const uint32_t cols = stageGrid(a, c).x;
        EXPECT_EQ(cols % kCutGroups(a, c, 132), 0u) << M << "x" << s[0] << "x" << s[1];
      }
      // A KCut pick is cheaper in the model than the stage heuristic's.
      if (isKCut(c)) EXPECT_LT(estimatedCost(M, s[0], s[1], 132, c), estimatedCost(M, s[0], s[1], 132, stageChoice(a, 132)));
      a.config = TileConfig::T128x128;
      EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x128);
    }
  // Measured gains on the H100: gpt3-qkv M = 512 (96 tiles of
  // 128x192 on 132 SMs) 1.20x -> 1.15x cuBLAS, since then 128 tiles of
  // 128x144 (1.04x); gpt3-wo M = 4096 1.043 -> 1.015.
  GemmArgs a = good();
  a.M = 512, a.N = 4608, a.K = 12288;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x144);
  a.M = 4096, a.N = 12288, a.K = 1536;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x256KCut);
  a.M = 512;  // whole columns per group: 1.079 -> 1.051
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x192KCut);
  a.M = 256;  // 2 bands, 64 groups of one column each: 23.6 -> 22.9 us
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x192KCut);
  EXPECT_EQ(kCutGroups(a, TileConfig::T128x192KCut, 132), 64u);
  a.M = 1024, a.N = 3072, a.K = 8192;  // llama-qkv: whole waves of 128x192 already
  EXPECT_EQ(standaloneChoice(a, 132), stageChoice(a, 132));
}

// Narrow widths (176, 168, 144, 96): picked where every tile or split part
// runs in one wave (or the few whole waves measured) and K has at least 64
// k-blocks.
bool isNarrowConfig(TileConfig c) {
  const uint32_t bn = isKCut(c) || c == TileConfig::Auto ? 0 : tileShape(c).bn;
  return bn == 176 || bn == 168 || bn == 144 || bn == 96;
}

TEST(GemmNarrow, OneWaveLongKOnly) {
  for (const auto& s : kShapesNK)
    for (int64_t M : {1, 64, 100, 256, 300, 512, 640, 1024, 2048, 4096}) {
      SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(s[0]) + "x" + std::to_string(s[1]));
      GemmArgs a = good();
      a.M = M, a.N = s[0], a.K = s[1];
      const TileConfig c = standaloneChoice(a, 132);
      if (!isNarrowConfig(c)) continue;
      EXPECT_GE((s[1] + 63) / 64, 64);
      const uint32_t tiles = stageGrid(a, c).count();
      if (isTailSplit(c)) {
        EXPECT_EQ(unsplitTiles(a, c, 132), 0u);  // no whole wave before the parts
        EXPECT_LE(tiles * splitCount(a, c, 132), 132u);    // the parts in one wave
      } else {
        EXPECT_TRUE(tiles <= 132 ||
                    (c == TileConfig::T128x176 && tiles <= 2 * 132 &&
                     (tiles % 132 == 0 || 8 * (tiles % 132) >= 7 * 132)) ||
                    (c == TileConfig::T128x168 && tiles <= 4 * 132 && tiles % 132 == 0))
            << tiles;
      }
    }
}

TEST(GemmNarrow, SwiGLUNeedsWholeGateUpPairs) {
  GemmArgs a = good();
  a.epilogue = Epilogue::SwiGLU;
  a.config = TileConfig::T128x168;
  expectBad(a, "gate/up");
  for (const TileConfigRow& r : kTileConfigs)
    if (const TileConfig c = r.config; c != TileConfig::T128x168 && runsAsGemm(c)) {
      a.config = c;
      EXPECT_TRUE(supportsSwiGLU(c)) << toString(c);
      EXPECT_NO_THROW(checkArgs(a)) << toString(c);
    }
  EXPECT_EQ(tileShape(TileConfig::T128x168).bn % 16, 8u);
  // Auto never resolves a SwiGLU launch to a width that splits the pairs.
  for (int64_t M : {256, 512, 1024, 2048, 4096}) {
    GemmArgs s = good();
    s.M = M, s.N = 5504, s.K = 8192;
    if (M == 512) EXPECT_EQ(standaloneChoice(s, 132), TileConfig::T128x168) << M;
    s.epilogue = Epilogue::SwiGLU;
    EXPECT_TRUE(supportsSwiGLU(standaloneChoice(s, 132))) << M;
    EXPECT_NO_THROW(checkArgs(s));
  }
}

TEST(GemmNarrow, OrderGroupByConfig) {
  // gemm() walks 128x168 tiles in bands of 6 rows, everything else in bands of 8.
  for (const TileConfigRow& r : kTileConfigs)
    EXPECT_EQ(orderGroup(r.config), r.config == TileConfig::T128x168 ? 6u : 8u) << r.name;
}

TEST(GemmNarrow, MeasuredPicks) {
  // H100, cusync-bench gemm: ours / cuBLAS before -> after.
  GemmArgs a = good();
  a.N = 5504, a.K = 8192;  // llama-mlp1
  a.M = 256;               // 128x192/t2 1.128 -> 128x176/t2 1.065 -> 128x96 1.028 (176/t2 1.091-1.098)
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x96);
  a.M = 512;  // 128x192 1.093 -> 128x176 1.036 (128 tiles against 116), 128x168 132 tiles
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x168);
  // Two and four whole waves of 128x168 walked in bands of 6:
  // M = 1024 128x176 1.05 -> 1.047, M = 2048 KCut 1.10 -> 1.049 (in
  // bands of 8, 128x168 ran 1.10 and 1.18).
  a.M = 1024;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x168);
  a.M = 2048;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x168);
  a.M = 4096;  // 128x256/t3 (1.005) stays
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x256TailSplit);
  a.N = 4608, a.K = 12288;  // gpt3-qkv
  a.M = 256;                // 128x256/t3 1.176 -> 128x144/t2 1.072
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x144TailSplit);
  a.N = 3072, a.K = 8192;  // llama-qkv
  a.M = 256;               // 128x192/t4 1.121 -> 128x96/t2 1.027
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x96TailSplit);
  EXPECT_EQ(splitCount(a, TileConfig::T128x96TailSplit, 132), 2u);
  // 128x96 (128 tiles) 1.225 lost to 128x192/t2 1.156; with the k
  // loop in uniform registers 1.029-1.030 against 1.153-1.167.
  a.M = 512;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x96);
  a.N = 6144, a.K = 12288;  // gpt3-mlp1
  a.M = 256;                // 128x192/t2 1.068-1.083 -> 128x96 1.014
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x96);
}

TEST(GemmNarrow, ShortKWholeTilesOverKCut) {
  // H100: at 16 k-blocks whole 128x128 tiles in two to four
  // nearly full waves beat the KCut launches; at 24 k-blocks and in 8 waves not.
  GemmArgs a = good();
  a.N = 8192, a.K = 1024;  // llama-wo
  a.M = 512;               // 256 tiles: KCut g32 1.064-1.066 -> 128x128 1.022-1.023
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x128);
  a.M = 1024;  // 512 tiles (last wave 116 of 132): KCut g16 1.038-1.043 -> 1.010-1.018
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x128);
  a.M = 2048;  // 8 waves: KCut (1.007-1.013) stays against 128x128's 1.028-1.030
  EXPECT_TRUE(isKCut(standaloneChoice(a, 132)));
  a.N = 12288, a.K = 1536;  // gpt3-wo, 24 k-blocks
  a.M = 512;                // KCut g32 1.005-1.011 stays against 128x128's 1.013-1.017
  EXPECT_TRUE(isKCut(standaloneChoice(a, 132)));
  // An explicit configuration is never replaced.
  a.N = 8192, a.K = 1024, a.M = 512, a.config = TileConfig::T128x256KCut;
  EXPECT_EQ(standaloneChoice(a, 132), TileConfig::T128x256KCut);
}

}  // namespace

namespace {
TEST(GemmConfig, GroupedOrderIsABijection) {
  for (uint32_t gx : {1u, 5u, 48u})
    for (uint32_t gy : {1u, 7u, 8u, 9u, 33u}) {
      const cusync::Dim3 g(gx, gy, 1);
      EXPECT_NO_THROW(cusync::buildOrderTable(cusync::GroupedOrder{8}, g)) << gx << "x" << gy;
    }
  // Band of 8 rows walked column by column.
  EXPECT_EQ(cusync::GroupedOrder{8}.linearIndex(cusync::Dim3(0, 1, 0), cusync::Dim3(4, 16, 1)), 1u);
  EXPECT_EQ(cusync::GroupedOrder{8}.linearIndex(cusync::Dim3(1, 0, 0), cusync::Dim3(4, 16, 1)), 8u);
}
// A fused pipeline's stages: each its own choice in whole-tile form where the
// kernel runs that pair of widths, and never a pair it does not build.
GemmArgs mlpStage(int64_t M, int64_t N, int64_t K, Epilogue e) {
  GemmArgs a;
  a.M = M, a.N = N, a.K = K, a.epilogue = e;
  return a;
}

TEST(GemmFusedConfigs, EveryPairIsAWholeTileWidthPair) {
  for (const FusedPairRow& p : kFusedPairs) {
    EXPECT_NE(p.first, p.second);
    EXPECT_TRUE(runsFused(p.first) && runsFused(p.second)) << toString(p.first) << "/" << toString(p.second);
    EXPECT_EQ(scheduleOf(p.first), Schedule::WholeTiles);
    EXPECT_EQ(scheduleOf(p.second), Schedule::WholeTiles);
    EXPECT_EQ(tileShape(p.first).bm, tileShape(p.second).bm);
    EXPECT_TRUE(runsFusedPair(p.first, p.second));
    EXPECT_LT(tileConfigIndex(p.first), kNumTileConfigs);
  }
  EXPECT_FALSE(runsFusedPair(TileConfig::T128x128, TileConfig::T128x256));
  EXPECT_FALSE(runsFusedPair(TileConfig::T128x256Pair, TileConfig::T128x256Pair));
  EXPECT_FALSE(runsFusedPair(TileConfig::T128x64Resident, TileConfig::T128x64Resident));
  EXPECT_TRUE(runsFusedPair(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK));
  EXPECT_EQ(tileConfigIndex(TileConfig::Auto), kNumTileConfigs);
}

TEST(GemmFusedConfigs, StagesKeepTheirOwnWidths) {
  struct Point {
    int64_t M, N1, K1, N2, K2;
    Epilogue e1;
    TileConfig first, second;
  };
  // GPT-3 and LLaMA MLPs (tensor parallel 8) on 132 SMs.
  const Point points[] = {
      {256, 6144, 12288, 12288, 6144, Epilogue::Gelu, TileConfig::T128x96, TileConfig::T128x192},
      {512, 6144, 12288, 12288, 6144, Epilogue::Gelu, TileConfig::T128x192, TileConfig::T128x192},
      {1024, 6144, 12288, 12288, 6144, Epilogue::Gelu, TileConfig::T128x192, TileConfig::T128x256},
      {256, 5504, 8192, 8192, 2752, Epilogue::SwiGLU, TileConfig::T128x96, TileConfig::T128x128},
      {512, 5504, 8192, 8192, 2752, Epilogue::SwiGLU, TileConfig::T128x176, TileConfig::T128x256},
      {64, 5504, 8192, 8192, 2752, Epilogue::SwiGLU, TileConfig::T64x128SplitK, TileConfig::T64x128SplitK},
  };
  for (const Point& p : points) {
    const GemmArgs a0 = mlpStage(p.M, p.N1, p.K1, p.e1), a1 = mlpStage(p.M, p.N2, p.K2, Epilogue::Identity);
    const FusedConfigs c = resolveFusedConfigs(a0, a1, 132);
    EXPECT_EQ(c.first, p.first) << p.M << " " << p.N1 << ": " << toString(c.first);
    EXPECT_EQ(c.second, p.second) << p.M << " " << p.N1 << ": " << toString(c.second);
    EXPECT_TRUE(runsFusedPair(c.first, c.second));
    // No cheaper one-configuration choice by the estimate.
    const double cost = estimatedCost(a0.M, a0.N, a0.K, 132, c.first) + estimatedCost(a1.M, a1.N, a1.K, 132, c.second);
    for (TileConfig one : {c.first, c.second})
      if (!(p.e1 == Epilogue::SwiGLU && !supportsSwiGLU(one)))
        EXPECT_LE(cost, estimatedCost(a0.M, a0.N, a0.K, 132, one) + estimatedCost(a1.M, a1.N, a1.K, 132, one));
  }
  // Random shapes: whatever is picked, the kernel builds it.
  for (int64_t M : {1, 7, 100, 300, 777, 1000, 2048, 4096})
    for (int64_t N : {512, 2752, 5504, 12288}) {
      const FusedConfigs c = resolveFusedConfigs(mlpStage(M, N, 4096, Epilogue::Identity),
                                                 mlpStage(M, 8192, N, Epilogue::Identity), 132);
      EXPECT_TRUE(runsFusedPair(c.first, c.second)) << M << " " << N;
    }
}

TEST(GemmFusedConfigs, ExplicitConfigurations) {
  GemmArgs a0 = mlpStage(512, 5504, 8192, Epilogue::Identity), a1 = mlpStage(512, 8192, 2752, Epilogue::Identity);
  a0.config = TileConfig::T128x176;
  a1.config = TileConfig::T128x256;
  FusedConfigs c = resolveFusedConfigs(a0, a1, 132);
  EXPECT_EQ(c.first, TileConfig::T128x176);
  EXPECT_EQ(c.second, TileConfig::T128x256);
  a1.config = TileConfig::Auto;  // one set: both run it
  c = resolveFusedConfigs(a0, a1, 132);
  EXPECT_EQ(c.first, TileConfig::T128x176);
  EXPECT_EQ(c.second, TileConfig::T128x176);
  auto expectRefused = [&](TileConfig c0, TileConfig c1, const std::string& needle) {
    a0.config = c0;
    a1.config = c1;
    try {
      resolveFusedConfigs(a0, a1, 132);
      ADD_FAILURE() << "no error for " << toString(c0) << "/" << toString(c1);
    } catch (const cusync::Error& e) {
      EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expectRefused(TileConfig::T128x128, TileConfig::T128x256, "128x96/128x192");  // a pair it does not build
  expectRefused(TileConfig::T128x256, TileConfig::T128x176, "got 128x256 and 128x176");  // a pair's order matters
  expectRefused(TileConfig::T128x256Pair, TileConfig::T128x256Pair, "cannot run fused");
}
}  // namespace
