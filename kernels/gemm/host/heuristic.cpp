// The GEMM's configuration heuristic: a cost model over waves of tiles, fitted
// to H100 measurements (docs/gemm.md, "Measured facts"), and the launch
// geometry that follows from a configuration.
#include "kernels/gemm/heuristic.h"

#include <algorithm>
#include <string>

#include "cusync/error.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm {

namespace {

[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", what); }
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t kBlocks(int64_t K) { return cdiv(std::max<int64_t>(K, 1), 64); }

const TileConfigRow& rowOf(TileConfig c) {
  const TileConfigRow* r = findTileConfig(c);
  if (r == nullptr) bad("configuration 'auto' has no table row; resolve it first");
  return *r;
}

constexpr int kSplitMax = 32;  // caller overrides are clamped to this

// Costs are in units of one 128x256x64 k-block step of one SM at the
// steady-state rate (about 0.68 us on the H100).
//  - A k-block of a bm x bn tile costs its share of that step over the
//    configuration's rate (TileConfigRow::rate, measured per width).
//  - Every tile adds a fixed cost: the epilogue and the MMA pipeline's
//    drain and refill.
//  - A launch takes as many tile times as it has waves (the last one often
//    part empty).
constexpr double kTileOverhead = 2.5;
double stepCost(const TileConfigRow& r) { return static_cast<double>(r.bm) * r.bn / (128.0 * 256.0) / r.rate; }

// Cluster pairs: the hand-over of each tile and the two blocks waiting on
// each other's slot releases cost about two k-blocks per tile.
constexpr double kPairTileOverhead = kTileOverhead + 2.0;

// KCut: a cut tile's partial is written by one block and read by another
// (about 4 k-block steps at 128x256); its blocks start without tickets, half
// the tile overhead; and a k-block costs more the more groups walk the
// sequence at unrelated k offsets: 1.15x at 33 groups, 1.5x at 66, modelled
// as 1 + (2 G / SMs)^2 where tiles are cut. It must beat the tile schedules
// by 3%, and cut tiles need at least 4 bands (docs/gemm.md, "KCut").
constexpr double kKCutFixup = 4.0;
constexpr double kKCutTileOverhead = kTileOverhead / 2;
constexpr double kKCutMargin = 0.97;
constexpr int64_t kKCutMinBands = 4;

// Narrow widths (176, 168, 144, 96) win only with at least 64 k-blocks, where
// their rates were fitted (docs/gemm.md, "Narrow widths").
constexpr int64_t kNarrowMinKBlocks = 64;
bool isNarrow(int bn) { return bn == 176 || bn == 168 || bn == 144 || bn == 96; }

// TailSplit: whole waves of 128 x bn tiles, then the R tiles left (R < SMs)
// each split into S parts, S chosen for the least estimated time: the part
// waves, each a 1/S share of the k-blocks plus the tile overhead, plus per
// extra split a fixup (a partial written, then read back by the finisher
// after its siblings are done, which is latency-bound): 8 steps per 256
// columns orders the one-wave splits at llama-qkv M = 256 as measured
// (96/t2 30.8 us, 144/t3 32.0, 176/t3 32.6, 192/t4 33.8).
constexpr double kTailFixup = 8.0;
struct TailPlan {
  uint32_t splits = 1;
  uint32_t unsplit = 0;
  double cost = 0;
};
TailPlan tailPlan(int64_t M, int64_t N, int64_t K, int numSMs, int forcedSplits, const TileConfigRow& r) {
  const int64_t tiles = cdiv(M, 128) * cdiv(N, r.bn);
  const int64_t kIters = kBlocks(K);
  const int64_t waves = tiles / numSMs, rest = tiles % numSMs;
  const double step = stepCost(r);
  const double tileCost = static_cast<double>(kIters) * step + kTileOverhead;
  TailPlan p;
  p.unsplit = static_cast<uint32_t>(waves * numSMs);
  p.cost = static_cast<double>(waves + (rest > 0 ? 1 : 0)) * tileCost;
  if (rest == 0) {
    p.unsplit = static_cast<uint32_t>(tiles);
    return p;
  }
  // Splitting pays only with all parts in one wave (R S <= SMs) and K of at
  // least 64 k-blocks: parts in several waves lost to unsplit tiles almost
  // everywhere (1.05-1.9x), and at K <= 1536 the fixup outweighs the gain.
  if (forcedSplits <= 0 && (kIters < 64 || 2 * rest > numSMs)) return p;
  // Narrow widths split only where no whole wave precedes.
  if (forcedSplits <= 0 && isNarrow(r.bn) && waves > 0) return p;
  int64_t maxS = std::min<int64_t>(forcedSplits > 0 ? std::min(forcedSplits, kSplitMax) : 8, kIters);
  if (forcedSplits <= 0) maxS = std::min<int64_t>(maxS, numSMs / rest);
  for (int64_t S = forcedSplits > 0 ? maxS : 2; S <= maxS; ++S) {
    const double write = 2.0 * static_cast<double>(r.bn) / 256.0;
    const double part = static_cast<double>(cdiv(kIters, S)) * step + kTileOverhead + write;
    const double fixup = kTailFixup * static_cast<double>(r.bn) / 256.0 * static_cast<double>(S - 1);
    const double c = static_cast<double>(waves) * tileCost + static_cast<double>(cdiv(rest * S, numSMs)) * part + fixup;
    if (forcedSplits > 0 || c < p.cost) p.splits = static_cast<uint32_t>(S), p.cost = c;
  }
  return p;
}

// KCut: G groups of one block per 128-row band, so G x bands <= SMs (a
// finisher waits for other blocks, so every block must be resident), and no
// more groups than k-blocks of work. Where a divisor of the column count
// within 10% below that fits, it is used instead: every group then walks
// whole columns in step with the others, no tile is cut, and nothing is
// spread over k offsets.
struct KCutPlan {
  int64_t groups = 1;
  int64_t kIters = 1;
  int64_t share = 0;  // k-blocks per group (the largest share)
  bool cut = false;   // some tile is cut between groups
};
KCutPlan kCutPlan(int64_t M, int64_t N, int64_t K, int numSMs, int bn, int forcedGroups) {
  KCutPlan p;
  const int64_t bands = cdiv(M, 128);
  const int64_t cols = cdiv(N, bn);
  p.kIters = kBlocks(K);
  const int64_t work = cols * p.kIters;
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

double kCutCost(const KCutPlan& p, int numSMs, const TileConfigRow& r) {
  const double spread = p.cut ? 2.0 * static_cast<double>(p.groups) / numSMs : 0.0;
  return static_cast<double>(p.share) * stepCost(r) * (1.0 + spread * spread) +
         static_cast<double>(cdiv(p.share, p.kIters)) * kKCutTileOverhead +
         (p.cut ? kKCutFixup * static_cast<double>(r.bn) / 256.0 : 0.0);
}

// The heuristic over every configuration a stage can run (all but KCut).
// swiglu: only configurations whose tiles hold whole gate/up pairs.
TileConfig chooseStageConfig(int64_t M, int64_t N, int64_t K, int numSMs, bool swiglu) {
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
  auto considerTail = [&](TileConfig c) {
    const TailPlan tail = tailPlan(M, N, K, numSMs, 0, rowOf(c));
    if (tail.splits < 2) return;
    if (bestTail == TileConfig::Auto || tail.cost < bestTailCost) bestTail = c, bestTailCost = tail.cost;
  };
  considerTail(TileConfig::T128x256TailSplit);
  considerTail(TileConfig::T128x192TailSplit);
  // Narrow widths where they were measured to win: K of at least 64
  // k-blocks, whole tiles and split parts in one wave. 128x176 also in two
  // waves whose last is at least 7/8 full (llama-mlp1 M = 1024: 1.049-1.054
  // against 1.09-1.11 for 192 and 256); 128x168 also in up to four whole
  // waves (N = 5504 in 33 columns at M = 1024 and 2048), walked in bands of
  // 6 rows (orderGroup): 1.047/1.049 against 176's 1.05/1.07-1.14.
  if (kBlocks(K) >= kNarrowMinKBlocks) {
    for (TileConfig c : {TileConfig::T128x176, TileConfig::T128x168, TileConfig::T128x144, TileConfig::T128x96}) {
      if (swiglu && !supportsSwiGLU(c)) continue;
      const int64_t tiles = cdiv(M, 128) * cdiv(N, rowOf(c).bn), rest = tiles % numSMs;
      const bool fewFullWaves = c == TileConfig::T128x176 && tiles <= 2 * static_cast<int64_t>(numSMs) &&
                                (rest == 0 || 8 * rest >= 7 * static_cast<int64_t>(numSMs));
      const bool wholeWaves = c == TileConfig::T128x168 && rest == 0 && tiles <= 4 * static_cast<int64_t>(numSMs);
      if (tiles > numSMs && !fewFullWaves && !wholeWaves) continue;
      const double cost = estimatedCost(M, N, K, numSMs, c);
      if (cost < bestCost * 0.999) best = c, bestCost = cost;
    }
    for (TileConfig c : {TileConfig::T128x176TailSplit, TileConfig::T128x144TailSplit, TileConfig::T128x96TailSplit})
      considerTail(c);
  }
  if (bestTail != TileConfig::Auto && bestTailCost < 0.95 * bestCost) best = bestTail, bestCost = bestTailCost;
  const double pairCost = estimatedCost(M, N, K, numSMs, TileConfig::T128x256Pair);
  if (pairCost < bestCost * 0.999) best = TileConfig::T128x256Pair, bestCost = pairCost;
  // 64-row split tiles where M fits one 64-row band (128-row tiles waste
  // half their rows and too few tiles pull the weights at full bandwidth)
  // and K has at least 16 k-blocks; at M = 256 they lost on every shape.
  if (M <= 64 && kBlocks(K) >= 16) best = TileConfig::T64x128SplitK;
  return best;
}

// A launch alone may also take a KCut configuration, where its cost model wins.
TileConfig chooseStandaloneConfig(const GemmArgs& a, int numSMs) {
  const TileConfig c = chooseStageConfig(a.M, a.N, a.K, numSMs, a.epilogue == Epilogue::SwiGLU);
  if (c == TileConfig::T64x128SplitK || envSwitchOff(kEnvKCut)) return c;
  // Short K (at most 16 k-blocks) in two to four waves of 128x128 tiles, the
  // last at least 7/8 full: whole 128x128 tiles beat KCut there (llama-wo
  // M = 512: 1.022 against 1.065; M = 1024: 1.014 against 1.040). The cost
  // model ranks 128x128 last there: its fixed overhead per tile likely
  // overstates short tiles in persistent blocks, which overlap a tile's
  // epilogue with the next tile's loads. At 24 k-blocks (gpt3-wo M = 512) and
  // in 8 waves (llama-wo M = 2048) KCut stayed ahead.
  {
    const int64_t tiles = cdiv(a.M, 128) * cdiv(a.N, 128), rest = tiles % numSMs;
    const int64_t sms = numSMs;
    if (kBlocks(a.K) <= 16 && tiles > sms && tiles <= 4 * sms && (rest == 0 || 8 * rest >= 7 * sms))
      return TileConfig::T128x128;
  }
  const bool fewBands = cdiv(a.M, 128) < kKCutMinBands;
  TileConfig best = c;
  double bestCost = estimatedCost(a.M, a.N, a.K, numSMs, c) * kKCutMargin;
  for (TileConfig k : {TileConfig::T128x256KCut, TileConfig::T128x192KCut}) {
    const KCutPlan plan = kCutPlan(a.M, a.N, a.K, numSMs, rowOf(k).bn, 0);
    if (fewBands && plan.cut) continue;  // under 4 bands only cuts of whole columns
    const double cost = kCutCost(plan, numSMs, rowOf(k));
    if (cost < bestCost) best = k, bestCost = cost;
  }
  return best;
}

}  // namespace

TileConfig resolveConfig(const GemmArgs& a, int numSMs, LaunchContext where) {
  if (a.config != TileConfig::Auto) return a.config;
  return where == LaunchContext::Stage ? chooseStageConfig(a.M, a.N, a.K, numSMs, a.epilogue == Epilogue::SwiGLU)
                                       : chooseStandaloneConfig(a, numSMs);
}

namespace {
// The whole-tile row of c's tile width (c itself where it already runs whole
// tiles or 64-row split tiles): what a fused kernel runs in c's place.
TileConfig fusedForm(TileConfig c) {
  const TileConfigRow& r = rowOf(c);
  if (r.schedule == Schedule::WholeTiles || r.schedule == Schedule::SplitK) return c;
  for (const TileConfigRow& w : kTileConfigs)
    if (w.schedule == Schedule::WholeTiles && w.bm == 128 && w.bn == r.bn) return w.config;
  return TileConfig::T128x256;
}
}  // namespace

FusedConfigs resolveFusedConfigs(const GemmArgs& a0, const GemmArgs& a1, int numSMs) {
  if (a0.config != TileConfig::Auto || a1.config != TileConfig::Auto) {
    const TileConfig c0 = a0.config != TileConfig::Auto ? a0.config : a1.config;
    const TileConfig c1 = a1.config != TileConfig::Auto ? a1.config : a0.config;
    if (c0 == c1 && fusedForm(c0) != c0)
      bad(std::string("tile configuration ") + toString(c0) +
          " cannot run fused: fused stages run whole tiles or 64-row split tiles");
    if (!runsFusedPair(c0, c1)) {
      std::string pairs;
      for (const FusedPairRow& p : kFusedPairs) pairs += std::string(" ") + toString(p.first) + "/" + toString(p.second);
      bad("a fused pipeline runs one configuration in both stages or one of the pairs" + pairs + "; got " +
          toString(c0) + " and " + toString(c1));
    }
    return {c0, c1};
  }
  const TileConfig own[] = {fusedForm(resolveConfig(a0, numSMs, LaunchContext::Stage)),
                            fusedForm(resolveConfig(a1, numSMs, LaunchContext::Stage))};
  const FusedConfigs cands[] = {{own[0], own[1]}, {own[0], own[0]}, {own[1], own[1]}};
  static const bool widthEach = !envSwitchOff(kEnvFusedStageWidths);
  FusedConfigs best{TileConfig::Auto, TileConfig::Auto};
  double bestCost = 0;
  for (const FusedConfigs& c : cands) {
    if (!runsFusedPair(c.first, c.second) || (c.first != c.second && !widthEach)) continue;
    if ((a0.epilogue == Epilogue::SwiGLU && !supportsSwiGLU(c.first)) ||
        (a1.epilogue == Epilogue::SwiGLU && !supportsSwiGLU(c.second)))
      continue;
    const double cost = estimatedCost(a0.M, a0.N, a0.K, numSMs, c.first) + estimatedCost(a1.M, a1.N, a1.K, numSMs, c.second);
    if (best.first == TileConfig::Auto || cost < bestCost) best = c, bestCost = cost;
  }
  return best.first == TileConfig::Auto ? FusedConfigs{TileConfig::T128x256, TileConfig::T128x256} : best;
}

uint32_t workUnits(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint32_t tiles = stageGrid(a, c).count();
  const uint32_t whole = unsplitTiles(a, c, numSMs);
  return whole + (tiles - whole) * splitCount(a, c, numSMs);
}

double estimatedCost(int64_t M, int64_t N, int64_t K, int numSMs, TileConfig c) {
  if (M < 1 || N < 1 || numSMs < 1) bad("estimatedCost: M, N and the SM count must be positive");
  const TileConfigRow& r = rowOf(c);
  const int64_t kIters = kBlocks(K);
  switch (r.schedule) {
    case Schedule::TailSplit: return tailPlan(M, N, K, numSMs, 0, r).cost;
    case Schedule::KCut: return kCutCost(kCutPlan(M, N, K, numSMs, r.bn, 0), numSMs, r);
    case Schedule::ClusterPair: {
      // Two 128-row tiles per cluster, a cluster per two SMs.
      const int64_t tiles = cdiv(M, 2 * r.bm) * cdiv(N, r.bn);
      return static_cast<double>(cdiv(tiles, std::max(1, numSMs / 2))) *
             (static_cast<double>(kIters) * stepCost(r) + kPairTileOverhead);
    }
    case Schedule::SplitK: {
      GemmArgs a;
      a.M = M, a.N = N, a.K = K;
      const int64_t S = splitCount(a, c, numSMs);
      const int64_t units = cdiv(M, r.bm) * cdiv(N, r.bn) * S;
      return static_cast<double>(cdiv(units, numSMs)) *
             (static_cast<double>(cdiv(kIters, S)) * stepCost(r) + kTileOverhead);
    }
    case Schedule::WholeTiles: break;
  }
  const int64_t tiles = cdiv(M, r.bm) * cdiv(N, r.bn);
  return static_cast<double>(cdiv(tiles, numSMs)) * (static_cast<double>(kIters) * stepCost(r) + kTileOverhead);
}

// Splitting K costs time of its own (S = 3..11 ran 1.2-2.5x cuBLAS where
// S = 1 ran 0.96-1.13x at M = 64), and S = 2 paid alone only where the tiles
// fill under a third of the SMs (gpt3-qkv 1.12 -> 1.02, llama-qkv 1.49 ->
// 1.13). Up to half the SMs it pays where the launch is not alone: tiles
// that leave SMs idle run one per TPC only when the hardware places them on
// an idle GPU, and two blocks on one TPC stream weights at about 0.7x. A grid
// launched early (programmatic dependent launch) or a fused kernel's tickets
// put them in TPC pairs: gpt3-mlp1 (48 tiles) made a decode MLP 110 us per
// run back to back with one part, 90-93 with two (docs/gemm.md, "Split K").
// So: two parts while the tiles fill at most half the SMs and each part
// keeps at least 16 k-blocks, else one.
uint32_t chooseSplits(int64_t M, int64_t N, int64_t K, int numSMs) {
  if (M < 1 || N < 1 || K < 1 || numSMs < 1) bad("chooseSplits: M, N, K and the SM count must be positive");
  static const int forced = envInt(kEnvSplits);
  if (forced > 0) return static_cast<uint32_t>(std::min<int64_t>({forced, kSplitMax, kBlocks(K)}));
  const int64_t tiles = cdiv(M, 64) * cdiv(N, 128);
  return (kBlocks(K) >= 32 && 2 * tiles <= numSMs) ? 2u : 1u;
}

uint32_t splitCount(const GemmArgs& a, TileConfig c, int numSMs) {
  const TileConfigRow& r = rowOf(c);
  if (r.schedule == Schedule::TailSplit) return tailPlan(a.M, a.N, a.K, numSMs, a.splitK, r).splits;
  if (r.schedule != Schedule::SplitK) return 1;
  if (a.splitK > 0) return static_cast<uint32_t>(std::min<int64_t>(std::min<int64_t>(a.splitK, kBlocks(a.K)), kSplitMax));
  return chooseSplits(a.M, a.N, a.K, numSMs);
}

uint32_t unsplitTiles(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint32_t tiles = stageGrid(a, c).count();
  const TileConfigRow& r = rowOf(c);
  if (r.schedule == Schedule::SplitK) return splitCount(a, c, numSMs) > 1 ? 0 : tiles;
  if (r.schedule == Schedule::TailSplit) {
    const TailPlan p = tailPlan(a.M, a.N, a.K, numSMs, a.splitK, r);
    return p.splits > 1 ? p.unsplit : tiles;
  }
  return tiles;
}

uint32_t kCutGroups(const GemmArgs& a, TileConfig c, int numSMs) {
  const TileConfigRow& r = rowOf(c);
  if (r.schedule != Schedule::KCut) return 0;
  return static_cast<uint32_t>(kCutPlan(a.M, a.N, a.K, numSMs, r.bn, a.kCutGroups).groups);
}

cusync::Dim3 stageGrid(const GemmArgs& a, TileConfig c) {
  const TileShape t = tileShape(c);
  return cusync::Dim3(static_cast<uint32_t>((a.N + t.bn - 1) / t.bn), static_cast<uint32_t>((a.M + t.bm - 1) / t.bm), 1);
}

cusync::Dim3 stageTile(const GemmArgs& a, TileConfig c) {
  const TileShape t = tileShape(c);
  return cusync::Dim3(a.epilogue == Epilogue::SwiGLU ? t.bn / 2 : t.bn, t.bm, t.bk);
}

uint32_t persistentBlocks(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint64_t tiles = stageGrid(a, c).count();
  switch (scheduleOf(c)) {
    case Schedule::ClusterPair:
      return 2 * static_cast<uint32_t>(std::min<uint64_t>(tiles, std::max(1, numSMs / 2)));
    case Schedule::KCut: return kCutGroups(a, c, numSMs) * stageGrid(a, c).y;
    default: break;
  }
  const uint64_t whole = unsplitTiles(a, c, numSMs);
  const uint64_t units = whole + (tiles - whole) * splitCount(a, c, numSMs);
  return static_cast<uint32_t>(std::min<uint64_t>(units, static_cast<uint64_t>(numSMs)));
}

uint32_t ticketBlocks(const GemmArgs& a, TileConfig c, int numSMs) {
  const uint32_t b = persistentBlocks(a, c, numSMs);
  return scheduleOf(c) == Schedule::ClusterPair ? b / 2 : b;
}

// Bands of 6 tile rows for 128x168 tiles (in several waves, bands of 8 ran
// 10-15% slower than bands of 4-6), 8 otherwise.
uint32_t orderGroup(TileConfig c) {
  const int forced = envInt(kEnvOrderGroup);
  if (forced > 0) return static_cast<uint32_t>(forced);
  return c == TileConfig::T128x168 ? 6u : 8u;
}

// B evict-first measured 2-7% faster at M = 256-512 on the long-K shapes and
// at one band of any K (no B k-block is read twice there); 0.5-4% slower with
// more bands or short K, where B is reused from L2.
bool weightsEvictFirst(int64_t M, int64_t K) {
  const int64_t bands = cdiv(M, 128);
  return bands == 1 || (bands <= 4 && K >= 4096);
}

}  // namespace cusync_gemm
