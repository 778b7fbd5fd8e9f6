// Host side of the GEMM: configuration heuristic, argument checks, tensor maps.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "cusync/error.h"
#include "kernels/gemm/detail/host.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm {

namespace {
[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", what); }
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
}  // namespace

const char* toString(TileConfig c) {
  switch (c) {
    case TileConfig::Auto: return "auto";
    case TileConfig::T128x128: return "128x128";
    case TileConfig::T128x192: return "128x192";
    case TileConfig::T128x256: return "128x256";
    case TileConfig::T128x192SplitTail: return "128x192-splittail";
    case TileConfig::T128x192Pair: return "128x192-pair";
    case TileConfig::T128x256Pair: return "128x256-pair";
    case TileConfig::T128x256SplitTail: return "128x256-splittail";
    case TileConfig::T64x128SplitK: return "64x128-splitk";
    case TileConfig::T64x256SplitK: return "64x256-splitk";
    case TileConfig::T128x192Stream: return "128x192-stream";
    case TileConfig::T128x256Stream: return "128x256-stream";
    case TileConfig::T128x176: return "128x176";
    case TileConfig::T128x176SplitTail: return "128x176-splittail";
    case TileConfig::T128x144: return "128x144";
    case TileConfig::T128x144SplitTail: return "128x144-splittail";
    case TileConfig::T128x96: return "128x96";
    case TileConfig::T128x96SplitTail: return "128x96-splittail";
    case TileConfig::T128x168: return "128x168";
  }
  return "?";
}

const char* toString(Epilogue e) {
  switch (e) {
    case Epilogue::Identity: return "identity";
    case Epilogue::Bias: return "bias";
    case Epilogue::Gelu: return "gelu";
    case Epilogue::SwiGLU: return "swiglu";
    case Epilogue::Residual: return "residual";
  }
  return "?";
}

TileShape tileShape(TileConfig c) {
  switch (c) {
    case TileConfig::T128x128: return {128, 128, 64};
    case TileConfig::T128x192: return {128, 192, 64};
    case TileConfig::T128x256: return {128, 256, 64};
    case TileConfig::T128x192SplitTail: return {128, 192, 64};
    case TileConfig::T128x192Pair: return {256, 192, 64};
    case TileConfig::T128x256Pair: return {256, 256, 64};
    case TileConfig::T128x256SplitTail: return {128, 256, 64};
    case TileConfig::T64x128SplitK: return {64, 128, 64};
    case TileConfig::T64x256SplitK: return {64, 256, 64};
    case TileConfig::T128x192Stream: return {128, 192, 64};
    case TileConfig::T128x256Stream: return {128, 256, 64};
    case TileConfig::T128x176: return {128, 176, 64};
    case TileConfig::T128x176SplitTail: return {128, 176, 64};
    case TileConfig::T128x144: return {128, 144, 64};
    case TileConfig::T128x144SplitTail: return {128, 144, 64};
    case TileConfig::T128x96: return {128, 96, 64};
    case TileConfig::T128x96SplitTail: return {128, 96, 64};
    case TileConfig::T128x168: return {128, 168, 64};
    case TileConfig::Auto: break;
  }
  bad("tileShape: configuration 'auto' has no shape; resolve it first");
}

bool supportsSwiGLU(TileConfig c) { return tileShape(c).bn % 16 == 0; }

bool configImplemented(TileConfig c) {
  for (TileConfig k : kAllTileConfigs)
    if (k == c) return true;
  return false;
}

namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr int kSplitMax = 32;  // caller overrides are clamped to this
}  // namespace

// Measured on the H100 (kernels/gemm/NOTES.md, v4): splitting K costs time of
// its own (S = 3..11 ran 1.2-2.5x cuBLAS where S = 1 ran 0.96-1.13x at M = 64),
// and S = 2 paid only where the tiles fill under a third of the SMs (gpt3-qkv
// 1.12 -> 1.02, llama-qkv 1.49 -> 1.13). So: two splits there when each keeps
// at least 16 k-blocks, else one.
uint32_t chooseSplits(int64_t M, int64_t N, int64_t K, int numSMs, uint32_t bn) {
  if (M < 1 || N < 1 || K < 1 || numSMs < 1) bad("chooseSplits: M, N, K and the SM count must be positive");
  if (bn != 128 && bn != 256) bad("chooseSplits: tile width must be 128 or 256");
  const int64_t tiles = cdiv(M, 64) * cdiv(N, bn);
  const int64_t kIters = cdiv(K, 64);
  return (kIters >= 32 && 3 * tiles <= numSMs) ? 2u : 1u;
}

