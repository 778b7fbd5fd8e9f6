// The policies generated from the workload specs are the hand-written ones:
// same semaphores, same index maps, same wait values and the same waits at
// every consumer step, over the real grids at several M.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "conv2d_chain.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "gpt3_attention.h"
#include "gpt3_mlp.h"
#include "gpt3_mlp_rowsync.h"
#include "llama_attention.h"
#include "llama_mlp.h"
#include "model.h"

namespace {

using cusync::Dim3;
using cusync::StageShape;

const uint32_t kMs[] = {1, 64, 200, 256, 1024, 2048};

// The spec's shape with the rows (grid.y) recomputed for M rows.
StageShape withRows(StageShape s, uint32_t rows) {
  s.grid.y = cusync::ceilDiv(rows, s.tile.y);
  return s;
}

std::set<uint32_t> sems(const cusync::SemSpan& s) {
  std::set<uint32_t> out;
  for (uint32_t i = 0; i < s.count(); ++i) out.insert(s.at(i));
  return out;
}

// Producer side: semaphores, index map, posts and wait values.
template <class Gen, class Hand>
void expectSamePosts(const Gen& g, const Hand& h, const StageShape& prod) {
  ASSERT_EQ(g.semaphoreCount(prod), h.semaphoreCount(prod));
  for (uint32_t z = 0; z < prod.grid.z; ++z)
    for (uint32_t y = 0; y < prod.grid.y; ++y)
      for (uint32_t x = 0; x < prod.grid.x; ++x) {
        const Dim3 t(x, y, z);
        ASSERT_EQ(g.tileIndex(t, prod), h.tileIndex(t, prod)) << cusync::tileName(t);
        ASSERT_EQ(g.postValue(t, prod), h.postValue(t, prod));
      }
  for (uint32_t s = 0; s < h.semaphoreCount(prod); ++s) ASSERT_EQ(g.waitValue(s, prod), h.waitValue(s, prod)) << s;
}

// Consumer side: the waits of every step of every walk that starts at one of `starts`.
template <class Gen, class Hand>
void expectSameWaits(const Gen& g, const Hand& h, const StageShape& cons, const StageShape& prod,
                     const std::vector<uint32_t>& starts) {
  ASSERT_EQ(g.readExtent(prod), h.readExtent(prod));
  ASSERT_EQ(g.checkPair(cons, prod), nullptr);
  ASSERT_EQ(h.checkPair(cons, prod), nullptr);
  const uint32_t extent = h.readExtent(prod);
  for (uint32_t z = 0; z < cons.grid.z; ++z)
    for (uint32_t y = 0; y < cons.grid.y; ++y)
      for (uint32_t ws : starts)
        for (uint32_t col = ws; col < extent; col += cons.tile.z) {
          const cusync::Read r{col, y * cons.tile.y, z, ws};
          ASSERT_EQ(sems(g.waitSpan(r, cons, prod)), sems(h.waitSpan(r, cons, prod)))
              << "row tile " << y << " col " << col << " walkStart " << ws;
          ASSERT_EQ(g.isSync(r, cons, prod), h.isSync(r, cons, prod));
        }
}

TEST(Equivalence, Gpt3MlpIsTileSync) {
  for (uint32_t M : kMs) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const StageShape p = withRows(gpt3_mlp::gemm1_shape, M), c = withRows(gpt3_mlp::gemm2_shape, M);
    expectSamePosts(gpt3_mlp::gemm1_out{}, cusync::policy::TileSync{}, p);
    expectSamePosts(gpt3_mlp::gemm2_in{}, cusync::policy::TileSync{}, p);
    // Split-K walks too: starting at any k-block.
    expectSameWaits(gpt3_mlp::gemm2_in{}, cusync::policy::TileSync{}, c, p, {0, 32, 1600, 3072});
  }
}

