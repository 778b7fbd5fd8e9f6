// CPU tests of the attention kernel's host side: argument checks name the
// problem, the plan (rows per tile, query blocks, key splits, stage shape),
// the workspace size, the causal key range of a query block and where an
// item loads Q among its key blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cusync/error.h"
#include "kernels/attention/attention.h"

namespace {

using cusync_attn::AttentionArgs;
using cusync_attn::AttentionPlan;
using cusync_attn::attentionWorkspaceBytes;
using cusync_attn::checkArgs;
using cusync_attn::keyBlocksBeforeQ;
using cusync_attn::keysOfQueryBlock;
using cusync_attn::planAttention;

alignas(16) unsigned char buffer[64];

AttentionArgs good(int64_t M = 8, int64_t L = 1024, int heads = 12) {
  AttentionArgs a;
  a.M = M, a.L = L, a.heads = heads, a.capacity = L + M;
  a.Q = a.kv = a.out = buffer;
  return a;
}

void expectBad(const AttentionArgs& a, const std::string& what) {
  try {
    checkArgs(a);
    ADD_FAILURE() << "accepted; expected an error about: " << what;
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(AttentionArgs, GoodArgsPass) {
  EXPECT_NO_THROW(checkArgs(good()));
  EXPECT_NO_THROW(checkArgs(good(4096, 0)));  // prefill: nothing cached
  AttentionArgs a = good();
  a.capacity = 1 << 20;  // a cache with room to spare
  a.splits = 4;
  a.workspace = buffer + 16;
  EXPECT_NO_THROW(checkArgs(a));
}

TEST(AttentionArgs, BadArgsNameTheProblem) {
  AttentionArgs a = good();
  a.M = 0;
  expectBad(a, "M = 0");
  a = good(), a.L = -1;
  expectBad(a, "L = -1");
  a = good(), a.capacity = a.L + a.M - 1;
  expectBad(a, "exceed the KV cache's capacity");
  a = good(), a.heads = 0;
  expectBad(a, "heads = 0");
  a = good(), a.Q = nullptr;
  expectBad(a, "non-null");
  a = good(), a.kv = nullptr;
  expectBad(a, "non-null");
  a = good(), a.out = nullptr;
  expectBad(a, "non-null");
  a = good(), a.Q = buffer + 8;
  expectBad(a, "Q is not 16-byte aligned");
  a = good(), a.kv = buffer + 2;
  expectBad(a, "kv is not 16-byte aligned");
  a = good(), a.out = buffer + 4;
  expectBad(a, "out is not 16-byte aligned");
  a = good(), a.workspace = buffer + 8;
  expectBad(a, "workspace is not 16-byte aligned");
  a = good(), a.splits = -2;
  expectBad(a, "splits = -2");
}

TEST(AttentionPlan, RowsPerTileAndQueryBlocks) {
  struct Case {
    int64_t M;
    int rows;
    uint32_t blocks;
  };
  // 128-row tiles only where they outnumber the SMs (12 heads on 132 SMs: M > 1408).
  for (const Case c : {Case{1, 64, 1}, Case{64, 64, 1}, Case{65, 64, 2}, Case{128, 64, 2}, Case{129, 64, 3},
                       Case{1408, 64, 22}, Case{1409, 128, 12}, Case{4096, 128, 32}, Case{4097, 128, 33}}) {
    const AttentionPlan p = planAttention(good(c.M), 132);
    EXPECT_EQ(p.rowsPerTile, c.rows) << "M = " << c.M;
    EXPECT_EQ(p.queryBlocks, c.blocks) << "M = " << c.M;
    EXPECT_EQ(p.tiles, 12 * c.blocks) << "M = " << c.M;
    // The stage a pipeline builds: (heads, query blocks) tiles of 128 columns, one step of 128.
    EXPECT_EQ(p.stageGrid, cusync::Dim3(12, c.blocks));
    EXPECT_EQ(p.stageTile, cusync::Dim3(128, static_cast<uint32_t>(c.rows), 128));
    EXPECT_GT(p.ringSlots, 0);
  }
}

TEST(AttentionPlan, AutomaticSplitsTakeUpToTheSms) {
  // One query block (M <= 64), 12 tiles on 132 SMs: up to 8 splits (3/4 of
  // the SMs), at least 4 key blocks each (2 where M <= 8, whose combine takes
  // one pass): 17 blocks (L = 1024) give 4 at M = 32 and 8 at M = 1, 65
  // blocks (L = 4096) 8; 8 tiles: 12.
  EXPECT_EQ(planAttention(good(32, 1024, 12), 132).splits, 4);
  EXPECT_EQ(planAttention(good(1, 1024, 12), 132).splits, 8);
  EXPECT_EQ(planAttention(good(9, 1024, 12), 132).splits, 4);
  EXPECT_EQ(planAttention(good(1, 4096, 12), 132).splits, 8);
  EXPECT_EQ(planAttention(good(1, 4096, 8), 132).splits, 12);
  EXPECT_EQ(planAttention(good(64, 4096, 12), 78).splits, 4);
  // Several query blocks take all the SMs: 16 tiles (M = 128, 8 heads) 8 splits.
  EXPECT_EQ(planAttention(good(128, 4096, 8), 132).splits, 8);
  // Four 64-row query blocks per head (48 tiles): 2 splits.
  EXPECT_EQ(planAttention(good(256, 1024, 12), 132).splits, 2);
  // A prefill keeps 8 key blocks per split: 96 tiles of at most 8 blocks, no split.
  EXPECT_EQ(planAttention(good(512, 0, 12), 132).splits, 1);
  // As many tiles as SMs, or more: no split.
  EXPECT_EQ(planAttention(good(1408, 0, 12), 132).splits, 1);  // 22 x 12 = 264 tiles of 64 rows
  EXPECT_EQ(planAttention(good(4096, 0, 12), 132).splits, 1);
  for (int sms : {1, 7, 78, 114, 132, 200}) {
    const AttentionPlan p = planAttention(good(32, 1024, 12), sms);
    EXPECT_GE(p.splits, 1);
    EXPECT_LE(p.tiles * p.splits, std::max<uint32_t>(p.tiles, static_cast<uint32_t>(sms))) << sms << " SMs";
  }
}

TEST(AttentionPlan, SplitsClampToTheLongestTilesKeyBlocks) {
  // Short tiles: M = 8 after L = 100 reads 108 keys, two blocks: too few to split.
  EXPECT_EQ(planAttention(good(8, 100, 12), 132).splits, 1);
  EXPECT_EQ(planAttention(good(8, 300, 12), 132).splits, 2);  // 5 blocks, 2 a split at M <= 8
  EXPECT_EQ(planAttention(good(9, 300, 12), 132).splits, 1);  // 5 blocks, 4 a split
  // Prefill of 512 tokens: the last query block reads 8 blocks, one split's worth.
  EXPECT_EQ(planAttention(good(512, 0, 4), 132).splits, 1);
  // One token, nothing cached: one key, one block.
  EXPECT_EQ(planAttention(good(1, 0, 12), 132).splits, 1);
  // Explicit splits beyond the longest tile's key blocks are clamped to them.
  AttentionArgs a = good(8, 100, 12);
  a.splits = 9;
  EXPECT_EQ(planAttention(a, 132).splits, 2);
}

TEST(AttentionPlan, ExplicitSplitsAreHonoured) {
  AttentionArgs a = good(8, 1024, 12);  // 17 key blocks in every tile
  for (int s : {1, 2, 3, 17}) {
    a.splits = s;
    EXPECT_EQ(planAttention(a, 132).splits, s);
  }
  a.splits = 3;
  EXPECT_EQ(planAttention(a, 7).splits, 3);  // whatever the SM count
  a = good(4096, 0, 12);                     // 384 tiles: no split by default
  a.splits = 2;
  EXPECT_EQ(planAttention(a, 132).splits, 2);
}

TEST(AttentionPlan, SplitFloorCanBeSet) {
  // GPT-3 decode M = 32, L = 1024: 17 key blocks, 8 splits by the SMs; the
  // default floor of 4 blocks a split gives 4.
  AttentionArgs a = good(32, 1024, 12);
  a.minBlocksPerSplit = 2;
  EXPECT_EQ(planAttention(a, 132).splits, 8);
  a.minBlocksPerSplit = 6;
  EXPECT_EQ(planAttention(a, 132).splits, 2);
  // LLaMA prefill M = 512: 64 tiles of up to 8 blocks, 2 splits by the SMs
  // (none with the prefill's default floor of 8).
  a = good(512, 0, 8);
  EXPECT_EQ(planAttention(a, 132).splits, 1);
  a.minBlocksPerSplit = 2;
  EXPECT_EQ(planAttention(a, 132).splits, 2);
  // Explicit splits do not look at it; the workspace follows the plan.
  a = good(32, 1024, 12);
  a.minBlocksPerSplit = 2;
  const size_t ws2 = attentionWorkspaceBytes(a, 132);
  a.minBlocksPerSplit = 0;
  EXPECT_GT(ws2, attentionWorkspaceBytes(a, 132));
  a.minBlocksPerSplit = 2;
  a.splits = 3;
  EXPECT_EQ(planAttention(a, 132).splits, 3);
  a = good(), a.minBlocksPerSplit = -1;
  expectBad(a, "minBlocksPerSplit = -1");
}

TEST(AttentionPlan, ExplicitRowsPerTileAreHonoured) {
  AttentionArgs a = good(1, 1024, 12);
  a.rowsPerTile = 128;
  EXPECT_EQ(planAttention(a, 132).rowsPerTile, 128);
  a = good(4096, 0, 12);
  a.rowsPerTile = 64;
  EXPECT_EQ(planAttention(a, 132).rowsPerTile, 64);
  EXPECT_EQ(planAttention(a, 132).queryBlocks, 64u);
  a.rowsPerTile = 96;
  expectBad(a, "rowsPerTile = 96");
}

TEST(AttentionPlan, RefusesNoSms) {
  EXPECT_THROW(planAttention(good(), 0), cusync::Error);
}

TEST(AttentionWorkspace, OnlyASplitNeedsOne) {
  EXPECT_EQ(attentionWorkspaceBytes(good(4096, 0), 132), 0u);
  AttentionArgs a = good(8, 1024);
  a.splits = 1;
  EXPECT_EQ(attentionWorkspaceBytes(a, 132), 0u);
  // A split run holds fp32 O and (max, sum) per row of every split of every
  // tile, and a counter per tile.
  for (int64_t M : {1, 64, 256}) {
    a = good(M, 1024);
    const AttentionPlan p = planAttention(a, 132);
    ASSERT_GT(p.splits, 1) << "M = " << M;
    const size_t rows = size_t(p.tiles) * p.splits * p.rowsPerTile;
    EXPECT_GE(attentionWorkspaceBytes(a, 132), rows * 128 * 4 + rows * 8 + size_t(p.tiles) * 4) << "M = " << M;
  }
}

TEST(AttentionKeys, QueryBlocksReadTheCacheAndNewTokensCausally) {
  EXPECT_EQ(keysOfQueryBlock(1024, 256, 128, 0), 1024 + 128);
  EXPECT_EQ(keysOfQueryBlock(1024, 256, 128, 1), 1024 + 256);
  EXPECT_EQ(keysOfQueryBlock(1024, 200, 128, 1), 1024 + 200);  // the last block ends at the last token
  EXPECT_EQ(keysOfQueryBlock(0, 4096, 128, 0), 128);
  EXPECT_EQ(keysOfQueryBlock(4096, 1, 64, 0), 4097);
}

TEST(AttentionKeys, QGoesFirstUnlessItsLoadWaits) {
  // Nothing waited for: Q before the first key block, whatever is cached.
  EXPECT_EQ(keyBlocksBeforeQ(false, 1024, 0, 5, 4), 0);
  EXPECT_EQ(keyBlocksBeforeQ(false, 0, 0, 2, 4), 0);
  // Q waits: the blocks wholly in the cache go first, up to a ring of them.
  // L = 1024 caches 16 blocks; split [12, 17) has 4 of them, [0, 5) five.
  EXPECT_EQ(keyBlocksBeforeQ(true, 1024, 12, 17, 4), 4);
  EXPECT_EQ(keyBlocksBeforeQ(true, 1024, 0, 5, 4), 4);
  EXPECT_EQ(keyBlocksBeforeQ(true, 1024, 14, 17, 4), 2);
  EXPECT_EQ(keyBlocksBeforeQ(true, 1000, 15, 17, 4), 0);  // block 15, keys 960..1023, reaches new keys
  EXPECT_EQ(keyBlocksBeforeQ(true, 1024, 16, 17, 4), 0);  // only new keys
  EXPECT_EQ(keyBlocksBeforeQ(true, 0, 0, 8, 4), 0);       // prefill
  EXPECT_EQ(keyBlocksBeforeQ(true, 1024, 3, 5, 4), 2);    // every block cached: Q after them all
}

}  // namespace