namespace {
// The cost model, in units of one 128x256x64 k-block step of one SM at the
// steady-state rate (about 0.68 us on the H100).
//  - A k-block of a 128 x bn tile costs bn / 256 / rate(bn): narrower tiles
//    re-read more operand bytes per FLOP (rates measured, NOTES.md v8).
//  - Every tile adds a fixed cost: the epilogue and the MMA pipeline's drain
//    and refill.
//  - A data-parallel launch takes as many tile times as it has waves (the
//    last one often part empty).
constexpr double kTileOverhead = 2.5;
// Pairs (NOTES.md v9): a 128x256 k-block costs ~2% less than in a single
// block (B multicast; 128x192 pairs measured no gain), but each tile pays ~2
// k-blocks more (the hand-over of the tile and the two blocks waiting on
// each other's slot releases).
constexpr double kPairRate = 0.975;
constexpr double kPairTileOverhead = kTileOverhead + 2.0;
// Stream (fitted to the H100 sweep of NOTES.md v12a):
// - a cut tile's partial written by one block and read by another, in
//   k-block steps (~2.7 us at 128x256);
// - per tile half the tile overhead: static units, no tickets (measured
//   1-3% faster than the tile schedule at equal work where no tile is cut);
// - a k-block costs more the more groups walk the sequence at unrelated k
//   offsets: 1.15x at 33 groups, 1.5x at 66 (factor 1 + (2 G / SMs)^2; not
//   where the groups walk whole columns in step, NOTES.md v12h);
// - cut streams only with at least 4 bands; 3% better than the stage heuristic.
constexpr double kStreamFixup = 4.0;
constexpr double kStreamTileOverhead = kTileOverhead / 2;
constexpr double kStreamMargin = 0.97;
constexpr int64_t kStreamMinBands = 4;
// Narrow widths (176, 168, 144, 96; NOTES.md v14): fitted to one-wave
// launches at K >= 8192 against 128x192 on the same shape (llama-mlp1
// M = 512, gpt3-qkv M = 512, llama-qkv M = 512); 176 raised to 0.97 so that
// its static multi-wave launches at llama-mlp1 M = 1024 / 2048 win over the
// streams, as measured. Where the heuristic may take them: chooseConfigFor.
double stepCost(uint32_t bn) {
  const double rate = bn == 256   ? 1.0
                      : bn == 192 ? 0.98
                      : bn == 176 ? 0.97
                      : bn == 168 ? 0.955
                      : bn == 144 ? 0.855
                      : bn == 96  ? 0.71
                                  : 0.72;
  return static_cast<double>(bn) / 256.0 / rate;
}
// Whole tiles of the Tiles kernel: its k loop runs in uniform registers
// (NOTES.md v17a), which moved 128x96 most: 38.2 -> 30.0 us of MMA at
// llama-qkv M = 512, 1.03-1.04 against 1.15 for the split kernel's t1 and
// 192/t2; gpt3-mlp1 and llama-mlp1 M = 256 1.01-1.03 against 1.05-1.10 for
// their splits (v17b). The split kernel's parts keep stepCost().
double wholeTileStepCost(uint32_t bn) { return bn == 96 ? 96.0 / 256.0 / 0.90 : stepCost(bn); }
bool isNarrow(uint32_t bn) { return bn == 176 || bn == 168 || bn == 144 || bn == 96; }
constexpr int64_t kNarrowMinKIters = 64;

// Tail split: whole waves of 128 x bn tiles, then the R tiles left (R < SMs)
// each split into S parts, S chosen for the least estimated time: the part
// waves, each a 1/S share of the k-blocks plus the tile overhead, plus per
// extra split a fixup: an fp32 partial written, then read back by the
// finishing block after its siblings are done, which is latency-bound
// (measured ~4-8 us per split for 128x192 at M = 256, NOTES.md v8).
// Per extra split, per 256 columns: the partial's write and the finisher's
// wait and read. 8 (was 6) orders the one-wave splits at llama-qkv M = 256 as
// measured (NOTES.md v14c: 96/t2 30.8 us, 144/t3 32.0, 176/t3 32.6, 192/t4 33.8).
constexpr double kTailFixup = 8.0;
struct TailPlan {
  uint32_t splits = 1;
  uint32_t dpTiles = 0;
  double cost = 0;
};
TailPlan tailPlan(int64_t M, int64_t N, int64_t K, int numSMs, int forcedSplits, uint32_t bn) {
  const int64_t tiles = cdiv(M, 128) * cdiv(N, bn);
  const int64_t kIters = cdiv(std::max<int64_t>(K, 1), 64);
  const int64_t waves = tiles / numSMs, rest = tiles % numSMs;
  const double step = stepCost(bn);
  const double tileCost = static_cast<double>(kIters) * step + kTileOverhead;
  TailPlan p;
  p.dpTiles = static_cast<uint32_t>(waves * numSMs);
  p.cost = static_cast<double>(waves + (rest > 0 ? 1 : 0)) * tileCost;
  if (rest == 0) {
    p.dpTiles = static_cast<uint32_t>(tiles);
    return p;
  }
  // Measured on the H100 (NOTES.md v6, v8): splitting paid only with all
  // parts in one wave (R S <= SMs) and K of at least 64 k-blocks. Parts in
  // several waves lost to the unsplit tiles almost everywhere (1.05-1.9x),
  // even with the finishing part placed after its siblings; at K <= 1536 the
  // fixup outweighed the gain. Each part but the last pays a partial write,
  // and the finisher reads S - 1 partials.
  if (forcedSplits <= 0 && (kIters < 64 || 2 * rest > numSMs)) return p;
  // Narrow widths split only where no whole wave precedes (see stepCost).
  if (forcedSplits <= 0 && isNarrow(bn) && waves > 0) return p;
  int64_t maxS = std::min<int64_t>(forcedSplits > 0 ? std::min(forcedSplits, kSplitMax) : 8, kIters);
  if (forcedSplits <= 0) maxS = std::min<int64_t>(maxS, numSMs / rest);
  for (int64_t S = forcedSplits > 0 ? maxS : 2; S <= maxS; ++S) {
    const double write = 2.0 * static_cast<double>(bn) / 256.0;
    const double part = static_cast<double>(cdiv(kIters, S)) * step + kTileOverhead + write;
    const double fixup = kTailFixup * static_cast<double>(bn) / 256.0 * static_cast<double>(S - 1);
    const double c = static_cast<double>(waves) * tileCost + static_cast<double>(cdiv(rest * S, numSMs)) * part + fixup;
    if (forcedSplits > 0 || c < p.cost) p.splits = static_cast<uint32_t>(S), p.cost = c;
  }
  return p;
}
}  // namespace

