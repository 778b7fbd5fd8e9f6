// GPU tests of the conv pairs (chain.h): every variant, over several runs
// (epochs of the stages' semaphores) and CUDA graph replays, against the
// chain without synchronization bit for bit, whose second layer is checked
// against the float64 reference on the first layer's output.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv/chain.h"
#include "kernels/conv/tests/conv_reference.h"
#include "kernels/testing/bf16_bits.h"
#include "kernels/testing/require_hopper.h"

namespace {

using cusync_testing::bf16Bits;
using cusync_testing::bf16Value;

using cusync_conv::ChainVariant;
using cusync_conv::ConvEpilogue;
using cusync_conv::ConvLayer;
using cusync_conv::ConvPair;
using cusync_conv::PairBuffers;

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

struct Buf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buf(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess); }
  ~Buf() { cudaFree(p); }
};

std::vector<uint16_t> upload(Buf& b, size_t n, float scale, std::mt19937& g) {
  std::uniform_real_distribution<float> U(-scale, scale);
  std::vector<uint16_t> h(n);
  for (uint16_t& v : h) v = bf16Bits(U(g));
  EXPECT_EQ(cudaMemcpy(b.p, h.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  return h;
}
std::vector<uint16_t> download(const Buf& b, size_t n) {
  std::vector<uint16_t> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), b.p, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}
std::vector<float> values(const std::vector<uint16_t>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = bf16Value(h[i]);
  return f;
}

struct PairCase {
  int64_t N, H, W;
  ConvLayer l1, l2;
};

std::string name(const PairCase& c) {
  return "N" + std::to_string(c.N) + " " + std::to_string(c.H) + "x" + std::to_string(c.W) + " " +
         std::to_string(c.l1.C) + "->" + std::to_string(c.l1.K) + " s" + std::to_string(c.l1.stride) + " -> " +
         std::to_string(c.l2.K) + " " + cusync_conv::toString(c.l2.epilogue);
}

void runPair(const PairCase& c) {
  SCOPED_TRACE(name(c));
  std::mt19937 g(std::random_device{}());
  ConvPair plain(c.N, c.H, c.W, c.l1, c.l2, ChainVariant::NoSync);
  PairBuffers b;
  // Weights scaled so that the first layer's outputs stay near 1 (the second
  // layer's reference reads them).
  const cusync_conv::Conv2dArgs s1 = plain.firstArgs(b), s2 = plain.secondArgs(b);
  const size_t nx = size_t(s1.N * s1.H * s1.W * s1.C), ny1 = size_t(s1.pixels() * s1.K);
  const size_t ny2 = size_t(s2.pixels() * s2.K), guard = size_t(3 * s2.K);
  const size_t nw1 = size_t(s1.K * s1.R * s1.S * s1.C), nw2 = size_t(s2.K * s2.R * s2.S * s2.C);
  Buf x(nx * 2), w1(nw1 * 2), w2(nw2 * 2), b1(size_t(s1.K) * 2), b2(size_t(s2.K) * 2), res(ny2 * 2);
  Buf y1(ny1 * 2), y2((ny2 + guard) * 2);
  upload(x, nx, 1.f, g);
  upload(w1, nw1, 2.f / std::sqrt(float(s1.R * s1.S * s1.C)), g);
  const std::vector<float> fw2 = values(upload(w2, nw2, 2.f / std::sqrt(float(s2.R * s2.S * s2.C)), g));
  upload(b1, size_t(s1.K), 0.5f, g);
  const std::vector<float> fb2 = values(upload(b2, size_t(s2.K), 0.5f, g));
  const std::vector<float> fres = values(upload(res, ny2, 1.f, g));
  b.x = x.p, b.w1 = w1.p, b.bias1 = b1.p, b.y1 = y1.p, b.w2 = w2.p, b.bias2 = b2.p, b.y2 = y2.p;
  if (c.l2.epilogue == ConvEpilogue::BiasResidualRelu) b.residual2 = res.p;

  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto poison = [&] {
    CK(cudaMemsetAsync(y1.p, 0xFF, y1.bytes, st));
    CK(cudaMemsetAsync(y2.p, 0xFF, y2.bytes, st));
  };
  // The chain without synchronization, checked against the reference.
  poison();
  ASSERT_NO_THROW(plain.run(b, st));
  CK(cudaStreamSynchronize(st));
  const std::vector<uint16_t> want = download(y2, ny2 + guard);
  {
    cusync_conv::Conv2dArgs a2 = plain.secondArgs(b);
    const std::vector<double> ref = conv_test::referenceConv(a2, values(download(y1, ny1)), fw2, fb2,
                                                             b.residual2 ? fres : std::vector<float>{});
    size_t bad = 0;
    for (size_t i = 0; i < ny2; ++i) {
      const double err = std::fabs(bf16Value(want[i]) - ref[i]) / (std::fabs(ref[i]) + 1.0);
      if (!(err <= 1.0 / 128) && bad++ < 5) ADD_FAILURE() << "output " << i << ": " << bf16Value(want[i]) << " vs " << ref[i];
    }
    ASSERT_EQ(bad, 0u);
    for (size_t i = ny2; i < ny2 + guard; ++i) ASSERT_EQ(want[i], 0xFFFFu) << "guard written";
  }
  // The fused pair's one A loader cannot walk packed filter taps (C = 8).
  const bool packed = c.l1.C == 8 || c.l2.C == 8;
  if (packed) EXPECT_THROW(ConvPair(c.N, c.H, c.W, c.l1, c.l2, ChainVariant::Fused), cusync::Error);
  for (ChainVariant v : {ChainVariant::Pdl, ChainVariant::TileSync, ChainVariant::Fused}) {
    for (cusync::LaunchMode mode : {cusync::LaunchMode::Pdl, cusync::LaunchMode::Serial}) {
      // A fused pair is one kernel: the launch mode does not apply.
      if (v == ChainVariant::Fused && (packed || mode == cusync::LaunchMode::Serial)) continue;
      SCOPED_TRACE(std::string(cusync_conv::toString(v)) + (mode == cusync::LaunchMode::Serial ? "@serial" : ""));
      ConvPair p(c.N, c.H, c.W, c.l1, c.l2, v, mode);
      // Runs back to back (the stages' run numbers advance), each checked.
      for (int run = 0; run < 3; ++run) {
        poison();
        ASSERT_NO_THROW(p.run(b, st));
        CK(cudaStreamSynchronize(st));
        ASSERT_EQ(download(y2, ny2 + guard), want) << "run " << run << " differs from the chain without sync";
      }
      // The same run captured once and replayed.
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      p.run(b, st);
      CK(cudaStreamEndCapture(st, &graph));
      CK(cudaGraphInstantiate(&exec, graph, 0));
      for (int replay = 0; replay < 3; ++replay) {
        poison();
        CK(cudaGraphLaunch(exec, st));
        CK(cudaStreamSynchronize(st));
        ASSERT_EQ(download(y2, ny2 + guard), want) << "graph replay " << replay << " differs";
      }
      CK(cudaGraphExecDestroy(exec));
      CK(cudaGraphDestroy(graph));
    }
  }
  CK(cudaStreamDestroy(st));
}

class ConvChainGpu : public ::testing::TestWithParam<PairCase> {};

TEST_P(ConvChainGpu, VariantsMatchTheChainWithoutSync) {
  REQUIRE_HOPPER();
  runPair(GetParam());
}

const ConvLayer k3x3_64{64, 64, 3, 1, 1, ConvEpilogue::BiasRelu};

INSTANTIATE_TEST_SUITE_P(
    Pairs, ConvChainGpu,
    ::testing::Values(PairCase{3, 13, 13, k3x3_64, k3x3_64},
                      PairCase{1, 14, 14, {64, 128, 3, 1, 2, ConvEpilogue::BiasRelu}, {128, 128, 3, 1, 1, ConvEpilogue::BiasResidualRelu}},
                      PairCase{2, 56, 56, k3x3_64, {64, 64, 3, 1, 1, ConvEpilogue::BiasResidualRelu}},
                      PairCase{1, 7, 7, {512, 512, 3, 1, 1, ConvEpilogue::BiasRelu}, {512, 512, 3, 1, 1, ConvEpilogue::BiasRelu}},
                      PairCase{4, 28, 28, {128, 128, 3, 1, 1, ConvEpilogue::BiasRelu}, {128, 256, 1, 0, 1, ConvEpilogue::Bias}},
                      PairCase{1, 1, 1, k3x3_64, k3x3_64},
                      // Several waves of tiles per layer (fused: blocks run units of both layers).
                      PairCase{16, 28, 28, {128, 128, 3, 1, 1, ConvEpilogue::BiasRelu}, {128, 128, 3, 1, 1, ConvEpilogue::BiasRelu}},
                      // VGG's first pair: 8 input channels (filter taps packed) into 64.
                      PairCase{2, 30, 30, {8, 64, 3, 1, 1, ConvEpilogue::BiasRelu}, k3x3_64}),
    [](const ::testing::TestParamInfo<PairCase>& i) { return "pair" + std::to_string(i.index); });

TEST(ConvChainArgs, MismatchedChannelsThrow) {
  REQUIRE_HOPPER();
  try {
    ConvPair p(1, 14, 14, k3x3_64, {128, 128, 3, 1, 1, ConvEpilogue::BiasRelu}, ChainVariant::TileSync);
    ADD_FAILURE() << "a pair whose second layer reads 128 channels of a 64-channel output was accepted";
  } catch (const cusync::Error& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }
}

TEST(ConvChainArgs, PackedFilterTapsCannotWait) {
  REQUIRE_HOPPER();
  // A second layer of 8 channels packs its filter taps, so it cannot wait
  // tile by tile; without synchronization the pair runs.
  const ConvLayer to8{64, 8, 3, 1, 1, ConvEpilogue::BiasRelu}, from8{8, 64, 3, 1, 1, ConvEpilogue::BiasRelu};
  for (ChainVariant v : {ChainVariant::Pdl, ChainVariant::TileSync, ChainVariant::Fused}) {
    try {
      ConvPair p(1, 14, 14, to8, from8, v);
      ADD_FAILURE() << "a waiting layer with 8 input channels was accepted (" << toString(v) << ")";
    } catch (const cusync::Error& e) {
      EXPECT_NE(std::string(e.what()).find("C = 8"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(ConvPair(1, 14, 14, to8, from8, ChainVariant::NoSync));
}

}  // namespace