TEST(Equivalence, Gpt3MlpRowVariantIsRowSync) {
  for (uint32_t M : kMs) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const StageShape p = withRows(gpt3_mlp_rowsync::gemm1_shape, M), c = withRows(gpt3_mlp_rowsync::gemm2_shape, M);
    expectSamePosts(gpt3_mlp_rowsync::gemm1_out{}, cusync::policy::RowSync{}, p);
    expectSameWaits(gpt3_mlp_rowsync::gemm2_in{}, cusync::policy::RowSync{}, c, p, {0, 3072});
  }
}

TEST(Equivalence, LlamaMlpIsStridedTileSync) {
  const cusync::policy::StridedTileSync hand{43, 2};
  for (uint32_t M : kMs) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const StageShape p = withRows(llama_mlp::gemm1_shape, M), c = withRows(llama_mlp::gemm2_shape, M);
    expectSamePosts(llama_mlp::gemm1_out{}, hand, p);
    expectSameWaits(llama_mlp::gemm2_in{}, hand, c, p, {0, 64, 1376});
  }
}

// The QKV row semaphores that attention tile (row tile i, any head) waits
// for: every row of QKV tiles holding new tokens 0 .. (i + 1) * BM - 1, the
// keys it reads causally (its queries among them).
std::set<uint32_t> causalRows(const StageShape& qkv, const StageShape& attn, uint32_t M, uint32_t i) {
  std::set<uint32_t> out;
  const uint32_t end = std::min(M, (i + 1) * attn.tile.y);
  for (uint32_t t = 0; t * qkv.tile.y < end; ++t) out.insert(t);
  return out;
}

// Attention: the QKV projection posts per row of tiles (RowSync), each
// attention tile waits for its causal rows in one step that starts at its
// head's column, and the output projection waits once per tile for the
// attention's rows (RowSync), split-K walks included.
template <class QkvOut, class AttnIn, class AttnOut, class WoIn>
void expectAttentionPolicies(const StageShape& qkv0, const StageShape& attn0, const StageShape& wo0) {
  for (uint32_t M : kMs) {
    SCOPED_TRACE("M=" + std::to_string(M));
    const StageShape q = withRows(qkv0, M), a = withRows(attn0, M), o = withRows(wo0, M);
    expectSamePosts(QkvOut{}, cusync::policy::RowSync{}, q);
    ASSERT_EQ(AttnIn{}.checkPair(a, q), nullptr);
    for (uint32_t i = 0; i < a.grid.y; ++i)
      for (uint32_t j = 0; j < a.grid.x; ++j) {
        const cusync::Read r{j * a.tile.x, i * a.tile.y, 0, j * a.tile.x};
        ASSERT_EQ(sems(AttnIn{}.waitSpan(r, a, q)), causalRows(q, a, M, i)) << "query block " << i << " head " << j;
      }
    expectSamePosts(AttnOut{}, cusync::policy::RowSync{}, a);
    expectSameWaits(WoIn{}, cusync::policy::RowSync{}, o, a, {0, 64, 512});
  }
}

TEST(Equivalence, AttentionWaitsForTheCausalRows) {
  {
    SCOPED_TRACE("gpt3");
    namespace g = gpt3_attention;
    expectAttentionPolicies<g::qkv_out, g::attn_in, g::attn_out, g::wo_in>(g::qkv_shape, g::attn_shape, g::wo_shape);
  }
  {
    SCOPED_TRACE("llama");
    namespace l = llama_attention;
    expectAttentionPolicies<l::qkv_out, l::attn_in, l::attn_out, l::wo_in>(l::qkv_shape, l::attn_shape, l::wo_shape);
  }
}