namespace {
// Stream launches (T128x192Stream, T128x256Stream): G groups of one block per
// 128-row band, so G x bands <= SMs, and no more groups than k-blocks of work.
// Where a divisor of the column count within 10% below that fits, it is used
// instead: every group then walks whole columns in step with the others, no
// tile is cut, and nothing is spread over k offsets (kStreamFixup).
struct StreamPlan {
  int64_t groups = 1;
  int64_t kIters = 1;
  int64_t share = 0;  // k-blocks per group (the largest share)
  bool cut = false;   // some tile is cut between groups
};
// forcedGroups > 0 (GemmArgs::splitK) replaces the choice, clamped to G.
StreamPlan streamPlan(int64_t M, int64_t N, int64_t K, int numSMs, uint32_t bn, int forcedGroups = 0) {
  StreamPlan p;
  const int64_t bands = cdiv(M, 128);
  const int64_t cols = cdiv(N, bn);
  p.kIters = cdiv(std::max<int64_t>(K, 1), 64);
  const int64_t work = cols * p.kIters;
  // Every block of a stream launch must be resident at once (a finisher
  // waits for other blocks), so G x bands never exceeds the SMs.
  const int64_t G = std::max<int64_t>(1, std::min<int64_t>(numSMs / bands, work));
  p.groups = G;
  if (forcedGroups > 0) {
    p.groups = std::min<int64_t>(forcedGroups, G);
  } else {
    for (int64_t g = G; g > 0 && 10 * g >= 9 * G; --g)
      if (cols % g == 0) {
        p.groups = g;
        break;
      }
  }
  p.share = cdiv(work, p.groups);
  p.cut = work % p.groups != 0 || (work / p.groups) % p.kIters != 0;
  return p;
}

// A stream block computes an even share of the k-blocks (ceil(work / G)),
// pays the tile overhead per tile it touches, and where tiles are cut about
// one partial's write or read (a cut tile is written by one part and read by
// the other). See kStreamFixup for the constants.
double streamCost(const StreamPlan& p, int numSMs, uint32_t bn) {
  const double spread = p.cut ? 2.0 * static_cast<double>(p.groups) / numSMs : 0.0;
  return static_cast<double>(p.share) * stepCost(bn) * (1.0 + spread * spread) +
         static_cast<double>(cdiv(p.share, p.kIters)) * kStreamTileOverhead +
         (p.cut ? kStreamFixup * static_cast<double>(bn) / 256.0 : 0.0);
}
}  // namespace

