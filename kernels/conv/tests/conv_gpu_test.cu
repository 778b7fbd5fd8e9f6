// GPU tests of conv2d: every configuration, filter size, stride, padding and
// epilogue against the float64 host reference at odd shapes, on fresh random
// inputs with a NaN-poisoned output and guard pixels after it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/conv/tests/conv_reference.h"
#include "kernels/testing/bf16_bits.h"
#include "kernels/testing/require_hopper.h"

namespace {

using cusync_testing::bf16Bits;
using cusync_testing::bf16Value;

using cusync_conv::Conv2dArgs;
using cusync_conv::ConvEpilogue;
using cusync_gemm::TileConfig;


struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~DevBuf() { cudaFree(p); }
};

std::mt19937& rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

// Random bf16 values in [-1, 1): their bits for the GPU, their values for the reference.
void randomBf16(size_t n, std::vector<uint16_t>& bits, std::vector<float>& vals) {
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  bits.resize(n);
  vals.resize(n);
  for (size_t i = 0; i < n; ++i) vals[i] = bf16Value(bits[i] = bf16Bits(U(rng())));
}

struct Shape {
  int64_t N, H, W, C, K;
  int R, pad, stride;
};

std::string describe(const Shape& s, TileConfig c, ConvEpilogue e) {
  return "N" + std::to_string(s.N) + " H" + std::to_string(s.H) + " W" + std::to_string(s.W) + " C" +
         std::to_string(s.C) + " K" + std::to_string(s.K) + " " + std::to_string(s.R) + "x" + std::to_string(s.R) +
         " pad " + std::to_string(s.pad) + " stride " + std::to_string(s.stride) + " " +
         (c == TileConfig::Auto ? "auto" : cusync_gemm::toString(c)) + " " + cusync_conv::toString(e);
}

