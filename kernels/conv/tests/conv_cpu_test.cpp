// CPU tests of the convolution's host side: argument checks name the
// problem, the GEMM a conv runs as, the configuration choice, the im2col
// geometry the kernels read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cusync/error.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch_host.h"
#include "kernels/conv/kernel/im2col_walk.h"
#include "kernels/conv/kernel/patch_geometry.h"

namespace {

using cusync_conv::Conv2dArgs;
using cusync_conv::ConvEpilogue;
using cusync_gemm::TileConfig;

alignas(16) char buffer[64];

Conv2dArgs good() {
  Conv2dArgs a;
  a.N = 2, a.H = 56, a.W = 56, a.C = 64, a.K = 128;
  a.x = a.w = a.y = buffer;
  return a;
}

void expectBad(const Conv2dArgs& a, const std::string& what) {
  try {
    cusync_conv::checkArgs(a);
    ADD_FAILURE() << "accepted; expected an error about: " << what;
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ConvArgs, GoodShapesPass) {
  EXPECT_NO_THROW(cusync_conv::checkArgs(good()));
  Conv2dArgs a = good();
  a.R = a.S = 1, a.padH = a.padW = 0, a.strideH = a.strideW = 2;
  EXPECT_NO_THROW(cusync_conv::checkArgs(a));
  a = good();
  a.H = a.W = 1;  // a 3x3 filter over a 1x1 image with padding 1
  EXPECT_NO_THROW(cusync_conv::checkArgs(a));
}

TEST(ConvArgs, BadInputNamesTheProblem) {
  Conv2dArgs a = good();
  a.C = 3;
  expectBad(a, "multiple of 8");
  a = good(), a.K = 100;
  expectBad(a, "output channels");
  a = good(), a.N = 0;
  expectBad(a, "at least 1");
  a = good(), a.R = a.S = 5;
  expectBad(a, "1x1 and 3x3");
  a = good(), a.strideH = 3;
  expectBad(a, "strides 1 and 2");
  a = good(), a.padH = a.padW = 2;
  expectBad(a, "padding");
  a = good(), a.H = a.W = 1, a.padH = a.padW = 0;
  expectBad(a, "larger than the padded");
  a = good(), a.x = buffer + 2;
  expectBad(a, "x is not 16-byte aligned");
  a = good(), a.y = nullptr;
  expectBad(a, "non-null");
  a = good(), a.epilogue = ConvEpilogue::BiasResidualRelu;
  expectBad(a, "residual pointer");
  a = good(), a.config = TileConfig::T128x192;
  expectBad(a, "not built for the convolution");
}

TEST(ConvArgs, OutputGeometry) {
  Conv2dArgs a = good();
  EXPECT_EQ(a.P(), 56);
  EXPECT_EQ(a.Q(), 56);
  a.strideH = a.strideW = 2;
  EXPECT_EQ(a.P(), 28);
  a.H = a.W = 7;
  EXPECT_EQ(a.P(), 4);
  a.R = a.S = 1, a.padH = a.padW = 0;
  EXPECT_EQ(a.Q(), 4);
}

TEST(ConvGemm, RunsAsAnImplicitGemm) {
  Conv2dArgs a = good();
  a.C = 520;
  a.epilogue = ConvEpilogue::BiasResidualRelu;
  const cusync_gemm::GemmArgs g = cusync_conv::gemmOf(a);
  EXPECT_EQ(g.M, 2 * 56 * 56);
  EXPECT_EQ(g.N, 128);
  EXPECT_EQ(g.K, 9 * 9 * 64);  // 520 channels in 9 k-blocks per filter position
  EXPECT_EQ(g.epilogue, cusync_gemm::Epilogue::ResidualRelu);
  const cusync_gemm::detail::Im2colGeometry geo = cusync_conv::detail::im2colGeometry(a);
  EXPECT_EQ(geo.cBlocks, 9);
  EXPECT_EQ(geo.PQ, 56 * 56);
  EXPECT_EQ(geo.Q, 56);
}

TEST(ConvGemm, EightChannelsPackFilterTaps) {
  // VGG's RGB input padded to 8: eight filter positions a k-block, so 3x3
  // runs 72 reduction columns in 2 k-blocks, not 9, and 1x1 in one.
  Conv2dArgs a = good();
  a.C = 8;
  EXPECT_TRUE(cusync_conv::packsFilterTaps(a));
  EXPECT_EQ(cusync_conv::gemmOf(a).K, 128);
  EXPECT_EQ(cusync_conv::detail::im2colGeometry(a).taps, 9);
  a.R = a.S = 1, a.padH = a.padW = 0;
  EXPECT_EQ(cusync_conv::gemmOf(a).K, 64);
  EXPECT_EQ(cusync_conv::detail::im2colGeometry(a).taps, 1);
  // Such a layer cannot wait on its input (its k-blocks span eight positions).
  try {
    cusync_conv::detail::rejectPackedWaits(a);
    ADD_FAILURE() << "no error for a waiting stage with packed filter taps";
  } catch (const cusync::Error& e) {
    EXPECT_NE(std::string(e.what()).find("C = 8"), std::string::npos) << e.what();
  }
  // 16 channels and more: a position's channels in whole k-blocks, as before.
  a.C = 16;
  EXPECT_FALSE(cusync_conv::packsFilterTaps(a));
  EXPECT_EQ(cusync_conv::gemmOf(a).K, 64);
  EXPECT_NO_THROW(cusync_conv::detail::rejectPackedWaits(a));
}

TEST(ConvGemm, ConfigurationIsBuilt) {
  for (int64_t n : {1, 4, 32})
    for (int64_t c : {64, 128, 256, 512})
      for (int64_t h : {56, 28, 14, 7}) {
        Conv2dArgs a = good();
        a.N = n, a.C = a.K = c, a.H = a.W = h;
        const TileConfig t = cusync_conv::convConfig(a, 132, cusync_gemm::LaunchContext::Stage);
        EXPECT_TRUE(cusync_conv::convBuilds(t)) << cusync_gemm::toString(t);
      }
  Conv2dArgs a = good();
  a.config = TileConfig::T128x256;
  EXPECT_EQ(cusync_conv::convConfig(a, 132, cusync_gemm::LaunchContext::Standalone), TileConfig::T128x256);
}

// The choice follows the measured per-configuration times (conv_host.cpp):
// at each of these the pick was the fastest configuration on the H100.
TEST(ConvGemm, ChoiceFollowsMeasuredTimes) {
  struct Case {
    int64_t n, h, c, k;
    TileConfig want;
  };
  for (const Case& c : {Case{8, 56, 256, 256, TileConfig::T128x128}, Case{32, 56, 256, 256, TileConfig::T128x256},
                        Case{32, 112, 128, 128, TileConfig::T128x128}, Case{16, 224, 64, 64, TileConfig::T128x64Resident},
                        Case{32, 14, 256, 256, TileConfig::T128x128}, Case{4, 7, 512, 512, TileConfig::T64x128SplitK},
                        Case{1, 56, 64, 64, TileConfig::T128x64Resident}, Case{8, 56, 64, 64, TileConfig::T128x64Resident},
                        Case{32, 56, 64, 64, TileConfig::T128x64Resident},
                        Case{1, 224, 8, 64, TileConfig::T128x64Resident}, Case{32, 224, 8, 64, TileConfig::T128x64Resident},
                        Case{1, 224, 64, 64, TileConfig::T128x64Resident}}) {
    Conv2dArgs a = good();
    a.N = c.n, a.H = a.W = c.h, a.C = c.c, a.K = c.k;
    EXPECT_EQ(cusync_conv::convConfig(a, 132, cusync_gemm::LaunchContext::Stage), c.want)
        << c.h << " x " << c.h << " x " << c.c << " -> " << c.k << " at batch " << c.n;
  }
}

// The filter stays resident where one column tile's filter fits 9 k-blocks:
// 3 x 3 over 64 channels (or packed 8), 1 x 1 up to 576 channels; 64 output
// channels or fewer. Elsewhere naming it is an error before launch, and the
// forced configuration falls back to 128x64.
TEST(ConvGemm, ResidentFilterWhereItFits) {
  struct Layer {
    int64_t c, k;
    int r;
    bool fits;
  };
  for (const Layer l : {Layer{64, 64, 3, true}, Layer{8, 64, 3, true}, Layer{8, 8, 3, true}, Layer{576, 64, 1, true},
                        Layer{64, 128, 3, false}, Layer{72, 64, 3, false}, Layer{128, 64, 3, false},
                        Layer{640, 64, 1, false}}) {
    Conv2dArgs a = good();
    a.C = l.c, a.K = l.k, a.R = a.S = l.r, a.padH = a.padW = (l.r - 1) / 2;
    EXPECT_EQ(cusync_conv::filterFitsResident(a), l.fits) << l.c << " -> " << l.k << ", " << l.r << "x" << l.r;
    a.config = TileConfig::T128x64Resident;
    if (l.fits)
      EXPECT_NO_THROW(cusync_conv::checkArgs(a));
    else
      expectBad(a, "keeps the filter resident");
  }
  EXPECT_TRUE(cusync_conv::convBuilds(TileConfig::T128x64Resident));
}

TEST(ConvGemm, FewPixelsSplitTheReduction) {
  // ResNet's 7 x 7 x 512 layer at batch 1: 49 pixels, 72 k-blocks, 4 split tiles.
  Conv2dArgs a = good();
  a.N = 1, a.H = a.W = 7, a.C = a.K = 512;
  const Conv2dArgs r = cusync_conv::resolveLaunch(a, 132, cusync_gemm::LaunchContext::Stage);
  EXPECT_EQ(r.config, TileConfig::T64x128SplitK);
  EXPECT_EQ(r.splitK, 8);  // at most 8 parts (the SMs would hold 33, 4 k-blocks each 18)
  EXPECT_EQ(cusync_gemm::splitCount(cusync_conv::gemmOf(r), r.config, 132), 8u);
  EXPECT_EQ(cusync_gemm::persistentBlocks(cusync_conv::gemmOf(r), r.config, 132), 32u);
  // Many pixels: whole tiles, no split.
  a.N = 32, a.H = a.W = 56, a.C = a.K = 64;
  const Conv2dArgs w = cusync_conv::resolveLaunch(a, 132, cusync_gemm::LaunchContext::Standalone);
  EXPECT_FALSE(cusync_gemm::splitsK(w.config)) << cusync_gemm::toString(w.config);
  EXPECT_EQ(w.splitK, 0);
  // VGG's 14 x 14 x 512 at batch 8 (72 k-blocks): 104 whole 128x64 tiles,
  // one wave, measured faster than 128x256 tail-split parts (26.0 against 30.5 us).
  a.N = 8, a.H = a.W = 14, a.C = a.K = 512;
  const Conv2dArgs t = cusync_conv::resolveLaunch(a, 132, cusync_gemm::LaunchContext::Stage);
  EXPECT_EQ(t.config, TileConfig::T128x64) << cusync_gemm::toString(t.config);
  EXPECT_EQ(t.splitK, 0);
  a.splitK = -1;
  expectBad(a, "splitK");
}

// The loaders' k walk (stepped from a unit's first k-block) names the same
// filter position, channel block and B column as the division form, from
// every starting k-block, at channel counts that fill k-blocks and that do not.
TEST(ConvWalk, SteppingMatchesDivision) {
  using cusync_conv::detail::ChannelBlockStep;
  struct Layer {
    int R, S, C;
  };
  for (const Layer l : {Layer{3, 3, 64}, Layer{3, 3, 520}, Layer{1, 1, 128}, Layer{3, 3, 16}, Layer{7, 7, 192},
                        Layer{1, 3, 64}}) {
    Conv2dArgs a = good();
    a.R = l.R, a.S = l.S, a.C = l.C;
    const cusync_gemm::detail::Im2colGeometry g = cusync_conv::detail::im2colGeometry(a);
    const int kBlocks = l.R * l.S * g.cBlocks;
    for (int kb0 = 0; kb0 < kBlocks; ++kb0) {
      ChannelBlockStep k = ChannelBlockStep::at(g, kb0);
      for (int kb = kb0; kb < kBlocks; ++kb, k.next(g)) {
        const int rs = kb / g.cBlocks, c0 = (kb % g.cBlocks) * 64;
        ASSERT_EQ(k.tap.fr, rs / l.S) << "C " << l.C << " from " << kb0 << " at " << kb;
        ASSERT_EQ(k.tap.fs, rs % l.S) << "C " << l.C << " from " << kb0 << " at " << kb;
        ASSERT_EQ(k.c0, c0) << "C " << l.C << " from " << kb0 << " at " << kb;
        ASSERT_EQ(k.kColumn(), rs * l.C + c0) << "C " << l.C << " from " << kb0 << " at " << kb;
      }
    }
  }
}

TEST(ConvWalk, PackedTapsStepEightPositions) {
  using Step = cusync_conv::detail::PackedTapsStep<8>;
  for (const int s : {1, 3, 5}) {
    Conv2dArgs a = good();
    a.C = 8, a.R = a.S = s, a.padH = a.padW = s / 2;
    const cusync_gemm::detail::Im2colGeometry g = cusync_conv::detail::im2colGeometry(a);
    const int kBlocks = (s * s + 7) / 8;
    for (int kb0 = 0; kb0 < kBlocks; ++kb0) {
      Step k = Step::at(g, kb0);
      for (int kb = kb0; kb < kBlocks; ++kb, k.next(g)) {
        ASSERT_EQ(k.tap.rs, 8 * kb);
        ASSERT_EQ(k.tap.fr, 8 * kb / s) << "S " << s << " at " << kb;
        ASSERT_EQ(k.tap.fs, 8 * kb % s) << "S " << s << " at " << kb;
        ASSERT_EQ(k.kColumn(), 64 * kb);
      }
    }
  }
}

// The patch loader's tiles (kernel/patch_geometry.h): every output pixel and
// channel block is computed by exactly one tile row, every read of a kept
// row lands on the input pixel under its filter position inside the tile's
// box, and no read of any of a tile's 128 rows leaves the patch buffer.
TEST(ConvPatchGeometry, TilesCoverEveryPixelOnceAndReadTheirBox) {
  using cusync_conv::PatchGeometry;
  const int shapes[][2] = {{7, 7},   {13, 13}, {14, 14}, {28, 28}, {56, 56},
                           {5, 126}, {3, 127}, {5, 130}, {4, 224}, {1, 1}};
  for (const auto& hw : shapes)
    for (int N : {1, 3})
      for (int BN : {64, 128}) {
        const int H = hw[0], W = hw[1];
        const PatchGeometry g = PatchGeometry::of(N, H, W, 64, 256, BN);
        SCOPED_TRACE(std::to_string(N) + "x" + std::to_string(H) + "x" + std::to_string(W) + " BN " +
                     std::to_string(BN));
        ASSERT_LE(g.pitch, PatchGeometry::kRows);
        ASSERT_EQ(g.colTiles * BN, 256);
        std::vector<int> seen(static_cast<size_t>(N) * H * W * g.colTiles, 0);
        for (int t = 0; t < g.tiles; ++t) {
          int n, p0, q0, k0;
          g.tileOf(t, n, p0, q0, k0);
          ASSERT_LT(n, N);
          ASSERT_EQ(k0 % BN, 0);
          for (int m = 0; m < PatchGeometry::kRows; ++m) {
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) ASSERT_LT(PatchGeometry::patchRow(m, r, s, g.pitch), g.bufRows);
            int p, q;
            if (!g.pixelOf(m, p0, q0, p, q)) continue;
            ++seen[((static_cast<size_t>(n) * H + p) * W + q) * g.colTiles + k0 / BN];
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int row = PatchGeometry::patchRow(m, r, s, g.pitch);
                ASSERT_LT(row, g.boxRows);
                // Box row `row` holds input pixel (p0 - 1 + row / pitch, q0 - 1 + row % pitch).
                EXPECT_EQ(p0 - 1 + row / g.pitch, p + r - 1);
                EXPECT_EQ(q0 - 1 + row % g.pitch, q + s - 1);
              }
          }
        }
        for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "output " << i;
      }
}
}  // namespace