namespace detail {
bool weightsEvictFirst(int64_t M, int64_t K) {
  const int64_t bands = cdiv(M, 128);
  return bands == 1 || (bands <= 4 && K >= 4096);
}
}  // namespace detail

uint32_t streamGroups(const GemmArgs& a, TileConfig c, int numSMs) {
  if (!isStreamConfig(c)) return 0;
  return static_cast<uint32_t>(streamPlan(a.M, a.N, a.K, numSMs, tileShape(c).bn, a.splitK).groups);
}

uint32_t splitCount(const GemmArgs& a, TileConfig c, int numSMs) {
  if (isTailSplitConfig(c)) return tailPlan(a.M, a.N, a.K, numSMs, a.splitK, tileShape(c).bn).splits;
  if (c != TileConfig::T64x128SplitK && c != TileConfig::T64x256SplitK) return 1;
  const int64_t kIters = cdiv(a.K, 64);
  if (a.splitK > 0) return static_cast<uint32_t>(std::min<int64_t>(std::min<int64_t>(a.splitK, kIters), kSplitMax));
  return chooseSplits(a.M, a.N, a.K, numSMs, tileShape(c).bn);
}

uint32_t splitCount(const GemmArgs& a, int numSMs) { return splitCount(a, resolveConfig(a, numSMs), numSMs); }

uint32_t splitDataParallelTiles(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint32_t tiles = stageGrid(a, c).count();
  if (c == TileConfig::T64x128SplitK || c == TileConfig::T64x256SplitK) return splitCount(a, c, numSMs) > 1 ? 0 : tiles;
  if (isTailSplitConfig(c)) {
    const TailPlan p = tailPlan(a.M, a.N, a.K, numSMs, a.splitK, tileShape(c).bn);
    return p.splits > 1 ? p.dpTiles : tiles;
  }
  return tiles;
}

uint32_t persistentBlocks(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint64_t tiles = stageGrid(a, c).count();
  if (isPairConfig(c)) return 2 * static_cast<uint32_t>(std::min<uint64_t>(tiles, std::max(1, numSMs / 2)));
  if (isStreamConfig(c)) return streamGroups(a, c, numSMs) * stageGrid(a, c).y;
  const uint64_t dp = splitDataParallelTiles(a, c, numSMs);
  const uint64_t units = dp + (tiles - dp) * splitCount(a, c, numSMs);
  return static_cast<uint32_t>(std::min<uint64_t>(units, static_cast<uint64_t>(numSMs)));
}

uint32_t ticketBlocks(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint32_t b = persistentBlocks(a, c, numSMs);
  return isPairConfig(c) ? b / 2 : b;
}

TileConfig chooseConfig(int64_t M, int64_t N, int64_t K, int numSMs) { return chooseConfig(M, N, K, numSMs, false); }

