// A block's shared memory: the ring of k-block slots (A then B), their full
// and empty mbarriers, the work unit of each slot, a cluster pair's hand-over
// barriers, and the consumers' epilogue scratch.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cusync/stage_view.h"
#include "kernels/gemm/kernel/epilogue.cuh"
#include "kernels/gemm/kernel/input_waits.cuh"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/schedule/unit.cuh"
#include "kernels/gemm/tile_config.h"

namespace cusync_gemm::detail {

// The compile-time shape of a configuration row (tile_config.h).
template <int BM_, int BN_, Schedule S_, int RingSlots_, int ResidentKBlocks_ = 0>
struct KernelShape {
  static constexpr int BM = BM_;
  static constexpr int BN = BN_;
  static constexpr Schedule kSchedule = S_;
  static constexpr int kRingSlots = RingSlots_;  // 0: as many as fit
  static constexpr int kResidentKBlocks = ResidentKBlocks_;  // 0: B streams through the ring
  // A kernel of one shape runs it in every stage and sizes its ring by it.
  using Ring = KernelShape;
  template <int I>
  using Stage = KernelShape;
};

// A fused kernel whose two stages run tiles of one height and schedule but
// different widths (resolveFusedConfigs): each stage loads, multiplies and
// stores its own width, and the ring's slots are sized for the wider one,
// whose depth the narrower stage then shares.
template <class Shape0, class Shape1>
struct StageShapes {
  static_assert(Shape0::BM == Shape1::BM && Shape0::kSchedule == Shape1::kSchedule,
                "a fused kernel's stages share the tile height and schedule");
  static_assert(Shape0::kResidentKBlocks == 0 && Shape1::kResidentKBlocks == 0,
                "fused stages stream their weights through the ring");
  static constexpr int BM = Shape0::BM;
  static constexpr Schedule kSchedule = Shape0::kSchedule;
  static constexpr int kResidentKBlocks = 0;
  using Ring = std::conditional_t<(Shape0::BN >= Shape1::BN), Shape0, Shape1>;
  template <int I>
  using Stage = std::conditional_t<I == 0, Shape0, Shape1>;
};

template <size_t I>
using KernelShapeOf = KernelShape<kTileConfigs[I].bm, kTileConfigs[I].bn, kTileConfigs[I].schedule,
                                  kTileConfigs[I].ringSlots, kTileConfigs[I].residentKBlocks>;

// WaitQueue: whether the kernel has a waiter warp (input_waits.cuh), whose
// queue takes a few bytes beside the ring.
template <class Shape, int TransB, bool WaitQueue_ = false>
struct SharedStorage {
  static constexpr int BM = Shape::BM, BN = Shape::BN;
  static constexpr int kMaxSmem = 232448;  // an H100 block's opt-in dynamic shared memory (227 KiB)
  static constexpr int kABytes = BM * kBK * 2;
  // One k-block of B: BN rows of 128 bytes ([N, K]), or whole boxes of 64
  // columns ([K, N]: 176 columns take three, the last one part used).
  static constexpr int bKBlockBytes(int bn) { return (TransB == 0 ? bn : (bn + 63) / 64 * 64) * kBK * 2; }
  static constexpr int kBKBlockBytes = bKBlockBytes(BN);
  // With resident weights (Shape::kResidentKBlocks > 0) B has its own region
  // and a slot holds A alone.
  static constexpr bool kResidentB = Shape::kResidentKBlocks > 0;
  static constexpr int kResidentBytes = Shape::kResidentKBlocks * kBKBlockBytes;
  static constexpr int kBBytes = kResidentB ? 0 : kBKBlockBytes;
  static constexpr int kStageBytes = kABytes + kBBytes;
  // Rows with a depth of 0 take as many slots as fit beside one epilogue
  // buffer per warp and 2 KiB of barriers, slot records and alignment.
  static constexpr int kFitStages =
      (kMaxSmem - 1024 - 2048 - kConsumerWarps * kScratchPerWarp - kResidentBytes) / kStageBytes;
  static constexpr int kStages = Shape::kRingSlots > 0 ? Shape::kRingSlots : kFitStages;
  static constexpr int kResidentOffset = kStages * kStageBytes;
  // full[kStages], empty[kStages], then with resident weights their full barrier.
  static constexpr int kBarOffset = kResidentOffset + kResidentBytes;
  static constexpr int kInfoOffset = kBarOffset + (2 * kStages + (kResidentB ? 1 : 0)) * 8;
  // Cluster pairs: the tile handed to the second block, and the mbarriers of
  // the hand-over (mailbox full / empty) and of the post (peer stored / post done).
  static constexpr int kPairOffset = (kInfoOffset + kStages * (int)sizeof(Unit) + 15) / 16 * 16;
  static constexpr int kPairBytes = (int)sizeof(cusync::TileWork) + 4 * 8;
  static constexpr int kWaitOffset = (kPairOffset + kPairBytes + 15) / 16 * 16;
  static constexpr int kWaitBytes = WaitQueue_ ? WaitQueue::kBytes : 0;
  // The epilogue scratch: two buffers per consumer warp where they fit beside
  // the ring, else one. Aligned to 1024 bytes for the 128-byte swizzle of the
  // TMA stores that read it.
  static constexpr int kScratchOffset = (kWaitOffset + kWaitBytes + 1023) / 1024 * 1024;
  static constexpr int kEpiBufs = kScratchOffset + kConsumerWarps * 2 * kScratchPerWarp + 1024 <= kMaxSmem ? 2 : 1;
  static constexpr int kBytes = kScratchOffset + kConsumerWarps * kEpiBufs * kScratchPerWarp;
  static constexpr int kSmemRequest = kBytes + 1024;  // room to align the base to 1024
  static_assert(kSmemRequest <= kMaxSmem, "more shared memory than an H100 block may have");
  static_assert(kStageBytes % 1024 == 0, "slots keep the 128-byte swizzle's 1 KiB alignment");
  static_assert(kResidentBytes % 1024 == 0, "resident k-blocks keep the 128-byte swizzle's 1 KiB alignment");