// Runs one conv and checks it against the reference; `repeats` launches in a
// row on the same output (the stage's tickets across runs).
void runConv(const Shape& s, TileConfig cfg, ConvEpilogue epi, bool withBias, int repeats = 1) {
  SCOPED_TRACE(describe(s, cfg, epi));
  Conv2dArgs a;
  a.N = s.N, a.H = s.H, a.W = s.W, a.C = s.C, a.K = s.K;
  a.R = a.S = s.R;
  a.padH = a.padW = s.pad;
  a.strideH = a.strideW = s.stride;
  a.epilogue = epi;
  a.config = cfg;
  const size_t nx = size_t(s.N * s.H * s.W * s.C), nw = size_t(s.K * s.R * s.R * s.C);
  const size_t ny = size_t(a.pixels() * s.K), guard = size_t(5 * s.K);
  std::vector<uint16_t> hx, hw, hb, hr;
  std::vector<float> fx, fw, fb, fr;
  randomBf16(nx, hx, fx);
  randomBf16(nw, hw, fw);
  randomBf16(size_t(s.K), hb, fb);
  randomBf16(ny, hr, fr);
  if (!withBias) fb.clear();
  if (epi != ConvEpilogue::BiasResidualRelu) fr.clear();
  DevBuf dx(nx * 2), dw(nw * 2), db(size_t(s.K) * 2), dr(ny * 2), dy((ny + guard) * 2);
  ASSERT_EQ(cudaMemcpy(dx.p, hx.data(), nx * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw.p, hw.data(), nw * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.p, hb.data(), size_t(s.K) * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dr.p, hr.data(), ny * 2, cudaMemcpyHostToDevice), cudaSuccess);
  a.x = dx.p, a.w = dw.p, a.y = dy.p;
  a.bias = withBias ? db.p : nullptr;
  a.residual = epi == ConvEpilogue::BiasResidualRelu ? dr.p : nullptr;
  const std::vector<double> ref = conv_test::referenceConv(a, fx, fw, fb, fr);
  for (int run = 0; run < repeats; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    ASSERT_EQ(cudaMemset(dy.p, 0xFF, (ny + guard) * 2), cudaSuccess);  // NaN poison, guard pixels included
    ASSERT_NO_THROW(cusync_conv::conv2d(a, nullptr));
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> hy(ny + guard);
    ASSERT_EQ(cudaMemcpy(hy.data(), dy.p, hy.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    // bf16 rounding of the output (2^-8 relative) plus fp32 accumulation
    // over up to R S C terms of magnitude <= 1.
    const double tol = 1.0 / 128;
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < ny; ++i) {
      const double got = bf16Value(hy[i]), want = ref[i];
      const double err = std::fabs(got - want) / (std::fabs(want) + 1.0);
      if (!(err <= tol)) {
        if (bad < 5)
          ADD_FAILURE() << "pixel " << i / size_t(s.K) << " channel " << i % size_t(s.K) << ": got " << got
                        << ", want " << want;
        ++bad;
      }
      if (err > worst) worst = err;
    }
    EXPECT_EQ(bad, 0u) << "of " << ny << " outputs wrong; worst relative error " << worst;
    for (size_t i = ny; i < ny + guard; ++i)
      ASSERT_EQ(hy[i], 0xFFFFu) << "guard element " << i - ny << " after the output was written";
  }
}

struct Case {
  Shape shape;
  TileConfig config;
  ConvEpilogue epilogue;
  bool bias;
};

class ConvGpu : public ::testing::TestWithParam<Case> {};

TEST_P(ConvGpu, MatchesFloat64Reference) {
  REQUIRE_HOPPER();
  const Case& c = GetParam();
  runConv(c.shape, c.config, c.epilogue, c.bias);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // Odd shapes: 7x7 and 13x13 images, a 1x1 image, one and three images,
  // channels below one k-block (8), past ten (520), and whole ones.
  const Shape shapes[] = {
      {1, 7, 7, 64, 64, 3, 1, 1},     {3, 13, 13, 8, 64, 3, 1, 1},  {1, 13, 13, 520, 128, 3, 1, 1},
      {3, 7, 7, 64, 136, 3, 1, 2},    {1, 13, 13, 72, 64, 3, 1, 2}, {3, 1, 1, 64, 64, 3, 1, 1},
      {1, 13, 13, 64, 256, 1, 0, 1},  {3, 13, 13, 128, 64, 1, 0, 2}, {1, 7, 7, 8, 8, 3, 0, 1},
      {2, 28, 28, 64, 64, 3, 1, 1},
      // 8 channels pack eight filter positions into a k-block: one k-block
      // with seven repeated positions (1x1), and a stride-2 3x3.
      {3, 13, 13, 8, 64, 1, 0, 2},    {2, 30, 30, 8, 128, 3, 1, 2},
  };
  for (TileConfig cfg : {TileConfig::T128x64, TileConfig::T128x128, TileConfig::T128x256, TileConfig::T64x128SplitK,
                         TileConfig::T128x256TailSplit})
    for (const Shape& s : shapes) v.push_back({s, cfg, ConvEpilogue::BiasRelu, true});
  // The filter resident: every shape above whose filter fits (64 output
  // channels or fewer, at most 9 k-blocks; packed taps included).
  for (const Shape& s : shapes) {
    Conv2dArgs a;
    a.N = s.N, a.H = s.H, a.W = s.W, a.C = s.C, a.K = s.K, a.R = a.S = s.R;
    if (cusync_conv::filterFitsResident(a)) v.push_back({s, TileConfig::T128x64Resident, ConvEpilogue::BiasRelu, true});
  }
  for (ConvEpilogue e : {ConvEpilogue::Bias, ConvEpilogue::BiasRelu, ConvEpilogue::BiasResidualRelu})
    for (bool bias : {false, true}) {
      v.push_back({{3, 13, 13, 64, 128, 3, 1, 1}, TileConfig::Auto, e, bias});
      v.push_back({{1, 7, 7, 256, 64, 1, 0, 2}, TileConfig::T64x128SplitK, e, bias});
    }
  // The layers of the benchmark's chains, at batch 1 (their configuration by convConfig).
  for (const Shape& s : {Shape{1, 56, 56, 64, 64, 3, 1, 1}, Shape{1, 28, 28, 128, 128, 3, 1, 1},
                         Shape{1, 14, 14, 256, 256, 3, 1, 1}, Shape{1, 7, 7, 512, 512, 3, 1, 1},
                         Shape{1, 56, 56, 64, 128, 3, 1, 2}})
    v.push_back({s, TileConfig::Auto, ConvEpilogue::BiasRelu, true});
  return v;
}

std::string caseName(const ::testing::TestParamInfo<Case>& i) {
  std::string n = describe(i.param.shape, i.param.config, i.param.epilogue) + (i.param.bias ? "" : " nobias") + "_" +
                  std::to_string(i.index);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(All, ConvGpu, ::testing::ValuesIn(cases()), caseName);

TEST(ConvGpuRuns, RepeatedLaunchesOnOneStage) {
  REQUIRE_HOPPER();
  // The same launch five times: the NoSync stage's tickets carry over runs.
  runConv({3, 13, 13, 64, 128, 3, 1, 1}, TileConfig::T64x128SplitK, ConvEpilogue::BiasRelu, true, 5);
  runConv({2, 28, 28, 64, 64, 3, 1, 1}, TileConfig::T128x64, ConvEpilogue::BiasRelu, true, 5);
  runConv({2, 28, 28, 64, 64, 3, 1, 1}, TileConfig::T128x64Resident, ConvEpilogue::BiasRelu, true, 5);
  runConv({1, 14, 14, 512, 512, 3, 1, 1}, TileConfig::T128x256TailSplit, ConvEpilogue::BiasRelu, true, 5);
}

TEST(ConvGpuRuns, BadInputThrowsBeforeLaunch) {
  REQUIRE_HOPPER();
  Conv2dArgs a;
  a.N = 1, a.H = a.W = 7, a.C = 12, a.K = 64;
  DevBuf buf(1 << 20);
  a.x = a.w = a.y = buf.p;
  try {
    cusync_conv::conv2d(a, nullptr);
    ADD_FAILURE() << "C = 12 was accepted";
  } catch (const cusync::Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 8"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
