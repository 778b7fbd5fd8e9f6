// The GEMM's configuration heuristic and launch geometry (host only; the
// cost model and the measurements behind its constants: heuristic.cpp and
// docs/gemm.md). Included by gemm.h.
#pragma once

#include <cstdint>

#include "cusync/geometry.h"
#include "kernels/gemm/tile_config.h"

namespace cusync_gemm {

struct GemmArgs;

// Where a launch runs: alone (gemm(args, stream)), or as a stage of a
// pipeline, whose blocks take tickets for their run numbers (so no KCut).
enum class LaunchContext { Standalone, Stage };

// The configuration a launch of `a` uses: a.config when set, else the
// heuristic's choice for the shape on a GPU of numSMs SMs (never Auto).
// Every launch goes through this, synchronized or not.
TileConfig resolveConfig(const GemmArgs& a, int numSMs, LaunchContext where);

// The configurations the two stages of a fused pipeline run (cusync/fused.h:
// one persistent grid for a0's and a1's tiles): each stage's own choice in
// its fused-capable form (whole tiles or 64-row split tiles), where the
// kernel runs that pair (runsFusedPair: equal, or a pair of widths in
// kFusedPairs) and it costs least by the estimate; else the one of the two
// that costs least over both stages. Where a0.config / a1.config are set:
// both set, a pair the kernel runs; one set, that one for both.
struct FusedConfigs {
  TileConfig first, second;
};
FusedConfigs resolveFusedConfigs(const GemmArgs& a0, const GemmArgs& a1, int numSMs);

// Work units of a launch of configuration c: tiles, or tile parts where c
// splits K (a fused pipeline counts each stage's units).
uint32_t workUnits(const GemmArgs& a, TileConfig c, int numSMs);

// The heuristic's estimate of a launch of configuration c (resolved), in
// units of one 128x256x64 k-block step of one SM; what resolveConfig minimizes.
double estimatedCost(int64_t M, int64_t N, int64_t K, int numSMs, TileConfig c);

// Parts per tile of a SplitK launch of 64x128 tiles, as the heuristic picks them.
uint32_t chooseSplits(int64_t M, int64_t N, int64_t K, int numSMs);
// Parts per split tile of configuration c: a.splitK if set (clamped to the
// k-blocks), else the heuristic's; 1 unless c splits K.
uint32_t splitCount(const GemmArgs& a, TileConfig c, int numSMs);
// Tiles (the first ones in stage order) computed whole: all of them unless c
// splits K; 0 for SplitK with more than one part; the whole waves for TailSplit.
uint32_t unsplitTiles(const GemmArgs& a, TileConfig c, int numSMs);
// Groups of a KCut launch: one block per 128-row band in each, as many as
// fit the SMs (at least one, at most the tiles' k-blocks), or a.kCutGroups
// (clamped to the same bounds); 0 unless c is a KCut configuration.
uint32_t kCutGroups(const GemmArgs& a, TileConfig c, int numSMs);

// Stage geometry of configuration c: grid x over N tiles, y over M tiles;
// tile = the output tile {columns, rows, BK}: BN columns (BN / 2 with SwiGLU,
// whose tiles write half as many columns as they compute), BM rows (256 for
// ClusterPair). Build a cusync::Stage with these.
cusync::Dim3 stageGrid(const GemmArgs& a, TileConfig c);
cusync::Dim3 stageTile(const GemmArgs& a, TileConfig c);
// Blocks of a persistent launch: min(SMs, work units); work units are tiles,
// split parts, or KCut groups x bands; ClusterPair launches two per stage tile.
uint32_t persistentBlocks(const GemmArgs& a, TileConfig c, int numSMs);
// The blocks that take tickets from the stage: all, or one per cluster pair.
// A stage's view() must be taken with this count.
uint32_t ticketBlocks(const GemmArgs& a, TileConfig c, int numSMs);

// The band height, in tile rows, of the grouped order gemm() walks its tiles
// in (cusync::GroupedOrder).
uint32_t orderGroup(TileConfig c);

// Whether B's loads carry an L2 evict-first hint (gemm() only): one band of
// 128 rows, or at most 4 bands with K of at least 4096, where the weights
// stream from DRAM through L2 and little else is reused.
bool weightsEvictFirst(int64_t M, int64_t K);

}  // namespace cusync_gemm