  unsigned char* base;
  __device__ __forceinline__ explicit SharedStorage(unsigned char* alignedBase) : base(alignedBase) {}
  __device__ __forceinline__ unsigned char* slotA(int stage) const { return base + stage * kStageBytes; }
  __device__ __forceinline__ unsigned char* slotB(int stage) const { return slotA(stage) + kABytes; }
  // Resident weights: k-block kb of B.
  __device__ __forceinline__ unsigned char* residentB(int kb) const {
    return base + kResidentOffset + kb * kBKBlockBytes;
  }
  __device__ __forceinline__ uint64_t* full() const { return reinterpret_cast<uint64_t*>(base + kBarOffset); }
  __device__ __forceinline__ uint64_t* empty() const { return full() + kStages; }
  __device__ __forceinline__ uint64_t* residentFull() const { return full() + 2 * kStages; }
  __device__ __forceinline__ Unit* units() const { return reinterpret_cast<Unit*>(base + kInfoOffset); }
  __device__ __forceinline__ cusync::TileWork* mailbox() const {
    return reinterpret_cast<cusync::TileWork*>(base + kPairOffset);
  }
  __device__ __forceinline__ uint64_t* pairBarriers() const {
    return reinterpret_cast<uint64_t*>(base + kPairOffset + sizeof(cusync::TileWork));
  }
  __device__ __forceinline__ unsigned char* waitQueue() const { return base + kWaitOffset; }
  // Consumer warp w's (0..7) epilogue buffers.
  __device__ __forceinline__ unsigned char* scratch(int warp) const {
    return base + kScratchOffset + warp * kEpiBufs * kScratchPerWarp;
  }
};

}  // namespace cusync_gemm::detail