TEST(Equivalence, Conv2dChainIsConv2DTileSync) {
  const cusync::policy::Conv2DTileSync hand{3, 3, 256, 14, 1, 1};
  for (uint32_t images : {1u, 2u, 8u, 32u}) {
    SCOPED_TRACE("N=" + std::to_string(images));
    const uint32_t rows = images * 14 * 14;
    const StageShape p = withRows(conv2d_chain::conv1_shape, rows), c = withRows(conv2d_chain::conv2_shape, rows);
    expectSamePosts(conv2d_chain::conv1_out{}, hand, p);
    // The derived policy waits channel tile by channel tile along the first
    // filter position; the hand-written one waits for the same tiles all at
    // its walk's first step (policy/conv2d_tile_sync.h says why): over a walk
    // from the start, its one wait is the union of the derived ones.
    const conv2d_chain::conv2_in derived{};
    ASSERT_EQ(derived.readExtent(p), hand.readExtent(p));
    ASSERT_EQ(derived.checkPair(c, p), nullptr);
    ASSERT_EQ(hand.checkPair(c, p), nullptr);
    for (uint32_t y = 0; y < c.grid.y; ++y) {
      std::set<uint32_t> all;
      for (uint32_t col = 0; col < hand.readExtent(p); col += c.tile.z) {
        const cusync::Read r{col, y * c.tile.y, 0, 0};
        const std::set<uint32_t> d = sems(derived.waitSpan(r, c, p));
        all.insert(d.begin(), d.end());
        if (col > 0) ASSERT_TRUE(sems(hand.waitSpan(r, c, p)).empty()) << "row tile " << y << " col " << col;
      }
      ASSERT_EQ(sems(hand.waitSpan(cusync::Read{0, y * c.tile.y, 0, 0}, c, p)), all) << "row tile " << y;
    }
  }
}

// rows(G) is BatchedRowSync; checked through the library, from a spec string.
TEST(Equivalence, RowsGroupIsBatchedRowSync) {
  for (uint32_t group : {2u, 3u}) {
    const std::string spec = "param M = 1000\n"
                             "stage p grid(8, cdiv(M, 64)) tile(64, 64, 32)\n  output H[M, 512]\n"
                             "  writes H[i*64 : (i+1)*64, j*64 : (j+1)*64]\n"
                             "stage c grid(4, cdiv(M, 64)) tile(64, 64, 32)\n  output O[M, 256]\n"
                             "  writes O[i*64 : (i+1)*64, j*64 : (j+1)*64]\n  walk k < 16\n"
                             "  reads H[i*64 : (i+1)*64, k*32 : (k+1)*32]\n  sync H rows(" +
                             std::to_string(group) + ")\n";
    const cusyncgen::Model m = cusyncgen::compile(spec);
    const cusyncgen_rt::RulesPolicy in{m.edges[0].rules}, out{m.outRules[0]};
    const cusync::policy::BatchedRowSync hand{group};
    expectSamePosts(out, hand, m.shapes[0]);
    expectSameWaits(in, hand, m.shapes[1], m.shapes[0], {0, 64});
  }
}

// The generated structs plug into cusync::Stage and pass cusync::pair's checks.
TEST(Equivalence, GeneratedPoliciesPairInStages) {
  using cusync::HostMemory;
  using cusync::policy::NoSync;
  const StageShape q = gpt3_attention::qkv_shape, a = gpt3_attention::attn_shape, o = gpt3_attention::wo_shape;
  cusync::Stage<NoSync, gpt3_attention::qkv_out, HostMemory> s1("qkv", q.grid, q.tile);
  cusync::Stage<gpt3_attention::attn_in, gpt3_attention::attn_out, HostMemory> s2("attn", a.grid, a.tile);
  cusync::Stage<gpt3_attention::wo_in, NoSync, HostMemory> s3("wo", o.grid, o.tile);
  s1.setOrder(gpt3_attention::qkv_order{});
  s2.setOrder(gpt3_attention::attn_order{});
  s3.setOrder(gpt3_attention::wo_order{});
  EXPECT_NO_THROW(cusync::pair(s1, s2, gpt3_attention::attn_in::from_qkv()));
  EXPECT_NO_THROW(cusync::pair(s2, s3));
}

}  // namespace