double estimatedCost(int64_t M, int64_t N, int64_t K, int numSMs, TileConfig c) {
  if (M < 1 || N < 1 || numSMs < 1) bad("estimatedCost: M, N and the SM count must be positive");
  if (c == TileConfig::Auto) bad("estimatedCost: resolve 'auto' first");
  const TileShape t = tileShape(c);
  if (isTailSplitConfig(c)) return tailPlan(M, N, std::max<int64_t>(K, 1), numSMs, 0, t.bn).cost;
  if (isStreamConfig(c)) return streamCost(streamPlan(M, N, K, numSMs, t.bn), numSMs, t.bn);
  const int64_t kIters = cdiv(std::max<int64_t>(K, 1), 64);
  if (isPairConfig(c)) {
    // Two 128-row tiles per cluster, a cluster per two SMs, B at half the L2 traffic.
    const int64_t tiles = cdiv(M, 256) * cdiv(N, t.bn);
    const double rate = t.bn == 256 ? kPairRate : 1.0;
    return static_cast<double>(cdiv(tiles, std::max(1, numSMs / 2))) *
           (static_cast<double>(kIters) * stepCost(t.bn) * rate + kPairTileOverhead);
  }
  if (t.bm == 64) {
    // 64-row split-K tiles: half a 128-row step each, every split a tile overhead.
    GemmArgs a;
    a.M = M, a.N = N, a.K = K;
    const int64_t S = splitCount(a, c, numSMs);
    const int64_t units = cdiv(M, 64) * cdiv(N, t.bn) * S;
    return static_cast<double>(cdiv(units, numSMs)) *
           (static_cast<double>(cdiv(kIters, S)) * 0.5 * stepCost(t.bn) / 0.8 + kTileOverhead);
  }
  const int64_t tiles = cdiv(M, 128) * cdiv(N, t.bn);
  return static_cast<double>(cdiv(tiles, numSMs)) * (static_cast<double>(kIters) * wholeTileStepCost(t.bn) + kTileOverhead);
}

namespace {
TileConfig chooseConfigFor(int64_t M, int64_t N, int64_t K, int numSMs, bool allowSplitK, bool swiglu);
}

TileConfig chooseConfig(int64_t M, int64_t N, int64_t K, int numSMs, bool allowSplitK) {
  return chooseConfigFor(M, N, K, numSMs, allowSplitK, false);
}

