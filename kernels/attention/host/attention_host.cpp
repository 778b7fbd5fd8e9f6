// Host side of the attention kernel: argument checks, the plan (tiles,
// splits, ring depth) and the workspace size. Plain C++, no GPU.
#include <algorithm>
#include <string>

#include "cusync/error.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/env.h"

namespace cusync_attn {
namespace {

[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "attention", what); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

std::string str(int64_t v) { return std::to_string(v); }

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// CUSYNC_ATTN_MIN_SPLIT_BLOCKS, read once per process (0: unset).
int minSplitBlocksFromEnv() {
  static const int v = cusync_gemm::envInt(kEnvMinSplitBlocks);
  return v;
}

}  // namespace

void checkArgs(const AttentionArgs& a) {
  if (a.M < 1) bad("M = " + str(a.M) + ": need at least one new token");
  if (a.L < 0) bad("L = " + str(a.L) + ": the cached length cannot be negative");
  if (a.heads < 1) bad("heads = " + str(a.heads) + ": need at least one head");
  if (a.capacity < a.L + a.M)
    bad("L + M = " + str(a.L + a.M) + " tokens exceed the KV cache's capacity of " + str(a.capacity) + " rows");
  if (a.L + a.M > (int64_t(1) << 31) - 1 || int64_t(a.heads) * 2 * kHeadDim > (int64_t(1) << 31) - 1)
    bad("L + M and the KV cache's row width must each be below 2^31");
  if (!a.Q || !a.kv || !a.out) bad("Q, kv and out must be non-null device pointers");
  if (!aligned16(a.Q)) bad("Q is not 16-byte aligned");
  if (!aligned16(a.kv)) bad("kv is not 16-byte aligned");
  if (!aligned16(a.out)) bad("out is not 16-byte aligned");
  if (a.splits < 0) bad("splits = " + str(a.splits) + ": need 0 (automatic) or a positive count");
  if (a.rowsPerTile != 0 && a.rowsPerTile != 64 && a.rowsPerTile != 128)
    bad("rowsPerTile = " + str(a.rowsPerTile) + ": need 0 (automatic), 64 or 128");
  if (a.minBlocksPerSplit < 0)
    bad("minBlocksPerSplit = " + str(a.minBlocksPerSplit) + ": need 0 (automatic) or a positive count");
  if (a.workspace && !aligned16(a.workspace)) bad("workspace is not 16-byte aligned");
}

AttentionPlan planAttention(const AttentionArgs& a, int sms) {
  if (sms < 1) bad("the SM count must be positive");
  AttentionPlan p;
  // Tiles of 128 rows (two consumer warpgroups sharing each K and V load)
  // where they are more than the SMs; else 64-row tiles, twice as many:
  // measured on the H100 (docs/attention.md), 128-row tiles lost 15-35% at
  // decode M = 128-256 and prefills up to one wave of them, and won from
  // 1.5 waves on.
  const int64_t tiles128 = (a.M + 127) / 128 * a.heads;
  p.rowsPerTile = a.rowsPerTile != 0 ? a.rowsPerTile : (a.M > 64 && tiles128 > sms) ? 128 : 64;
  p.queryBlocks = static_cast<uint32_t>((a.M + p.rowsPerTile - 1) / p.rowsPerTile);
  p.tiles = p.queryBlocks * static_cast<uint32_t>(a.heads);
  p.ringSlots = kRingSlots;
  // The longest tile (the last query block) bounds the splits: each of its
  // splits keeps a key block (a shorter tile's last splits may get none).
  const int64_t maxBlocks =
      (keysOfQueryBlock(a.L, a.M, p.rowsPerTile, p.queryBlocks - 1) + kKeyBlock - 1) / kKeyBlock;
  int64_t s = a.splits;
  if (s == 0) {
    // Measured on the H100 (docs/attention.md): items for 3/4 of the SMs
    // where one query block holds every row (M <= 64), for all of them
    // where several do, each with at least 4 key blocks (8 in a prefill,
    // L = 0, whose causal tiles are short), beat filling the SMs with
    // shorter items; where the combine takes one pass (M <= 8 live rows),
    // 2 key blocks a split beat 4. The floor can be set (args, then the
    // environment) for A/B runs.
    const int64_t chosen = a.minBlocksPerSplit > 0 ? a.minBlocksPerSplit : minSplitBlocksFromEnv();
    const int64_t automatic = a.L == 0 ? 8 : a.M <= kRowsCombinedInOnePass ? 2 : 4;
    const int64_t tiles = p.tiles, minPerSplit = chosen > 0 ? chosen : automatic;
    const int64_t items = a.M <= 64 ? 3 * int64_t(sms) / 4 : sms;
    s = std::max<int64_t>(1, std::min<int64_t>(items / tiles, maxBlocks / minPerSplit));
  }
  p.splits = static_cast<int>(std::max<int64_t>(1, std::min(s, maxBlocks)));
  p.stageGrid = cusync::Dim3(static_cast<uint32_t>(a.heads), p.queryBlocks);
  p.stageTile = cusync::Dim3(kHeadDim, static_cast<uint32_t>(p.rowsPerTile), kHeadDim);
  return p;
}

size_t attentionWorkspaceBytes(const AttentionArgs& a, int sms) {
  const AttentionPlan p = planAttention(a, sms);
  if (p.splits <= 1) return 0;
  const size_t parts = size_t(p.tiles) * p.splits * p.rowsPerTile;
  return roundUp(size_t(p.tiles) * 4, 256) + roundUp(parts * 8, 256) + parts * kHeadDim * 4;
}

}  // namespace cusync_attn
