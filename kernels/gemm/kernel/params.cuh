// What a GEMM kernel receives: one struct, passed as a __grid_constant__
// parameter so that the tensor maps inside it can be read by TMA in place.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "cusync/fused.h"
#include "cusync/policy/no_sync.h"
#include "cusync/policy/walk.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

constexpr int kBK = 64;         // k-block width: 128 bytes of bf16 / fp16, one 128-byte swizzle row
constexpr int kThreads = 384;   // a producer warpgroup and two consumer warpgroups
constexpr int kConsumerWarps = 8;

// What the epilogue reads besides the accumulator.
struct EpilogueParams {
  const void* bias;
  const void* residual;
  int64_t M, N;
};

// Launch choices the kernel reads at run time. gemm() sets them for its own
// NoSync stages; a pipeline's stages set only staticRuns.
struct KernelFlags {
  // Launched as a programmatic dependent of the previous kernel in the
  // stream: every thread waits for that grid before touching global memory,
  // so only the block set-up overlaps its tail.
  bool waitPrior = false;
  // NoSync stages only: each block's first unit is the one at its own index
  // in the stage order, taken without a ticket (an atomic's latency, 1-2 us
  // on the H100, saved at the start of every block).
  bool staticFirst = false;
  // With staticFirst, WholeTiles only: block b computes tiles b, b + blocks,
  // b + 2 blocks, ...: the blocks that share a B column stay neighbours in
  // every wave (later waves taken by ticket ran 6-9% slower at 176 columns).
  bool staticAll = false;
  // A stage with a policy, WholeTiles and ClusterPair only: block (or pair)
  // b computes tiles b, b + G, b + 2G, ... of the stage order (G ticket
  // takers), as gemm()'s own launches do, and takes its run number from one
  // atomic per run that adds its tile count plus one, so a run still takes
  // the stage's tickets per run. Blocks then wait on tiles that no block may
  // have started yet: only for launches where every block of the stages
  // waited on is resident or done before a waiting block starts (Serial and
  // Pdl pipelines, whose producers trigger at block start). gemm(args,
  // stage, pipeline) picks it (gemm_staged.cuh): tickets measured 10-25%
  // slower at LLaMA M = 512-1024 (H100) where a stage's blocks start
  // together.
  bool staticRuns = false;
  // B's TMA loads carry an L2 evict-first policy: the weights stream through
  // L2 once per band, and A, C and the split partials should outlive them.
  bool bEvictFirst = false;
  // A stage that waits on inputs: its waiter remembers the semaphores it saw
  // ready in the run and does not poll them again (cusync::ReadySet).
  bool waitMemo = true;
  // k-blocks before a unit's loads end at which the block takes its next
  // ticket (Unit::ticketPoint), so the atomic runs while the loader waits
  // for ring slots; a stage that waits also resolves the next unit's first
  // waits in that lead (CUSYNC_GEMM_WAITER_LEAD sets another one there).
  uint8_t ticketLead = 3;
};

// Per-launch state of the split and KCut schedules in device memory
// (host/launch.cuh allocates it per stage).
struct ScheduleParams {
  unsigned long long* counter = nullptr;  // unit tickets of the current run; reset by the last taker
  uint32_t* flags = nullptr;              // per (split tile, consumer warpgroup or warp slab): partials written
  float* partials = nullptr;              // [split tile][part < S - 1][warpgroup][fragment] fp32
  uint32_t splits = 1, units = 0, unitsPerRun = 0;
  uint32_t unsplitTiles = 0;              // leading tiles computed whole
  uint32_t kCutGroups = 0;                // KCut: groups of blocks (flags and partials per block)
};

// How an A loader lays out a ring slot's A; the consumers' wgmma descriptors follow it.
enum class ASmemLayout : uint8_t {
  // BM rows of 64 elements (128 bytes each) in the 128-byte swizzle: one
  // TMA box of BM rows x 64 columns.
  Swizzled128,
  // Eight blocks of 8 columns side by side along K, each BM rows x 16 bytes
  // without swizzle (wgmma's core matrices, 8 rows in 128 contiguous
  // bytes): a loader that fills 8 columns per TMA load, one block each.
  Blocks8,
};