namespace {
// swiglu: only configurations whose tiles hold whole gate/up pairs.
TileConfig chooseConfigFor(int64_t M, int64_t N, int64_t K, int numSMs, bool allowSplitK, bool swiglu) {
  if (M < 1 || N < 1 || numSMs < 1) bad("chooseConfig: M, N and the SM count must be positive");
  if (K < 1) K = 64;
  // The least estimated cost; ties go to the earlier, wider tile. A tail
  // split must win clearly: the model leaves out the finisher's wait.
  TileConfig best = TileConfig::T128x256;
  double bestCost = estimatedCost(M, N, K, numSMs, best);
  for (TileConfig c : {TileConfig::T128x192, TileConfig::T128x128}) {
    const double cost = estimatedCost(M, N, K, numSMs, c);
    if (cost < bestCost * 0.999) best = c, bestCost = cost;
  }
  TileConfig bestTail = TileConfig::Auto;
  double bestTailCost = 0;
  for (TileConfig c : {TileConfig::T128x256SplitTail, TileConfig::T128x192SplitTail}) {
    const TailPlan tail = tailPlan(M, N, K, numSMs, 0, tileShape(c).bn);
    if (tail.splits < 2) continue;
    if (bestTail == TileConfig::Auto || tail.cost < bestTailCost) bestTail = c, bestTailCost = tail.cost;
  }
  // Narrow widths: the full heuristic only (the pipelines' tile syncs were
  // measured with 128-256 wide tiles), K of at least 64 k-blocks, whole tiles
  // and split parts in one wave (NOTES.md v14: where they were measured to
  // win). 128x176 also in two waves whose last one is at least 7/8 full
  // (llama-mlp1 M = 1024: 1.049-1.054 against 1.09-1.11 for 192 and 256; at
  // M = 2048, 3.9 waves, 1.07-1.15 between runs against the stream's 1.10;
  // at M = 4096, 7.8 waves, 1.155 against 1.005).
  // 128x168 also in up to four whole waves (N = 5504 in 33 columns at
  // M = 1024 and 2048), where gemm() walks its tiles in bands of 6 rows
  // (orderGroup): 1.047/1.049 against 176's 1.05/1.07-1.14 and the stream's
  // 1.10 (NOTES.md v15c; in bands of 8 it ran 1.10-1.18, v14f).
  const int64_t kItersAll = cdiv(K, 64);
  if (allowSplitK && kItersAll >= kNarrowMinKIters) {
    for (TileConfig c : {TileConfig::T128x176, TileConfig::T128x168, TileConfig::T128x144, TileConfig::T128x96}) {
      if (swiglu && !supportsSwiGLU(c)) continue;
      const int64_t tiles = cdiv(M, 128) * cdiv(N, tileShape(c).bn), rest = tiles % numSMs;
      const bool fewFullWaves = c == TileConfig::T128x176 && tiles <= 2 * static_cast<int64_t>(numSMs) &&
                                (rest == 0 || 8 * rest >= 7 * static_cast<int64_t>(numSMs));
      const bool wholeWaves = c == TileConfig::T128x168 && rest == 0 && tiles <= 4 * static_cast<int64_t>(numSMs);
      if (tiles > numSMs && !fewFullWaves && !wholeWaves) continue;
      const double cost = estimatedCost(M, N, K, numSMs, c);
      if (cost < bestCost * 0.999) best = c, bestCost = cost;
    }
    for (TileConfig c : {TileConfig::T128x176SplitTail, TileConfig::T128x144SplitTail, TileConfig::T128x96SplitTail}) {
      const TailPlan tail = tailPlan(M, N, K, numSMs, 0, tileShape(c).bn);
      if (tail.splits < 2) continue;
      if (bestTail == TileConfig::Auto || tail.cost < bestTailCost) bestTail = c, bestTailCost = tail.cost;
    }
  }
  if (bestTail != TileConfig::Auto && bestTailCost < 0.95 * bestCost) best = bestTail, bestCost = bestTailCost;
  // Cluster pairs (256-row stage tiles) only in the full heuristic: pipeline
  // stages built on chooseConfig(M, N, K, SMs) expect 128-row tiles.
  if (allowSplitK) {
    const double cost = estimatedCost(M, N, K, numSMs, TileConfig::T128x256Pair);
    if (cost < bestCost * 0.999) best = TileConfig::T128x256Pair, bestCost = cost;
  }
  // The 64-row split-K path (measured, NOTES.md v4): only where M fits one
  // 64-row band, where 128-row tiles waste half their rows and too few tiles
  // exist to pull the weights at full bandwidth, and K has at least 16
  // k-blocks. (At K = 1024 it lost to 128x128 until blocks took their first
  // tile without a ticket: 1.45x against 1.31x cuBLAS in v4, 1.12x against
  // 1.21x in v11.) At M = 256 it lost on every shape (1.5-2.4x against 1.1-1.5x).
  const int64_t kIters = cdiv(K, 64);
  if (allowSplitK && M <= 64 && kIters >= 16) best = TileConfig::T64x128SplitK;
  return best;
}
}  // namespace

