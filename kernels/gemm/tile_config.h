// Tile configurations of the Hopper GEMM, as data: one row per configuration
// in kTileConfigs. The launch code instantiates a kernel per row (tile shape,
// schedule, ring depth) and the heuristic reads the row's cost-model rate, so
// a new configuration is a new TileConfig name plus one row here.
//
// Schedules (how a launch turns tiles into work units; docs/gemm.md):
//   WholeTiles   one unit per tile, taken by ticket or statically.
//   SplitK       64-row tiles, each split into S parts over K (GemmArgs::splitK,
//                or the heuristic's count); the part holding the last k-block
//                adds the others' fp32 partials in a fixed order and stores.
//   TailSplit    128-row tiles in whole waves, then the tiles of the last,
//                part-empty wave each split into S parts, finished as SplitK.
//   KCut         the k-blocks of all tiles, laid out column by column, cut
//                into G equal ranges, one per group of blocks (one block per
//                128-row band); no tickets, so gemm() without a stage only.
//   ClusterPair  clusters of two blocks per stage tile of 256 rows; each
//                block loads its own A and half of B, multicast to both.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cusync_gemm {

enum class TileConfig {
  Auto,
  T128x128,
  T128x192,
  T128x256,
  T128x176,
  T128x168,
  T128x144,
  T128x96,
  T128x64,
  T64x128SplitK,
  T128x256TailSplit,
  T128x192TailSplit,
  T128x176TailSplit,
  T128x144TailSplit,
  T128x96TailSplit,
  T128x192KCut,
  T128x256KCut,
  T128x256Pair,
  T128x64Resident,
};

enum class Schedule : uint8_t { WholeTiles, SplitK, TailSplit, KCut, ClusterPair };

struct TileConfigRow {
  TileConfig config;
  const char* name;
  int bm, bn;  // one block's tile (a ClusterPair stage tile is 2 bm rows)
  Schedule schedule;
  // Shared-memory ring slots of 64-wide k-blocks; 0: as many as fit beside
  // one epilogue buffer per consumer warp.
  int ringSlots;
  // The cost model's rate of one k-block step relative to a 128x256 tile's
  // (heuristic.cpp): narrower tiles re-read more operand bytes per FLOP.
  double rate;
  // 0: B streams through the ring with A. n > 0: a block loads B's first n
  // k-blocks of its columns once into shared memory of their own and the
  // ring carries A alone; for a reduction of at most n k-blocks over one
  // column tile (a 3 x 3 x 64 filter of 64 output channels: 9 k-blocks,
  // 72 KiB), which every tile then shares. Convolutions only.
  int residentKBlocks = 0;
};

// Where the rates and ring depths come from: docs/gemm.md, "Measured facts".
inline constexpr TileConfigRow kTileConfigs[] = {
    {TileConfig::T128x128, "128x128", 128, 128, Schedule::WholeTiles, 6, 0.72},
    {TileConfig::T128x192, "128x192", 128, 192, Schedule::WholeTiles, 4, 0.98},
    {TileConfig::T128x256, "128x256", 128, 256, Schedule::WholeTiles, 4, 1.0},
    {TileConfig::T128x176, "128x176", 128, 176, Schedule::WholeTiles, 0, 0.97},
    {TileConfig::T128x168, "128x168", 128, 168, Schedule::WholeTiles, 0, 0.955},
    {TileConfig::T128x144, "128x144", 128, 144, Schedule::WholeTiles, 0, 0.855},
    {TileConfig::T128x96, "128x96", 128, 96, Schedule::WholeTiles, 0, 0.90},
    // For 64-channel convolutions (kernels/conv); the GEMM heuristic does not pick it. Its rate is unfitted.
    {TileConfig::T128x64, "128x64", 128, 64, Schedule::WholeTiles, 0, 0.55},
    {TileConfig::T64x128SplitK, "64x128-splitk", 64, 128, Schedule::SplitK, 8, 0.576},
    {TileConfig::T128x256TailSplit, "128x256-tailsplit", 128, 256, Schedule::TailSplit, 4, 1.0},
    {TileConfig::T128x192TailSplit, "128x192-tailsplit", 128, 192, Schedule::TailSplit, 4, 0.98},
    {TileConfig::T128x176TailSplit, "128x176-tailsplit", 128, 176, Schedule::TailSplit, 0, 0.97},
    {TileConfig::T128x144TailSplit, "128x144-tailsplit", 128, 144, Schedule::TailSplit, 0, 0.855},
    {TileConfig::T128x96TailSplit, "128x96-tailsplit", 128, 96, Schedule::TailSplit, 0, 0.71},
    {TileConfig::T128x192KCut, "128x192-kcut", 128, 192, Schedule::KCut, 5, 0.98},
    {TileConfig::T128x256KCut, "128x256-kcut", 128, 256, Schedule::KCut, 4, 1.0},
    {TileConfig::T128x256Pair, "128x256-pair", 128, 256, Schedule::ClusterPair, 4, 1 / 0.975},
    // 64-channel convolutions with the filter resident (kernels/conv).
    {TileConfig::T128x64Resident, "128x64-resident", 128, 64, Schedule::WholeTiles, 0, 0.55, 9},
};
inline constexpr size_t kNumTileConfigs = sizeof(kTileConfigs) / sizeof(kTileConfigs[0]);

