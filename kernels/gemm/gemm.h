// Hopper GEMM with cusync hooks: C = epilogue(A x B), fp32 accumulation.
//
//   A  [M, K] row-major (activations), bf16 or fp16
//   B  [N, K] (PyTorch Linear weight, BLayout::NK) or [K, N] row-major (BLayout::KN)
//   C  [M, Nout] row-major, same type as A; Nout = N, or N / 2 for SwiGLU
//
// The kernel is persistent (one block per SM) and warp-specialized: a
// producer warp takes work units from a tile scheduler and fills a
// shared-memory ring with TMA loads, waiting through the stage's input policy
// before each load of A; consumer warpgroups run wgmma over the ring, then
// the fused epilogue, and one thread posts each finished tile through the
// stage's output policy. With NoSync policies the hooks compile away.
// docs/gemm.md describes the layers (kernels/gemm/kernel, kernels/gemm/schedule).
//
// Entry points: gemm(args, stream) below (no synchronization), and
// gemm(args, stage, pipeline) in gemm_staged.cuh (a stage of a pipeline).
//
// Requirements, checked before launch (cusync::Error, InvalidArgument):
// M >= 1; N and K multiples of 8 (N of 16 for SwiGLU); A, B, C, C2, bias and
// residual 16-byte aligned; a GPU with an sm_90a binary of the kernel.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cusync/error.h"
#include "cusync/geometry.h"
#include "cusync/tile_order.h"
#include "kernels/gemm/tile_config.h"

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
//   Relu      C = max(acc + bias[n], 0)                  (bias optional)
//   ResidualRelu  C = max(acc + bias[n] + residual[m][n], 0)  (bias optional)
// gemm() builds the first five; Relu and ResidualRelu are built for the
// convolution's kernels (kernels/conv), ReLU being where a conv layer ends.
enum class Epilogue { Identity, Bias, Gelu, SwiGLU, Residual, Relu, ResidualRelu };

// Weight row of the fused [2F, K] SwiGLU matrix that holds gate row f (up = false)
// or up row f (up = true) of the unfused [F, K] gate and up weights.
constexpr uint32_t swigluInterleavedRow(uint32_t f, bool up) { return 16 * (f / 8) + (f % 8) + (up ? 8 : 0); }

// One tile's timeline, written when GemmArgs::trace is set (for analysis of
// pipelines: tail length, time spent waiting, overlap). Times are the GPU's
// global timer in ns. A tile cut by split K is recorded by the part that
// starts at k = 0 (start, waits) and the part whose consumer stores its first
// 64 rows (mmaStart, mmaNs, end): the finishing part, or part 0 where two
// parts share the fixup.
struct TileTrace {
  unsigned long long start;       // the producer thread took the tile
  unsigned long long end;         // stores issued (posted then, or after the block's next unit's MMAs)
  unsigned int waitNs;            // the producer thread stalled on the tile's cusync waits before its A loads
  unsigned int sm;                // SM of the block that finished the tile
  unsigned long long mmaStart;    // the consumers had the tile's first k-block
  unsigned int mmaNs;             // from mmaStart until the last MMA completed; end - mmaStart - mmaNs is the epilogue
  unsigned int setupNs;           // set in the block's first unit only, if it starts at k = 0: its start until its first ticket
  unsigned long long blockEntry;  // the block that finished the tile started (its first instruction)
  unsigned long long blockExit;   // set in the block's last tile only: the block is about to exit
  unsigned int peerSm;            // a cluster pair's tile: SM of the second block plus one (0: no second block)
  // The low 32 bits of the time the block's waiter had resolved the tile's
  // cusync waits (its k = 0 unit; 0: no waiter, or not such a unit), the
  // high bits those of `start` (readyAt() puts them together).
  unsigned int readyLow32;
};

// The time of TileTrace::readyLow32 in full, from `start` (the same block's
// loader took the tile within a few microseconds of it); 0 where it is unset.
inline unsigned long long readyAt(const TileTrace& t) {
  if (t.readyLow32 == 0 || t.start == 0) return 0;
  long long r = static_cast<long long>((t.start & ~0xffffffffull) | t.readyLow32);
  const long long s = static_cast<long long>(t.start);
  if (r - s > (1ll << 31)) r -= 1ll << 32;
  if (s - r > (1ll << 31)) r += 1ll << 32;
  return static_cast<unsigned long long>(r);
}

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
  // Split output: where splitN > 0, C holds columns [0, splitN) as an
  // [M, splitN] matrix and C2 columns [splitN, N) as an [M, N - splitN] one
  // (the attention block's QKV projection writes Q to its buffer and K, V
  // into the KV cache this way). splitN is a multiple of 8 below N; every
  // configuration stores it, and no SwiGLU.
  void* C2 = nullptr;
  int64_t splitN = 0;
  TileTrace* trace = nullptr;      // optional: one record per stage tile (by position in the tile order)
  TileConfig config = TileConfig::Auto;
  // SplitK and TailSplit configurations: parts per split tile (clamped to
  // [1, ceil(K / 64)]); 0 = the heuristic's.
  int splitK = 0;
  // KCut configurations: groups of blocks (clamped so that groups x 128-row
  // bands fit the SMs, and to the tiles' k-blocks); 0 = the heuristic's.
  int kCutGroups = 0;
};

struct TileShape {
  uint32_t bm, bn, bk;
};

const char* toString(TileConfig c);
const char* toString(Epilogue e);
// The configuration named `name` (as toString prints it, or "auto"); throws
// cusync::Error(InvalidArgument) listing the names for an unknown one.
TileConfig parseTileConfig(const char* name);
TileShape tileShape(TileConfig c);
// Whether c's tiles hold whole SwiGLU gate/up pairs: a tile width that is a
// multiple of 16 (gate and up alternate in blocks of 8).
bool supportsSwiGLU(TileConfig c);

// Throws cusync::Error(InvalidArgument) naming the first problem: bad shapes,
// null or misaligned pointers, an epilogue without its operands, a
// configuration this build does not implement. Pure host code, no GPU.
void checkArgs(const GemmArgs& a);

// Launch with no synchronization (NoSync in and out), asynchronous on
// `stream`; the configuration is a.config or the heuristic's choice for a
// launch alone (heuristic.h). The kernel is launched as a programmatic
// dependent (PDL) of the kernel before it in the stream: its blocks may set
// up early and wait for that kernel (griddepcontrol.wait) before touching
// global memory, so the result is as with an ordinary launch. Blocks take
// their tiles statically (no ticket atomics); kernels/gemm/env.h lists the
// environment switches that turn these choices off for A/B runs.
void gemm(const GemmArgs& a, cudaStream_t stream);

}  // namespace cusync_gemm

#include "kernels/gemm/heuristic.h"