void checkArgs(const GemmArgs& a) {
  if (a.M < 1) bad("M = " + std::to_string(a.M) + ": need M >= 1");
  if (a.N < 8 || a.N % 8 != 0) bad("N = " + std::to_string(a.N) + ": need a positive multiple of 8");
  if (a.K < 8 || a.K % 8 != 0) bad("K = " + std::to_string(a.K) + ": need a positive multiple of 8");
  if (a.M > (int64_t(1) << 31) - 1 || a.N > (int64_t(1) << 31) - 1 || a.K > (int64_t(1) << 31) - 1)
    bad("M, N and K must each be below 2^31");
  if (a.epilogue == Epilogue::SwiGLU && a.N % 16 != 0)
    bad("N = " + std::to_string(a.N) + ": SwiGLU needs N a multiple of 16 (gate and up interleaved in blocks of 8)");
  if (!a.A || !a.B || !a.C) bad("A, B and C must be non-null device pointers");
  if (!aligned16(a.A)) bad("A is not 16-byte aligned");
  if (!aligned16(a.B)) bad("B is not 16-byte aligned");
  if (!aligned16(a.C)) bad("C is not 16-byte aligned");
  if (a.epilogue == Epilogue::Bias && !a.bias) bad("epilogue 'bias' needs a bias pointer");
  if (a.bias && !aligned16(a.bias)) bad("bias is not 16-byte aligned");
  if (a.epilogue == Epilogue::Residual && !a.residual) bad("epilogue 'residual' needs a residual pointer");
  if (a.residual && !aligned16(a.residual)) bad("residual is not 16-byte aligned");
  if (a.splitK < 0) bad("splitK = " + std::to_string(a.splitK) + ": need 0 (heuristic) or a positive count");
  if (a.config != TileConfig::Auto && !configImplemented(a.config))
    bad(std::string("tile configuration ") + toString(a.config) + " is not implemented in this build");
  if (a.epilogue == Epilogue::SwiGLU && a.config != TileConfig::Auto && !supportsSwiGLU(a.config))
    bad(std::string("tile configuration ") + toString(a.config) +
        " cannot run SwiGLU: its tiles split gate/up column pairs (use a width that is a multiple of 16)");
}

TileConfig resolveConfig(const GemmArgs& a, int numSMs) {
  return a.config == TileConfig::Auto
             ? chooseConfigFor(a.M, a.N, a.K, numSMs, /*allowSplitK=*/true, a.epilogue == Epilogue::SwiGLU)
             : a.config;
}

TileConfig resolveNoSyncConfig(const GemmArgs& a, int numSMs) {
  // CUSYNC_GEMM_STREAM=0: Auto never picks a stream configuration (for A/B runs).
  static const bool streamOff = [] {
    const char* e = std::getenv("CUSYNC_GEMM_STREAM");
    return e != nullptr && std::string(e) == "0";
  }();
  const TileConfig c = resolveConfig(a, numSMs);
  if (a.config != TileConfig::Auto || c == TileConfig::T64x128SplitK || streamOff) return c;
  // Short K (at most 16 k-blocks) in two to four waves of 128x128 tiles, the
  // last at least 7/8 full: whole 128x128 tiles beat the streams there since
  // the whole-tile k loop runs in uniform registers (NOTES.md v17d, llama-wo
  // M = 512: 1.022-1.023 against the stream's 1.064-1.066, M = 1024:
  // 1.010-1.018 against 1.038-1.043). The cost model ranks 128x128 last
  // there: its fixed overhead per tile likely overstates short tiles in
  // persistent blocks, which overlap a tile's epilogue with the next tile's
  // loads. At 24 k-blocks (gpt3-wo M = 512) and in 8 waves (llama-wo
  // M = 2048) the streams stayed ahead.
  {
    const int64_t tiles = cdiv(a.M, 128) * cdiv(a.N, 128), rest = tiles % numSMs;
    const int64_t sms = numSMs;
    if (cdiv(a.K, 64) <= 16 && tiles > sms && tiles <= 4 * sms && (rest == 0 || 8 * rest >= 7 * sms))
      return TileConfig::T128x128;
  }
  const bool fewBands = cdiv(a.M, 128) < kStreamMinBands;
  TileConfig best = c;
  double bestCost = estimatedCost(a.M, a.N, a.K, numSMs, c) * kStreamMargin;
  for (TileConfig s : {TileConfig::T128x256Stream, TileConfig::T128x192Stream}) {
    // Under 4 bands only streams of whole columns (cut ones lost there, v12a).
    const uint32_t bn = tileShape(s).bn;
    const StreamPlan plan = streamPlan(a.M, a.N, a.K, numSMs, bn);
    if (fewBands && plan.cut) continue;
    const double cost = streamCost(plan, numSMs, bn);
    if (cost < bestCost) best = s, bestCost = cost;
  }
  return best;
}

uint32_t orderGroup(TileConfig c) {
  static const uint32_t forced = [] {
    const char* e = std::getenv("CUSYNC_GEMM_ORDER_GROUP");
    const int g = e != nullptr ? std::atoi(e) : 0;
    return g > 0 ? static_cast<uint32_t>(g) : 0u;
  }();
  if (forced != 0) return forced;
  return c == TileConfig::T128x168 ? 6u : 8u;
}