// Pairs of configurations a fused kernel runs with a tile width per stage
// (first for the producer stage, second for the consumer), beside every
// fused-capable configuration with itself: where the MLPs' stages pick
// different widths on a 132-SM GPU (GPT-3 M = 256: 96 / 192; M = 1024 and
// 3072: 192 / 256; LLaMA M = 256: 96 / 128; M = 512 and 1024: 176 / 256).
// Each pair is one more kernel per epilogue pair, so the list stays short.
struct FusedPairRow {
  TileConfig first, second;
};
inline constexpr FusedPairRow kFusedPairs[] = {
    {TileConfig::T128x96, TileConfig::T128x192},
    {TileConfig::T128x96, TileConfig::T128x128},
    {TileConfig::T128x176, TileConfig::T128x256},
    {TileConfig::T128x192, TileConfig::T128x256},
};
inline constexpr size_t kNumFusedPairs = sizeof(kFusedPairs) / sizeof(kFusedPairs[0]);

// The index of configuration c's row in kTileConfigs (kNumTileConfigs for Auto).
constexpr size_t tileConfigIndex(TileConfig c) {
  for (size_t i = 0; i < kNumTileConfigs; ++i)
    if (kTileConfigs[i].config == c) return i;
  return kNumTileConfigs;
}

// The row of configuration c; nullptr for Auto.
constexpr const TileConfigRow* findTileConfig(TileConfig c) {
  const size_t i = tileConfigIndex(c);
  return i < kNumTileConfigs ? &kTileConfigs[i] : nullptr;
}
// The schedule of a resolved configuration (WholeTiles for Auto).
constexpr Schedule scheduleOf(TileConfig c) {
  const TileConfigRow* r = findTileConfig(c);
  return r ? r->schedule : Schedule::WholeTiles;
}
// Whether c splits the K loop of some tiles (a split-K workspace is used).
constexpr bool splitsK(TileConfig c) {
  return scheduleOf(c) == Schedule::SplitK || scheduleOf(c) == Schedule::TailSplit;
}
// Whether a stage with a policy can run c: KCut blocks take no tickets, and
// tickets carry the run numbers that waits and posts need.
constexpr bool runsInStages(TileConfig c) { return scheduleOf(c) != Schedule::KCut; }
// B's k-blocks a block of c keeps resident (TileConfigRow::residentKBlocks; 0 for Auto).
constexpr int residentKBlocksOf(TileConfig c) {
  const TileConfigRow* r = findTileConfig(c);
  return r ? r->residentKBlocks : 0;
}
// Whether gemm() runs c: every row but the convolution's, which keep a filter resident.
constexpr bool runsAsGemm(TileConfig c) { return residentKBlocksOf(c) == 0; }

// Whether a fused kernel (gemmFused) runs c in one stage: whole tiles or
// 64-row split tiles, the weights streamed through the ring.
constexpr bool runsFused(TileConfig c) {
  const TileConfigRow* r = findTileConfig(c);
  return r != nullptr && (r->schedule == Schedule::WholeTiles || r->schedule == Schedule::SplitK) &&
         r->residentKBlocks == 0;
}
// Whether a fused kernel runs c0 in its first stage and c1 in its second:
// one fused-capable configuration in both, or a pair of kFusedPairs.
constexpr bool runsFusedPair(TileConfig c0, TileConfig c1) {
  if (c0 == c1) return runsFused(c0);
  for (const FusedPairRow& p : kFusedPairs)
    if (p.first == c0 && p.second == c1) return true;
  return false;
}

}  // namespace cusync_gemm
