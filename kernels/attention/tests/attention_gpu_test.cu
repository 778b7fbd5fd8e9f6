// GPU tests of the attention kernel and the attention block against float64
// host references, on fresh random inputs, NaN-poisoned outputs and cache
// rows past the step (which the kernels must neither read nor write).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cusync/error.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/block.h"
#include "kernels/gemm/gemm.h"
#include "kernels/testing/bf16_bits.h"
#include "kernels/testing/require_hopper.h"

namespace {

using cusync_testing::bf16Bits;
using cusync_testing::bf16Value;

using namespace cusync_attn;
constexpr int D = kHeadDim;

constexpr uint16_t kNaN = 0x7fc0;

std::mt19937& rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

void randomFill(std::vector<uint16_t>& bits, size_t from, size_t to, float scale) {
  std::uniform_real_distribution<float> U(-scale, scale);
  for (size_t i = from; i < to; ++i) bits[i] = bf16Bits(U(rng()));
}

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~DevBuf() { cudaFree(p); }
};

void upload(void* dst, const std::vector<uint16_t>& h) {
  ASSERT_EQ(cudaMemcpy(dst, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}
std::vector<uint16_t> download(const void* src, size_t n) {
  std::vector<uint16_t> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Causal attention in float64 from bf16 Q [M, H D] and the cache [cap, 2 H D].
std::vector<double> referenceAttention(const std::vector<uint16_t>& q, const std::vector<uint16_t>& kv, int64_t M,
                                       int64_t L, int heads) {
  const int64_t W = int64_t(heads) * D;
  std::vector<double> out(size_t(M * W));
  std::vector<double> s;
  for (int h = 0; h < heads; ++h)
    for (int64_t i = 0; i < M; ++i) {
      const int64_t keys = L + i + 1;
      s.assign(size_t(keys), 0.0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d)
          dot += double(bf16Value(q[size_t(i * W + h * D + d)])) * bf16Value(kv[size_t(j * 2 * W + h * D + d)]);
        s[size_t(j)] = dot / std::sqrt(double(D));
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (auto& v : s) sum += (v = std::exp(v - mx));
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j) acc += s[size_t(j)] * bf16Value(kv[size_t(j * 2 * W + W + h * D + d)]);
        out[size_t(i * W + h * D + d)] = acc / sum;
      }
    }
  return out;
}

// Every output element within tolerance (P and the output are rounded to bf16).
void expectClose(const std::vector<uint16_t>& got, const std::vector<double>& want, double absTol, double relTol,
                 const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = bf16Value(got[i]);
    if (!(std::fabs(g - want[i]) <= absTol + relTol * std::fabs(want[i]))) {
      if (bad < 5) ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size() << " elements off";
}

struct KernelCase {
  int64_t M, L;
  int heads;
  int splits;    // 0: automatic
  int rows = 0;  // rows per tile; 0: automatic
};

std::string describe(const KernelCase& c) {
  return "M" + std::to_string(c.M) + " L" + std::to_string(c.L) + " heads" + std::to_string(c.heads) + " splits" +
         std::to_string(c.splits) + " rows" + std::to_string(c.rows);
}

// The kernel alone: `runs` launches, then as many replays of a captured graph.
// qScale scales Q (large logits); sameKeys makes every key of a head equal.
void runKernelCase(const KernelCase& c, float qScale = 1.f, bool sameKeys = false, int runs = 2) {
  SCOPED_TRACE(describe(c));
  const int64_t W = int64_t(c.heads) * D, cap = c.L + c.M + 37;
  std::vector<uint16_t> hq(size_t(c.M * W)), hkv(size_t(cap * 2 * W), kNaN);  // rows past L + M stay NaN
  randomFill(hq, 0, hq.size(), qScale);
  randomFill(hkv, 0, size_t((c.L + c.M) * 2 * W), 1.f);
  if (sameKeys)
    for (int64_t j = 1; j < c.L + c.M; ++j)
      for (int64_t x = 0; x < W; ++x) hkv[size_t(j * 2 * W + x)] = hkv[size_t(x)];
  DevBuf q(hq.size() * 2), kv(hkv.size() * 2), out((hq.size() + W) * 2);
  upload(q.p, hq);
  upload(kv.p, hkv);
  AttentionArgs a;
  a.M = c.M, a.L = c.L, a.heads = c.heads, a.capacity = cap;
  a.Q = q.p, a.kv = kv.p, a.out = out.p, a.splits = c.splits, a.rowsPerTile = c.rows;
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const size_t wsBytes = attentionWorkspaceBytes(a, sms);
  DevBuf ws(wsBytes + 16);
  ASSERT_EQ(cudaMemset(ws.p, 0, wsBytes + 16), cudaSuccess);
  a.workspace = ws.p;
  const std::vector<double> want = referenceAttention(hq, hkv, c.M, c.L, c.heads);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  auto poisonAndCheck = [&](auto&& launch, const std::string& what) {
    ASSERT_EQ(cudaMemsetAsync(out.p, 0xff, (hq.size() + W) * 2, s), cudaSuccess);  // NaN bf16
    launch();
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    std::vector<uint16_t> got = download(out.p, hq.size() + W);
    for (int64_t x = 0; x < W; ++x) ASSERT_EQ(got[hq.size() + size_t(x)], 0xffff) << what << ": wrote past row M";
    got.resize(hq.size());
    expectClose(got, want, 6e-3, 2e-2, what);
  };
  for (int r = 0; r < runs; ++r) poisonAndCheck([&] { attention(a, s); }, "launch " + std::to_string(r));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  attention(a, s);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  for (int r = 0; r < runs; ++r)
    poisonAndCheck([&] { ASSERT_EQ(cudaGraphLaunch(ge, s), cudaSuccess); }, "graph replay " + std::to_string(r));
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  // The cache is read only.
  EXPECT_EQ(download(kv.p, hkv.size()) == hkv, true) << "the kernel wrote to the KV cache";
  cudaStreamDestroy(s);
}

class AttentionKernel : public ::testing::TestWithParam<KernelCase> {};

TEST_P(AttentionKernel, MatchesFloat64Reference) {
  REQUIRE_HOPPER();
  runKernelCase(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    RaggedShapes, AttentionKernel,
    ::testing::Values(KernelCase{1, 0, 2, 0}, KernelCase{1, 1, 2, 0}, KernelCase{1, 17, 3, 0}, KernelCase{1, 1000, 3, 0},
                      KernelCase{3, 0, 2, 0}, KernelCase{3, 17, 2, 1}, KernelCase{3, 1000, 2, 5},
                      KernelCase{100, 0, 2, 0}, KernelCase{100, 17, 3, 0}, KernelCase{100, 1000, 2, 0},
                      KernelCase{100, 1000, 2, 1}, KernelCase{64, 64, 1, 0}, KernelCase{65, 63, 1, 2},
                      KernelCase{128, 0, 2, 1}, KernelCase{300, 200, 2, 0}, KernelCase{257, 4096, 1, 0},
                      KernelCase{1, 4096, 12, 0},
                      // More splits than the combine loads at once (8).
                      KernelCase{3, 1000, 2, 12}, KernelCase{100, 1000, 2, 9}, KernelCase{1, 4096, 2, 40},
                      // Tiles of 128 rows (two consumer warpgroups), which the automatic choice takes
                      // only where they outnumber the SMs.
                      KernelCase{1, 17, 2, 0, 128}, KernelCase{100, 1000, 2, 0, 128}, KernelCase{65, 63, 1, 2, 128},
                      KernelCase{128, 0, 2, 1, 128}, KernelCase{300, 200, 2, 0, 128}, KernelCase{257, 4096, 1, 3, 128},
                      KernelCase{130, 1000, 1, 10, 128}),
    [](const ::testing::TestParamInfo<KernelCase>& i) {
      return "M" + std::to_string(i.param.M) + "_L" + std::to_string(i.param.L) + "_H" + std::to_string(i.param.heads) +
             "_S" + std::to_string(i.param.splits) + "_R" + std::to_string(i.param.rows);
    });

// Large logits: without the running maximum exp() overflows.
TEST(AttentionSoftmax, LargeLogitsStayFinite) {
  REQUIRE_HOPPER();
  runKernelCase(KernelCase{70, 300, 2, 0}, 24.f, false, 1);
  runKernelCase(KernelCase{2, 900, 2, 4}, 24.f, false, 1);
}

// Equal scores: every key of a head the same, so each row averages V.
TEST(AttentionSoftmax, EqualScoresAverageValues) {
  REQUIRE_HOPPER();
  runKernelCase(KernelCase{33, 500, 2, 0}, 1.f, true, 1);
}

TEST(AttentionKernelArgs, BadInputIsRefusedBeforeLaunch) {
  REQUIRE_HOPPER();
  DevBuf b(1 << 20);
  AttentionArgs a;
  a.M = 4, a.L = 10, a.heads = 1, a.capacity = 13, a.Q = b.p, a.kv = b.p, a.out = b.p;
  EXPECT_THROW(attention(a, nullptr), cusync::Error);  // L + M beyond the capacity
  a.capacity = 64;
  a.M = 0;
  EXPECT_THROW(attention(a, nullptr), cusync::Error);
  a.M = 4;
  a.Q = static_cast<char*>(b.p) + 2;
  EXPECT_THROW(attention(a, nullptr), cusync::Error);
  a.Q = b.p;
  a.L = 1000, a.capacity = 2000, a.splits = 4;  // splits without a workspace
  EXPECT_THROW(attention(a, nullptr), cusync::Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- The GEMM's split output, which the block's QKV projection stores
// through: bit-exact against the same GEMM into one matrix, for tile widths
// that straddle the split and 64-column chunks across it.
TEST(GemmSplitOutput, MatchesOneMatrixOutput) {
  REQUIRE_HOPPER();
  using namespace cusync_gemm;
  const int64_t M = 203, K = 256;
  for (int64_t splitN : {384, 200, 1024}) {
    const int64_t N = 1152;
    std::vector<uint16_t> ha(size_t(M * K)), hb(size_t(N * K));
    randomFill(ha, 0, ha.size(), 1.f);
    randomFill(hb, 0, hb.size(), 1.f);
    DevBuf a(ha.size() * 2), b(hb.size() * 2), whole(size_t(M * N) * 2), c1(size_t(M * splitN + 8) * 2),
        c2(size_t(M * (N - splitN) + 8) * 2);
    upload(a.p, ha);
    upload(b.p, hb);
    for (TileConfig cfg : {TileConfig::T128x144, TileConfig::T128x96, TileConfig::T64x128SplitK,
                           TileConfig::T128x256TailSplit, TileConfig::T128x176, TileConfig::T128x256}) {
      SCOPED_TRACE(std::string(toString(cfg)) + " splitN " + std::to_string(splitN));
      GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.A = a.p, g.B = b.p, g.C = whole.p, g.config = cfg;
      gemm(g, nullptr);
      ASSERT_EQ(cudaMemset(c1.p, 0xff, size_t(M * splitN + 8) * 2), cudaSuccess);
      ASSERT_EQ(cudaMemset(c2.p, 0xff, size_t(M * (N - splitN) + 8) * 2), cudaSuccess);
      g.C = c1.p, g.C2 = c2.p, g.splitN = splitN;
      gemm(g, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint16_t> w = download(whole.p, size_t(M * N)), h1 = download(c1.p, size_t(M * splitN + 8)),
                                  h2 = download(c2.p, size_t(M * (N - splitN) + 8));
      size_t bad = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t n = 0; n < N; ++n) {
          const uint16_t got = n < splitN ? h1[size_t(i * splitN + n)] : h2[size_t(i * (N - splitN) + n - splitN)];
          bad += got != w[size_t(i * N + n)];
        }
      for (int e = 0; e < 8; ++e) {
        bad += h1[size_t(M * splitN + e)] != 0xffff;
        bad += h2[size_t(M * (N - splitN) + e)] != 0xffff;
      }
      EXPECT_EQ(bad, 0u) << "elements differ from the one-matrix output or were written past the parts";
    }
  }
  GemmArgs g;
  g.M = 8, g.N = 64, g.K = 64, g.A = g.B = g.C = g.C2 = reinterpret_cast<void*>(256);
  g.splitN = 12;  // not a multiple of 8
  EXPECT_THROW(checkArgs(g), cusync::Error);
  g.splitN = 64;  // not below N
  EXPECT_THROW(checkArgs(g), cusync::Error);
  g.splitN = 0;  // C2 without a split
  EXPECT_THROW(checkArgs(g), cusync::Error);
}

// ---- The block: QKV (into the cache) -> attention -> Wo.

constexpr BlockModel kSmall{"small", 512, 2};

struct BlockCase {
  int64_t M, L;
  BlockVariant v;
};

void runBlockCase(const BlockCase& c) {
  SCOPED_TRACE("M" + std::to_string(c.M) + " L" + std::to_string(c.L) + " " + toString(c.v));
  const BlockModel m = kSmall;
  const int64_t W = m.width(), Hd = m.hidden, cap = c.L + c.M + 5;
  std::vector<uint16_t> hx(size_t(c.M * Hd)), hwqkv(size_t(3 * W * Hd)), hwo(size_t(Hd * W)),
      hkv(size_t(cap * 2 * W), kNaN);
  randomFill(hx, 0, hx.size(), 1.f);
  randomFill(hwqkv, 0, hwqkv.size(), 2.f / std::sqrt(float(Hd)));
  randomFill(hwo, 0, hwo.size(), 1.f / std::sqrt(float(W)));
  randomFill(hkv, 0, size_t(c.L * 2 * W), 1.f);  // the cached tokens; rows from L are written by the step
  DevBuf x(hx.size() * 2), wqkv(hwqkv.size() * 2), wo(hwo.size() * 2), q(size_t(c.M * W) * 2), kv(hkv.size() * 2),
      attn(size_t(c.M * W) * 2), out(size_t(c.M * Hd) * 2);
  upload(x.p, hx);
  upload(wqkv.p, hwqkv);
  upload(wo.p, hwo);
  upload(kv.p, hkv);

  // Reference: projections in float64, rounded to bf16 where the kernels store.
  std::vector<uint16_t> wantKv = hkv, wantQ(size_t(c.M * W));
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t n = 0; n < 3 * W; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < Hd; ++k) acc += double(bf16Value(hx[size_t(i * Hd + k)])) * bf16Value(hwqkv[size_t(n * Hd + k)]);
      const uint16_t b = bf16Bits(float(acc));
      if (n < W) wantQ[size_t(i * W + n)] = b;
      else wantKv[size_t((c.L + i) * 2 * W + (n - W))] = b;
    }
  const std::vector<double> wantAttn = referenceAttention(wantQ, wantKv, c.M, c.L, m.heads);
  std::vector<double> wantOut(size_t(c.M * Hd));
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t n = 0; n < Hd; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < W; ++k)
        acc += double(bf16Value(bf16Bits(float(wantAttn[size_t(i * W + k)])))) * bf16Value(hwo[size_t(n * W + k)]);
      wantOut[size_t(i * Hd + n)] = acc;
    }

  BlockBuffers b;
  b.x = x.p, b.wqkv = wqkv.p, b.wo = wo.p, b.q = q.p, b.kv = kv.p, b.capacity = cap, b.attn = attn.p, b.out = out.p;
  AttentionBlock block(m, c.M, c.L, c.v, b);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  auto check = [&](auto&& launch, const std::string& what) {
    ASSERT_EQ(cudaMemsetAsync(out.p, 0xff, size_t(c.M * Hd) * 2, s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(attn.p, 0xff, size_t(c.M * W) * 2, s), cudaSuccess);
    launch();
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const std::vector<uint16_t> gotKv = download(kv.p, hkv.size());
    size_t kvBad = 0;
    for (size_t i = 0; i < hkv.size(); ++i) {
      const bool written = i >= size_t(c.L * 2 * W) && i < size_t((c.L + c.M) * 2 * W);
      // New keys and values within one bf16 step of the reference (accumulation order), the rest untouched.
      if (written ? std::fabs(bf16Value(gotKv[i]) - bf16Value(wantKv[i])) > 1e-2 + 1e-2 * std::fabs(bf16Value(wantKv[i]))
                  : gotKv[i] != wantKv[i])
        ++kvBad;
    }
    EXPECT_EQ(kvBad, 0u) << what << ": KV cache rows off or touched outside [L, L + M)";
    expectClose(download(attn.p, size_t(c.M * W)), wantAttn, 1e-2, 3e-2, what + " attention");
    expectClose(download(out.p, size_t(c.M * Hd)), wantOut, 2e-2, 3e-2, what + " output");
  };
  for (int r = 0; r < 3; ++r) check([&] { block.run(s); }, "run " + std::to_string(r));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  block.run(s);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  for (int r = 0; r < 3; ++r)
    check([&] { ASSERT_EQ(cudaGraphLaunch(ge, s), cudaSuccess); }, "graph replay " + std::to_string(r));
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

class AttentionBlockTest : public ::testing::TestWithParam<BlockCase> {};

TEST_P(AttentionBlockTest, MatchesFloat64Reference) {
  REQUIRE_HOPPER();
  runBlockCase(GetParam());
}

// Every variant at the issue's ragged steps (M in {1, 3, 100} x L in {0, 1,
// 17, 1000}), plus two that span several query blocks.
std::vector<BlockCase> blockCases() {
  std::vector<BlockCase> v;
  for (int64_t M : {1, 3, 100})
    for (int64_t L : {0, 1, 17, 1000})
      for (BlockVariant b : {BlockVariant::Stream, BlockVariant::RowSync}) v.push_back({M, L, b});
  for (BlockVariant b : {BlockVariant::Stream, BlockVariant::RowSync}) v.push_back({300, 0, b});
  v.push_back({200, 1000, BlockVariant::RowSync});
  return v;
}

INSTANTIATE_TEST_SUITE_P(
    Steps, AttentionBlockTest, ::testing::ValuesIn(blockCases()),
    [](const ::testing::TestParamInfo<BlockCase>& i) {
      return "M" + std::to_string(i.param.M) + "_L" + std::to_string(i.param.L) + "_" + toString(i.param.v);
    });

}  // namespace
