// Hopper GEMM with cusync hooks: C = epilogue(A x B), fp32 accumulation.
//
//   A  [M, K] row-major (activations), bf16 or fp16
//   B  [N, K] (PyTorch Linear weight, BLayout::NK) or [K, N] row-major (BLayout::KN)
//   C  [M, Nout] row-major, same type as A; Nout = N, or N / 2 for SwiGLU
//
// The kernel is persistent (one block per SM): a producer warp takes tiles
// from a cusync Stage's dispenser, waits through the stage's input policy
// before each TMA load of A (with the stage flag ReorderTileLoads B's load is
// issued before the wait and never gated; without it, after), and consumer warpgroups run
// wgmma over a shared-memory ring; after a tile's stores, one thread posts
// through the output policy. With NoSync both hooks compile away.
//
// Requirements, checked before launch (cusync::Error, InvalidArgument):
// M >= 1; N and K multiples of 8 (N of 16 for SwiGLU); A, B, C, bias and
// residual 16-byte aligned; a GPU with an sm_90a binary of the kernel.
#pragma once

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "cusync/error.h"
#include "cusync/geometry.h"
#include "cusync/tile_order.h"

namespace cusync_gemm {

enum class DType { BF16, FP16 };
enum class BLayout { NK, KN };  // NK: B[n][k] (K-major, Linear weights); KN: B[k][n]

// Fused epilogues, applied to the fp32 accumulator before rounding:
//   Identity  C = acc
//   Bias      C = acc + bias[n]
//   Gelu      C = gelu_tanh(acc + bias[n])            (bias optional)
//   SwiGLU    C[m][j] = silu(g) * u, with g and u from interleaved columns
//             (bias optional, added to g and u first). Columns come in blocks
//             of 16: n = 16q + r, r < 8 is gate 8q + r, r >= 8 is up 8q + r - 8.
//             Build such a weight with swigluInterleavedRow(). Nout = N / 2.
//   Residual  C = acc + bias[n] (optional) + residual[m][n]   (residual [M, N], type of C)
enum class Epilogue { Identity, Bias, Gelu, SwiGLU, Residual };

// Weight row of the fused [2F, K] SwiGLU matrix that holds gate row f (up = false)
// or up row f (up = true) of the unfused [F, K] gate and up weights.
constexpr uint32_t swigluInterleavedRow(uint32_t f, bool up) { return 16 * (f / 8) + (f % 8) + (up ? 8 : 0); }

// Tile configurations. Auto lets the heuristic choose.
//   T64x128SplitK: 64x128 tiles, K split into GemmArgs::splitK parts (0: the
//   heuristic's splitCount()), so that small M keeps every SM busy. Work units
//   (tile, split) are dispensed in the stage's tile order; the last split of a
//   tile adds the others' fp32 partials in a fixed order (deterministic),
//   applies the epilogue and posts the tile once; where all parts run at once
//   in gemm(), each part finishes some rows of the tile in that same order. Uses a per-stage device workspace
//   (tiles x (splits - 1) x 32 KiB), allocated on first use and kept.
//   T64x256SplitK: the same with 64x256 tiles (less A traffic per B byte).
//   T128x192: 128x192 tiles; with 256 they give the heuristic two tile counts
//   per row band, so that more shapes fill whole waves (N = 6144 at M = 512:
//   128 tiles of 128x192 on 132 SMs against 96 of 128x256).
//   T128x176, T128x144, T128x96 and their SplitTail forms: narrower tiles
//   for shapes that 192 and 256 leave part-empty (N = 5504: 32 columns of
//   176 against 29 of 192; N = 4608: 32 of 144; N = 3072: 32 of 96).
//   T128x168 (whole tiles only): N = 5504 in 33 columns, whole waves of 132
//   tiles at M = 512, 1024, 2048. Not with SwiGLU, whose gate and up blocks
//   of 8 columns come in pairs (168 = 21 blocks).
//   T128x256SplitTail, T128x192SplitTail: 128x256 (128x192) tiles in whole
//   waves, then the tiles of the last, part-empty wave each split into S
//   parts (GemmArgs::splitK, or the heuristic's count) so that they fill the
//   SMs; finished like split K. Workspace: tail tiles x (S - 1) x 128 (96) KiB.
//   T128x192Pair, T128x256Pair: a cluster of two blocks per stage tile of
//   256 x 192 (256 x 256): each block computes 128 rows and loads its own A,
//   and each loads half of the B k-block and multicasts it to both (TMA
//   multicast), so B crosses from L2 once per pair. The stage's tiles are
//   256 rows tall; the first block of a cluster takes the tickets and posts.
//   On the H100 (kernels/gemm/NOTES.md v9) 128x256 pairs ran 1-1.5% faster
//   than single blocks where K is long, and slower at short K; the full
//   heuristic picks T128x256Pair there. 128x192 pairs showed no gain.
//   T128x192Stream, T128x256Stream: 128x192 (128x256) tiles, the work cut
//   evenly by k-blocks instead of by tiles, so that few tiles still fill
//   every SM. The blocks form groups of one block per 128-row band; the
//   tiles' k-blocks are laid out column by column, and group g computes the
//   g-th of G equal ranges of that sequence, each block in its own band, so
//   the blocks of a group read the same B k-blocks at the same time (B is
//   fetched once). A tile cut between groups is finished by the part holding
//   its first k-block, at the end of its group's range, which adds the
//   later groups' fp32 partials in group order (deterministic). Only for
//   gemm() without a stage (every block is started without tickets); the
//   NoSync heuristic (resolveNoSyncConfig) picks it where its cost model
//   wins. Workspace: blocks x 96 (128) KiB.
enum class TileConfig {
  Auto,
  T128x128,
  T128x256,
  T64x128SplitK,
  T64x256SplitK,
  T128x256SplitTail,
  T128x192,
  T128x192SplitTail,
  T128x192Pair,
  T128x256Pair,
  T128x192Stream,
  T128x256Stream,
  T128x176,
  T128x176SplitTail,
  T128x144,
  T128x144SplitTail,
  T128x96,
  T128x96SplitTail,
  T128x168
};

// Every configuration but Auto, for lists and tests.
constexpr TileConfig kAllTileConfigs[] = {TileConfig::T128x128,          TileConfig::T128x192,
                                          TileConfig::T128x256,          TileConfig::T128x192SplitTail,
                                          TileConfig::T128x256SplitTail, TileConfig::T64x128SplitK,
                                          TileConfig::T64x256SplitK,     TileConfig::T128x192Pair,
                                          TileConfig::T128x256Pair,      TileConfig::T128x192Stream,
                                          TileConfig::T128x256Stream,    TileConfig::T128x176,
                                          TileConfig::T128x176SplitTail, TileConfig::T128x144,
                                          TileConfig::T128x144SplitTail, TileConfig::T128x96,
                                          TileConfig::T128x96SplitTail,  TileConfig::T128x168};

// Whether c splits the K loop of some tiles (a split-K workspace is used).
constexpr bool isSplitConfig(TileConfig c) {
  return c == TileConfig::T64x128SplitK || c == TileConfig::T64x256SplitK || c == TileConfig::T128x256SplitTail ||
         c == TileConfig::T128x192SplitTail || c == TileConfig::T128x176SplitTail ||
         c == TileConfig::T128x144SplitTail || c == TileConfig::T128x96SplitTail;
}
// Whether c launches clusters of two blocks per stage tile (B multicast).
constexpr bool isPairConfig(TileConfig c) { return c == TileConfig::T128x192Pair || c == TileConfig::T128x256Pair; }
// Whether c is a stream configuration (gemm() without a stage only).
constexpr bool isStreamConfig(TileConfig c) { return c == TileConfig::T128x192Stream || c == TileConfig::T128x256Stream; }
constexpr bool isTailSplitConfig(TileConfig c) {
  return c == TileConfig::T128x256SplitTail || c == TileConfig::T128x192SplitTail ||
         c == TileConfig::T128x176SplitTail || c == TileConfig::T128x144SplitTail ||
         c == TileConfig::T128x96SplitTail;
}

// One tile's timeline, written when GemmArgs::trace is set (for analysis of
// pipelines: tail length, time spent waiting, overlap). Times are the GPU's
// global timer in ns. A tile cut by split K is recorded by the
// part that starts at k = 0 (start, waits) and the part whose consumer
// stores its first 64 rows (mmaStart, mmaNs, end): the finishing part, or
// part 0 where two parts share the fixup.
struct TileTrace {
  unsigned long long start;    // the producer thread took the tile
  unsigned long long end;      // stores issued and the tile posted
  unsigned int waitNs;         // spent in cusync waits before the tile's A loads
  unsigned int sm;             // SM of the block that finished the tile
  unsigned long long mmaStart;  // the consumers had the tile's first k-block (split K: the part that stores rows 0-63)
  unsigned int mmaNs;          // from mmaStart until the last MMA completed; end - mmaStart - mmaNs is the epilogue
  unsigned int setupNs;         // set in the block's first unit only, if it starts at k = 0: its start until its first ticket
  unsigned long long blockEntry;  // the block that finished the tile started (its first instruction)
  unsigned long long blockExit;   // set in the block's last tile only: the block is about to exit
};

struct GemmArgs {
  int64_t M = 0, N = 0, K = 0;
  DType dtype = DType::BF16;
  BLayout bLayout = BLayout::NK;
  const void* A = nullptr;
  const void* B = nullptr;
  void* C = nullptr;
  Epilogue epilogue = Epilogue::Identity;
  const void* bias = nullptr;      // [N], type of C
  const void* residual = nullptr;  // [M, N], type of C
  TileTrace* trace = nullptr;      // optional: one record per stage tile (by position in the tile order)
  TileConfig config = TileConfig::Auto;
  // Split configurations: number of K splits (clamped to [1, ceil(K / 64)]);
  // stream configurations: number of groups (clamped so that groups x 128-row
  // bands fit the SMs, and to the tiles' k-blocks); 0 = the heuristic's.
  int splitK = 0;
};

struct TileShape {
  uint32_t bm, bn, bk;
};

const char* toString(TileConfig c);
const char* toString(Epilogue e);
TileShape tileShape(TileConfig c);
// Whether c's tiles (c resolved) hold whole SwiGLU gate/up pairs: a tile
// width that is a multiple of 16 (gate and up alternate in blocks of 8).
bool supportsSwiGLU(TileConfig c);

// The heuristic: a configuration for this shape on a GPU with numSMs SMs.
// Never returns Auto.
// chooseConfig(M, N, K, SMs): the 128-row configurations only (T128x128,
// T128x192, T128x256 and their tail splits): a launch cost model over waves,
// for pipelines whose stages need 128-row tiles.
// chooseConfig(..., allowSplitK = true): the full heuristic, which also picks
// T64x128SplitK where 128-row tiles cannot fill the SMs (small M); Auto in
// resolveConfig() and gemm() uses it.
TileConfig chooseConfig(int64_t M, int64_t N, int64_t K, int numSMs);
TileConfig chooseConfig(int64_t M, int64_t N, int64_t K, int numSMs, bool allowSplitK);

// K splits of a T64x128SplitK launch: a.splitK if set (clamped to the number
// of 64-wide k-blocks), else the count that best fills numSMs SMs.
// splitCount(a, c, SMs): the same for configuration c (1 unless c splits K).
// chooseSplits: the heuristic's count for tiles 64 x bn (bn = 128 or 256).
uint32_t splitCount(const GemmArgs& a, int numSMs);
uint32_t splitCount(const GemmArgs& a, TileConfig c, int numSMs);
// Tiles (the first ones in stage order) computed whole: all of them unless
// configuration c splits K; 0 for the 64-row split-K; whole waves for the tail split.
uint32_t splitDataParallelTiles(const GemmArgs& a, TileConfig c, int numSMs);
uint32_t chooseSplits(int64_t M, int64_t N, int64_t K, int numSMs, uint32_t bn = 128);

// The heuristic's estimate of a launch of configuration c (resolved), in
// units of one 128x256x64 k-block step of one SM; what chooseConfig minimizes.
double estimatedCost(int64_t M, int64_t N, int64_t K, int numSMs, TileConfig c);

// Throws cusync::Error(InvalidArgument) naming the first problem: bad shapes,
// null or misaligned pointers, an epilogue without its operands, a
// configuration this build does not implement. Pure host code, no GPU.
void checkArgs(const GemmArgs& a);

// The configuration a launch of `a` through a stage uses (Auto resolved with
// numSMs by chooseConfig(..., true); never a stream configuration).
TileConfig resolveConfig(const GemmArgs& a, int numSMs);
// The configuration gemm(a, stream) uses: as resolveConfig, but Auto may
// also resolve to a stream configuration where its cost model wins (not
// with the environment variable CUSYNC_GEMM_STREAM=0).
TileConfig resolveNoSyncConfig(const GemmArgs& a, int numSMs);
// Groups of a stream launch: one block per 128-row band in each, as many
// groups as fit the SMs (at least one, at most the tiles' k-blocks), or
// a.splitK of them if set (clamped to the same bounds).
uint32_t streamGroups(const GemmArgs& a, TileConfig c, int numSMs);

// Stage geometry for a launch with configuration c (resolved): grid x over N
// tiles, y over M tiles; tile = {BN, BM, BK}. Create the cusync::Stage with these.
cusync::Dim3 stageGrid(const GemmArgs& a, TileConfig c);
cusync::Dim3 stageTile(TileConfig c);

// Blocks of a persistent launch of `a` with configuration c (resolved):
// min(SMs, work units), work units = tiles (x splits for T64x128SplitK;
// or the tail tiles x splits for T128x256SplitTail); for the pair
// configurations twice min(SMs / 2, tiles).
uint32_t persistentBlocks(const GemmArgs& a, TileConfig c, int numSMs);
// The blocks of that launch that take tickets from the stage: all of them,
// or one per cluster for the pair configurations. A stage's view() must
// always be taken with this count.
uint32_t ticketBlocks(const GemmArgs& a, TileConfig c, int numSMs);

// The tile order gemm() uses for its own stages (bands of tile rows walked by
// column, see cusync/tile_order.h).
using GroupedOrder = cusync::GroupedOrder;
// The band height, in tile rows, of that order for configuration c: 6 for
// 128x168 tiles (in several waves, bands of 8 ran 10-15% slower than bands
// of 4-6 on the H100, kernels/gemm/NOTES.md v15c), 8 otherwise.
// CUSYNC_GEMM_ORDER_GROUP=n in the environment sets n for every configuration
// (for A/B runs).
uint32_t orderGroup(TileConfig c);

// Launch with no synchronization (NoSync in and out): a stage is kept per
// thread and shape internally. Asynchronous on `stream`. The kernel is
// launched as a programmatic dependent (PDL) of the kernel before it in the
// stream: its blocks may start their set-up early and wait for that kernel
// (griddepcontrol.wait) before touching any global memory, so the result is
// as with an ordinary launch. CUSYNC_GEMM_PDL=0 in the environment turns
// this off. Each block starts on the tile at its own index in the stage's
// order without taking a ticket (NoSync needs no run numbers); only later
// tiles come from the ticket counter, which saves an atomic's latency
// (1-2 us on the H100) at the start of every launch.
// CUSYNC_GEMM_STATIC_FIRST=0 turns that off.
void gemm(const GemmArgs& a, cudaStream_t stream);

}  // namespace cusync_gemm
