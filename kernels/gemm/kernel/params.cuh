// What a GEMM kernel receives: one struct, passed as a __grid_constant__
// parameter so that the tensor maps inside it can be read by TMA in place.
#pragma once

#include <cuda.h>

#include <cstdint>

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
// NoSync stages; stages of a pipeline leave them off.
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
  // B's TMA loads carry an L2 evict-first policy: the weights stream through
  // L2 once per band, and A, C and the split partials should outlive them.
  bool bEvictFirst = false;
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

template <class T, class View>
struct KernelParams {
  CUtensorMap tmA, tmB, tmC;
  T* C;
  EpilogueParams epi;
  int64_t K;
  TileTrace* trace;
  KernelFlags flags;
  View view;
  ScheduleParams sched;
};

}  // namespace cusync_gemm::detail
