// Causal multi-head attention over a KV cache, for one GPU's heads of a
// tensor-parallel transformer layer (head dimension 128, bf16, fp32 softmax).
//
//   Q   [M, H*128]             the M new tokens' queries, head h in columns [128 h, 128 h + 128)
//   KV  [capacity, 2*H*128]    the KV cache, token-major: row t holds token t's
//                              keys of all heads, then its values of all heads
//   A   [M, H*128]             the output, laid out as Q
//
// New token i sits at position L + i: it attends to the L cached tokens and,
// causally, to new tokens 0..i, whose keys and values must already be in
// rows [L, L + M) of the cache (the attention block's QKV projection writes
// them there, kernels/attention/block.h). softmax(Q K^T / sqrt(128)) V per
// head, with the running maximum of online softmax.
//
// The kernel (kernels/attention/kernel/attention_kernel.cuh) is a Hopper
// kernel: one block per work item, a producer thread loading Q and 64-key
// blocks of K and V through TMA into a ring, one or two consumer
// warpgroups running S = Q K^T and O += P V with wgmma, P kept in registers.
// Where the tiles (head x 64- or 128-row query block) are too few to fill
// the GPU (decode), each tile's keys are split over several blocks, whose
// fp32 partials the last one to finish combines.
//
// Entry points: attention(args, stream) below (no synchronization), and
// attention(args, stage, pipeline) in attention_staged.cuh (a stage of a
// cusync pipeline: it waits for the QKV projection's tiles it reads and
// posts each finished tile for the output projection).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "cusync/config.h"
#include "cusync/geometry.h"

namespace cusync_attn {

constexpr int kHeadDim = 128;
constexpr int kKeyBlock = 64;  // keys per ring slot
constexpr int kRingSlots = 4;  // slots of K and V blocks in a block's shared memory
// A split tile with at most this many live query rows per consumer
// warpgroup has its splits combined by every consumer thread in one pass
// (about one L2 round trip whatever the split count), so more, shorter
// splits pay there.
constexpr int kRowsCombinedInOnePass = 8;

struct AttentionArgs {
  int64_t M = 0;         // new tokens, >= 1
  int64_t L = 0;         // tokens already in the cache, >= 0
  int heads = 0;         // heads on this GPU, >= 1
  int64_t capacity = 0;  // rows of the KV cache; L + M <= capacity
  const void* Q = nullptr;
  const void* kv = nullptr;
  void* out = nullptr;
  // Splits of each tile's keys over blocks: 0 lets the library choose
  // (fill the SMs); 1 runs no split. More than one needs `workspace`.
  int splits = 0;
  // Query rows per tile: 64 (one consumer warpgroup) or 128 (two); 0 lets
  // the library choose.
  int rowsPerTile = 0;
  // With automatic splits, the fewest 64-key blocks of the longest tile a
  // split keeps; 0 lets the library choose (env.h's
  // CUSYNC_ATTN_MIN_SPLIT_BLOCKS where set, else 2 where M <=
  // kRowsCombinedInOnePass, 8 in a prefill, L = 0, and 4 otherwise).
  int minBlocksPerSplit = 0;
  // attentionWorkspaceBytes(args, sms) bytes of device memory, zeroed once
  // before its first use (the combine's counters return to zero after each
  // run). Needed only where a run splits keys; one launch at a time.
  void* workspace = nullptr;
};

// How a launch cuts the work, computed on the host (and by the tests).
struct AttentionPlan {
  int rowsPerTile = 64;     // 64 (one consumer warpgroup) or 128 (two)
  uint32_t queryBlocks = 0; // ceil(M / rowsPerTile)
  uint32_t tiles = 0;       // heads * queryBlocks
  int splits = 1;           // blocks per tile
  int ringSlots = 0;        // 64-key slots of K and V in shared memory
  cusync::Dim3 stageGrid;   // (heads, queryBlocks): the tiles a stage posts
  cusync::Dim3 stageTile;   // (128 columns, rowsPerTile rows, 128 columns per step)
};

// Throws cusync::Error(InvalidArgument) naming the first problem: M < 1,
// L < 0, L + M beyond the capacity, no heads, null or misaligned pointers,
// splits without a workspace. Pure host code.
void checkArgs(const AttentionArgs& a);

// The plan for `a` on a GPU with `sms` SMs (a.splits honoured, clamped to
// the key blocks of the longest tile; a.minBlocksPerSplit bounds automatic
// splits).
AttentionPlan planAttention(const AttentionArgs& a, int sms);

// Workspace bytes the plan of `a` needs on `sms` SMs (0 without a split).
size_t attentionWorkspaceBytes(const AttentionArgs& a, int sms);

// Keys a query block's tiles read: the cache and the new tokens up to the
// block's last row (causal), [0, min(L + (qb + 1) * rows, L + M)).
CUSYNC_HD int64_t keysOfQueryBlock(int64_t L, int64_t M, int rowsPerTile, int64_t qb) {
  const int64_t end = L + (qb + 1) * rowsPerTile;
  return end < L + M ? end : L + M;
}

// How many of an item's key blocks [kb0, kb1) its producer issues before Q
// (the kernel and the CPU emulator both follow this). Where Q's load waits
// (`qWaits`: a stage whose input policy synchronizes, Q coming from the QKV
// projection), the blocks wholly in the cache go first, up to `ringSlots` of
// them: they need no wait and stream while the projection runs. Where
// nothing is waited for, Q goes first, so that the consumers start
// S = Q K^T as soon as the first key block lands.
CUSYNC_HD int64_t keyBlocksBeforeQ(bool qWaits, int64_t L, int64_t kb0, int64_t kb1, int ringSlots) {
  if (!qWaits) return 0;
  const int64_t cached = L / kKeyBlock;
  const int64_t old = cached > kb0 ? (cached < kb1 ? cached : kb1) - kb0 : 0;
  return old < ringSlots ? old : ringSlots;
}

// A stage order for the attention's tiles (heads x query blocks): the last
// query blocks, whose causal rows reach furthest and take longest, first
// (longest processing time first, as attention(args, stream) walks them).
// Heads fastest.
struct LongestFirstOrder {
  static constexpr const char* kName = "longest-first";
  CUSYNC_HD uint32_t linearIndex(const cusync::Dim3& t, const cusync::Dim3& g) const {
    return (g.y - 1 - t.y) * g.x + t.x;
  }
};

// Launch with no synchronization, asynchronous on `stream`, as a
// programmatic dependent of the kernel before it (its blocks set up, then
// wait for that kernel before reading).
void attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace cusync_attn