// How an implicit-GEMM convolution's A is read (im2col loads, kernels/conv);
// a plain GEMM leaves it zero. Output pixel m is (n, p, q) with m = n P Q +
// p Q + q; k-block kb is filter position rs = kb / cBlocks, channels from 64
// (kb % cBlocks).
struct Im2colGeometry {
  int32_t Q = 0, PQ = 0;        // output width, output pixels per image
  int32_t strideH = 1, strideW = 1;
  int32_t padH = 0, padW = 0;
  int32_t S = 1;                // filter width
  int32_t C = 0;                // input channels
  int32_t cBlocks = 0;          // 64-channel k-blocks per filter position
  int32_t taps = 1;             // filter positions R S
};

// One GEMM stage of a kernel: its operands, epilogue inputs and stage view.
template <class T, class View_>
struct StageParams {
  using View = View_;
  CUtensorMap tmA, tmB, tmC;
  // A split output's second part (GemmArgs::splitN > 0): columns from
  // splitN go to C2 (tmC2); tmC2 = tmC and C2 = C otherwise.
  CUtensorMap tmC2;
  void* C2;
  int64_t splitN;
  T* C;
  EpilogueParams epi;
  int64_t K;
  TileTrace* trace;
  View view;
  ScheduleParams sched;
  // B k-blocks past the ring that a unit prefetches into L2 when its input
  // is not ready yet, so that the weights stream while it waits (0: none).
  uint32_t prefetchKBlocks;
  // B's loads carry an L2 evict-first policy (KernelFlags::bEvictFirst allows it).
  bool bEvictFirst;
  Im2colGeometry im2col;
};

// A kernel's parameters: one stage, or two run by one persistent grid (the
// fused launch, cusync/fused.h), whose blocks take units of both stages from
// one counter in pipeline order.
template <class T, class V0, class V1 = void>
struct KernelParams {
  static constexpr int kStages = 2;
  StageParams<T, V0> s0;
  StageParams<T, V1> s1;
  KernelFlags flags;
  cusync::FusedScheduleView fused;
};
template <class T, class V0>
struct KernelParams<T, V0, void> {
  static constexpr int kStages = 1;
  StageParams<T, V0> s0;
  KernelFlags flags;
};

template <int I, class KP>
__host__ __device__ __forceinline__ auto& stageParams(KP& kp) {
  if constexpr (I == 0) return kp.s0;
  else return kp.s1;
}

template <int I, class KP>
using StageViewOf =
    typename std::remove_cv_t<std::remove_reference_t<decltype(stageParams<I>(std::declval<KP&>()))>>::View;

// Whether any stage of a kernel waits on a producer.
template <class KP>
constexpr bool kernelWaits() {
  bool w = !cusync::policy::isNoSync<typename StageViewOf<0, KP>::In>;
  if constexpr (KP::kStages == 2) w = w || !cusync::policy::isNoSync<typename StageViewOf<1, KP>::In>;
  return w;
}

// Whether a stage's input policy waits k-block by k-block, not only at its
// walk's first step (cusync::policy::waitsAtWalkStartOnly).
template <class In>
constexpr bool waitsPerKBlock() {
  return !cusync::policy::isNoSync<In> && !cusync::policy::waitsAtWalkStartOnly<In>;
}

// Whether any stage of a kernel waits k-block by k-block: its waiter is a
// warp that resolves 32 k-blocks at a time; otherwise one thread, which
// resolves one span per unit (input_waits.cuh).
template <class KP>
constexpr bool kernelWaitsPerKBlock() {
  bool w = waitsPerKBlock<typename StageViewOf<0, KP>::In>();
  if constexpr (KP::kStages == 2) w = w || waitsPerKBlock<typename StageViewOf<1, KP>::In>();
  return w;
}

// Calls f(std::integral_constant<int, I>, stageParams<I>(kp)) for stage s of kp.
template <class KP, class F>
__device__ __forceinline__ void withStage(const KP& kp, uint32_t s, F&& f) {
  if constexpr (KP::kStages == 1) {
    (void)s;
    f(std::integral_constant<int, 0>{}, kp.s0);
  } else {
    if (s == 0) f(std::integral_constant<int, 0>{}, kp.s0);
    else f(std::integral_constant<int, 1>{}, kp.s1);
  }
}

// Calls f(std::integral_constant<int, I>, stageParams<I>(kp)) for every stage.
template <class KP, class F>
__device__ __forceinline__ void forEachStage(const KP& kp, F&& f) {
  f(std::integral_constant<int, 0>{}, kp.s0);
  if constexpr (KP::kStages == 2) f(std::integral_constant<int, 1>{}, kp.s1);
}

}  // namespace cusync_gemm::detail
