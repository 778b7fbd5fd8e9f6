// Host side of the attention kernel: argument checks, the plan (tiles,
// splits, ring depth) and the workspace size. Plain C++, no GPU.
#include <algorithm>
#include <string>

#include "cusync/error.h"
#include "kernels/attention/attention.h"

namespace cusync_attn {
namespace {

[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "attention", what); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

std::string str(int64_t v) { return std::to_string(v); }

size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

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
  if (a.workspace && !aligned16(a.workspace)) bad("workspace is not 16-byte aligned");
}

AttentionPlan planAttention(const AttentionArgs& a, int sms) {
  if (sms < 1) bad("the SM count must be positive");
  AttentionPlan p;
  p.rowsPerTile = a.M > 64 ? 128 : 64;
  p.queryBlocks = static_cast<uint32_t>((a.M + p.rowsPerTile - 1) / p.rowsPerTile);
  p.tiles = p.queryBlocks * static_cast<uint32_t>(a.heads);
  p.ringSlots = 4;
  // The shortest tile (query block 0) bounds the splits: each split keeps at least one key block.
  const int64_t minBlocks = (keysOfQueryBlock(a.L, a.M, p.rowsPerTile, 0) + kKeyBlock - 1) / kKeyBlock;
  int64_t s = a.splits > 0 ? a.splits : (p.tiles >= static_cast<uint32_t>(sms) ? 1 : sms / static_cast<int64_t>(p.tiles));
  p.splits = static_cast<int>(std::max<int64_t>(1, std::min(s, minBlocks)));
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
