// CPU tests of the attention block's plan (planBlock) at the benchmark's
// decode and prefill shapes, and of the GEMM's split output that its QKV
// projection stores Q and the new keys and values through.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cusync/error.h"
#include "kernels/attention/tests/block_shapes.h"
#include "kernels/attention/block_plan.h"
#include "kernels/gemm/gemm.h"

namespace {

using namespace cusync_attn;
using cusync_gemm::GemmArgs;
using cusync_gemm::TileConfig;

// Distinct fake device addresses, 16-byte aligned: planning reads no memory.
void* fake(uintptr_t slot) { return reinterpret_cast<void*>(slot << 24); }

BlockBuffers fakeBuffers(int64_t capacity) {
  BlockBuffers b;
  b.x = fake(1), b.wqkv = fake(2), b.wo = fake(3), b.q = fake(4), b.kv = fake(5), b.attn = fake(6), b.out = fake(7);
  b.capacity = capacity;
  return b;
}

using cusync_attn::test_shapes::benchmarkShapes;
using cusync_attn::test_shapes::Shape;

void expectConsistent(const BlockModel& m, const Shape& s, int sms) {
  SCOPED_TRACE(std::string(m.name) + " M=" + std::to_string(s.M) + " L=" + std::to_string(s.L) + " on " +
               std::to_string(sms) + " SMs");
  const BlockBuffers b = fakeBuffers(s.L + s.M);
  const BlockPlan p = planBlock(m, s.M, s.L, sms, b);
  const int64_t W = m.width();

  // QKV: Q to its buffer, K and V to cache rows [L, L + M) (row width 2W, bf16).
  const GemmArgs& q = p.qkv;
  EXPECT_EQ(q.M, s.M);
  EXPECT_EQ(q.N, 3 * W);
  EXPECT_EQ(q.K, m.hidden);
  EXPECT_EQ(q.A, b.x);
  EXPECT_EQ(q.B, b.wqkv);
  EXPECT_EQ(q.C, b.q);
  EXPECT_EQ(q.C2, static_cast<unsigned char*>(b.kv) + s.L * 2 * W * 2);
  EXPECT_EQ(q.splitN, W);
  ASSERT_NE(q.config, TileConfig::Auto);
  EXPECT_TRUE(cusync_gemm::runsInStages(q.config)) << cusync_gemm::toString(q.config);
  EXPECT_NO_THROW(cusync_gemm::checkArgs(q));
  EXPECT_EQ(p.qkvGrid, cusync_gemm::stageGrid(q, q.config));
  EXPECT_EQ(p.qkvTile, cusync_gemm::stageTile(q, q.config));
  EXPECT_GE(int64_t(p.qkvGrid.x) * p.qkvTile.x, 3 * W);  // RowSync: a row of tiles holds every head's Q, K and V
  EXPECT_GE(int64_t(p.qkvGrid.y) * p.qkvTile.y, s.M);
  EXPECT_LT(int64_t(p.qkvGrid.y - 1) * p.qkvTile.y, s.M);

  // Attention over the cache, into the Wo input.
  const AttentionArgs& a = p.attention;
  EXPECT_EQ(a.M, s.M);
  EXPECT_EQ(a.L, s.L);
  EXPECT_EQ(a.heads, m.heads);
  EXPECT_EQ(a.Q, b.q);
  EXPECT_EQ(a.kv, b.kv);
  EXPECT_EQ(a.out, b.attn);
  const AttentionPlan ap = planAttention(a, sms);
  EXPECT_EQ(p.attentionPlan.splits, ap.splits);
  EXPECT_EQ(p.attentionPlan.stageGrid, cusync::Dim3(static_cast<uint32_t>(m.heads), ap.queryBlocks));
  EXPECT_EQ(p.attentionPlan.stageTile, cusync::Dim3(128, static_cast<uint32_t>(ap.rowsPerTile), 128));

  // Wo: reads the attention output (RowSync on the attention tiles' rows).
  const GemmArgs& o = p.wo;
  EXPECT_EQ(o.M, s.M);
  EXPECT_EQ(o.N, m.hidden);
  EXPECT_EQ(o.K, W);
  EXPECT_EQ(o.A, b.attn);
  EXPECT_EQ(o.B, b.wo);
  EXPECT_EQ(o.C, b.out);
  EXPECT_EQ(o.C2, nullptr);
  EXPECT_TRUE(cusync_gemm::runsInStages(o.config)) << cusync_gemm::toString(o.config);
  EXPECT_EQ(p.woGrid, cusync_gemm::stageGrid(o, o.config));
  EXPECT_EQ(p.woTile, cusync_gemm::stageTile(o, o.config));
  EXPECT_GE(int64_t(p.woGrid.x) * p.woTile.x, m.hidden);
  EXPECT_GE(int64_t(p.woGrid.y) * p.woTile.y, s.M);
  ASSERT_GT(p.woTile.z, 0u);
  EXPECT_EQ(128 % p.woTile.z, 0u);
}

TEST(BlockPlan, ConsistentAtDecodeAndPrefill) {
  for (const BlockModel* m : {&kGpt3Block, &kLlamaBlock})
    for (int sms : {132, 114, 78})
      for (const Shape& s : benchmarkShapes()) {
        expectConsistent(*m, s, sms);
        if (HasFailure()) return;
      }
}

TEST(BlockPlan, ModelWidths) {
  EXPECT_EQ(kGpt3Block.width(), 1536);
  EXPECT_EQ(kLlamaBlock.width(), 1024);
}

void expectPlanRefused(const BlockModel& m, int64_t M, int64_t L, const BlockBuffers& b, const std::string& what) {
  try {
    planBlock(m, M, L, 132, b);
    ADD_FAILURE() << "planned; expected an error about: " << what;
  } catch (const cusync::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(BlockPlan, RefusesWhatTheKernelsRefuse) {
  expectPlanRefused(kGpt3Block, 0, 1024, fakeBuffers(2048), "M = 0");
  expectPlanRefused(kGpt3Block, 256, 1024, fakeBuffers(1024 + 255), "capacity");
  BlockBuffers b = fakeBuffers(2048);
  b.kv = nullptr;
  expectPlanRefused(kGpt3Block, 8, 1024, b, "non-null");
  b = fakeBuffers(2048);
  b.wo = static_cast<unsigned char*>(fake(3)) + 8;
  expectPlanRefused(kGpt3Block, 8, 1024, b, "B is not 16-byte aligned");
  expectPlanRefused(BlockModel{"odd", 1000 + 4, 8}, 8, 1024, fakeBuffers(2048), "multiple of 8");
}

// The split output's arguments (GemmArgs::C2, splitN), as the QKV projection sets them.
alignas(16) unsigned char buf[64];

GemmArgs splitArgs() {
  GemmArgs a;
  a.M = 256, a.N = 4608, a.K = 12288;
  a.A = a.B = a.C = a.C2 = buf;
  a.splitN = 1536;
  return a;
}

void expectBad(const GemmArgs& a, const std::string& what) {
  try {
    cusync_gemm::checkArgs(a);
    ADD_FAILURE() << "accepted; expected an error about: " << what;
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(GemmSplitOutput, ArgumentChecks) {
  EXPECT_NO_THROW(cusync_gemm::checkArgs(splitArgs()));
  GemmArgs a = splitArgs();
  a.splitN = 0;
  expectBad(a, "C2 is set but splitN is 0");
  a = splitArgs(), a.C2 = nullptr;
  expectBad(a, "C2 (columns [splitN, N)) is null");
  a = splitArgs(), a.C2 = buf + 8;
  expectBad(a, "C2 is not 16-byte aligned");
  for (int64_t n : {int64_t(100), int64_t(-64), int64_t(4608), int64_t(8192)}) {
    a = splitArgs(), a.splitN = n;
    expectBad(a, "splitN = " + std::to_string(n) + ": a split output needs a positive multiple of 8 below N");
  }
  a = splitArgs(), a.epilogue = cusync_gemm::Epilogue::SwiGLU;
  expectBad(a, "cannot run SwiGLU");
}

// Every configuration stores a split at any multiple of 8 (a 64-column
// chunk across it goes out in two stores), so the split changes neither the
// argument checks of an explicit configuration nor the heuristic's choice.
TEST(GemmSplitOutput, EveryConfigurationStoresIt) {
  using namespace cusync_gemm;
  for (const TileConfigRow& r : kTileConfigs) {
    if (!runsAsGemm(r.config)) continue;  // the convolution's rows
    for (int64_t n : {int64_t(8), int64_t(1000), int64_t(1536), int64_t(4600)}) {
      GemmArgs a = splitArgs();
      a.config = r.config;
      a.splitN = n;
      EXPECT_NO_THROW(checkArgs(a)) << r.name << " splitN " << n;
    }
  }
  for (const BlockModel* m : {&kGpt3Block, &kLlamaBlock})
    for (int sms : {132, 114, 78})
      for (int64_t M : {1, 64, 128, 256, 512, 1024, 2048, 4096}) {
        GemmArgs a;
        a.M = M, a.N = 3 * m->width(), a.K = m->hidden;
        a.A = a.B = a.C = a.C2 = buf;
        a.splitN = m->width();
        GemmArgs plain = a;
        plain.C2 = nullptr, plain.splitN = 0;
        EXPECT_EQ(resolveConfig(a, sms, LaunchContext::Stage), resolveConfig(plain, sms, LaunchContext::Stage))
            << m->name << " M=" << M << " on " << sms << " SMs";
      }
}

}  // namespace