cusync::Dim3 stageGrid(const GemmArgs& a, TileConfig c) {
  const TileShape t = tileShape(c);
  return cusync::Dim3(static_cast<uint32_t>((a.N + t.bn - 1) / t.bn), static_cast<uint32_t>((a.M + t.bm - 1) / t.bm), 1);
}

cusync::Dim3 stageTile(TileConfig c) {
  const TileShape t = tileShape(c);
  return cusync::Dim3(t.bn, t.bm, t.bk);
}

namespace detail {

void throwCuda(cudaError_t e, const char* what) {
  throw cusync::Error(cusync::ErrorCode::CudaError, "gemm", std::string(what) + ": " + cudaGetErrorString(e));
}

const DeviceInfo& currentDevice() {
  static std::mutex mu;
  static std::deque<DeviceInfo> cache;
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) throwCuda(e, "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mu);
  for (const DeviceInfo& d : cache)
    if (d.device == dev) return d;
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, dev); e != cudaSuccess) throwCuda(e, "cudaGetDeviceProperties");
  DeviceInfo d;
  d.device = dev;
  d.sms = prop.multiProcessorCount;
  d.major = prop.major;
  d.minor = prop.minor;
  d.smemOptin = prop.sharedMemPerBlockOptin;
  cache.push_back(d);
  return cache.back();
}

namespace {
using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeFn encodeFn() {
  static EncodeFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr)
      throw cusync::Error(cusync::ErrorCode::CudaError, "gemm", "cuTensorMapEncodeTiled is not available from the driver");
    return reinterpret_cast<EncodeFn>(p);
  }();
  return fn;
}
}  // namespace

CUtensorMap makeTensorMap2D(const void* base, bool bf16, uint64_t inner, uint64_t outer, uint32_t boxInner,
                            uint32_t boxOuter) {
  CUtensorMap m{};
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * 2};
  const cuuint32_t box[2] = {boxInner, boxOuter};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = encodeFn()(&m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw cusync::Error(cusync::ErrorCode::CudaError, "gemm",
                        "cuTensorMapEncodeTiled failed with code " + std::to_string(static_cast<int>(r)));
  return m;
}

SplitBuffers splitBuffers(const void* key, uint32_t tiles, uint32_t splits, uint32_t tileElems, cudaStream_t stream) {
  struct Entry {
    SplitBuffers b;
    size_t flagsCount = 0, partialElems = 0;
  };
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, Entry> cache;
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) throwCuda(e, "cudaGetDevice");
  const size_t flagsCount = 8 * static_cast<size_t>(tiles);  // per (tile, warpgroup), or per (tile, warp slab)
  const size_t partialElems = static_cast<size_t>(tiles) * (splits > 1 ? splits - 1 : 0) * tileElems;
  std::lock_guard<std::mutex> lock(mu);
  Entry& en = cache[{dev, key}];
  if (en.b.counter != nullptr && en.flagsCount >= flagsCount && en.partialElems >= partialElems) return en.b;
  // Grow: the old buffers may still be in use by queued launches, so they are
  // left allocated. Allocation is allowed while a stream is being captured.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  const size_t nf = std::max(flagsCount, en.flagsCount), np = std::max(partialElems, en.partialElems);
  const size_t head = 256 + ((nf * 4 + 255) / 256) * 256;
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, head + np * 4);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (e != cudaSuccess) throwCuda(e, "cudaMalloc(split-K workspace)");
  if (cudaError_t z = cudaMemsetAsync(p, 0, head, stream); z != cudaSuccess) throwCuda(z, "cudaMemsetAsync(split-K workspace)");
  unsigned char* b = static_cast<unsigned char*>(p);
  en.b.counter = reinterpret_cast<unsigned long long*>(b);
  en.b.flags = reinterpret_cast<uint32_t*>(b + 256);
  en.b.partials = reinterpret_cast<float*>(b + head);
  en.flagsCount = nf;
  en.partialElems = np;
  return en.b;
}

}  // namespace detail
}  // namespace cusync_gemm
