// The GEMM's mainloop, both halves of the shared-memory ring:
//  - the producer's loads of one k-block (TMA): B (the weights) and A through
//    an A loader, a replaceable part: TmaTileA loads a box of a row-major A;
//    an implicit-GEMM convolution loads its A through an im2col loader with
//    the same two members;
//  - the consumers' wgmma loop over a unit's k-blocks.
// The ring's full and empty mbarriers order the two: a slot is full once its
// TMA bytes landed, empty once both consumer warpgroups' wgmma reads of it
// completed.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>
#include <type_traits>

#include "cusync/stage_view.h"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/kernel/sm90.cuh"

namespace cusync_gemm::detail {

// An A loader is the replaceable part of the loads. Its members, for the
// stage parameters SP of the unit's stage:
//   kLayout                  the ASmemLayout it fills a slot in
//   Rows rows(sp, m0)        per-unit state of this block's rows from m0
//   int32_t kColumn(sp, kb)  the reduction index where k-block kb starts: B's
//                            k coordinate, and the column the stage's input
//                            policy sees read (cusync::Read::col)
//   KStep                    the loader's position in the k walk, with
//                            kColumn(): kStepAt(sp, kb) places it at a unit's
//                            first k-block, nextKStep(sp, step) moves it one
//                            k-block on. The loading thread issues every load
//                            of its block, so its per-k-block work sets the
//                            k-loop's pace where the MMAs are short: the walk
//                            keeps divisions out of it.
//   load(dst, sp, rows, step, kb, full)  the TMA load of k-block kb of A
//   int k16Steps(sp, kb)     the k16 steps of k-block kb that hold data (4
//                            but where a loader packs less into the last
//                            k-block): the loads fill, and the consumers
//                            multiply, only those steps' share of A
// TmaTileA reads a row-major A [M, K]: k-block kb of rows [m0, m0 + BM) is
// one tensor-map box. The convolution's im2col loaders
// (kernels/conv/kernel/im2col_loader.cuh) have the same members.
struct TmaTileA {
  static constexpr ASmemLayout kLayout = ASmemLayout::Swizzled128;
  struct Rows {
    int32_t m0;
  };
  template <class SP>
  __device__ __forceinline__ static Rows rows(const SP&, int32_t m0) {
    return Rows{m0};
  }
  template <class SP>
  __device__ __forceinline__ static int32_t kColumn(const SP&, int kb) {
    return kb * kBK;
  }
  struct KStep {
    int32_t k0;
    __device__ __forceinline__ int32_t kColumn() const { return k0; }
  };
  template <class SP>
  __device__ __forceinline__ static KStep kStepAt(const SP&, int kb) {
    return KStep{kb * kBK};
  }
  template <class SP>
  __device__ __forceinline__ static void nextKStep(const SP&, KStep& k) {
    k.k0 += kBK;
  }
  template <class SP>
  __device__ __forceinline__ static constexpr int k16Steps(const SP&, int) {
    return kBK / 16;
  }
  template <class SP>
  __device__ __forceinline__ static void load(void* dst, const SP& sp, const Rows& r, const KStep& k, int,
                                              uint64_t* full) {
    const int32_t c[2] = {k.k0, r.m0};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, &sp.tmA, c, full);
  }
};

// What a k-block starting at reduction column col of a stage tile starting at
// row stageTileRow0 reads, for the stage's input policy; walkStart is the
// column of the unit's first k-block.
__device__ __forceinline__ cusync::Read readAt(int32_t col, int32_t stageTileRow0, uint32_t walkStart) {
  return cusync::Read{static_cast<uint32_t>(col), static_cast<uint32_t>(stageTileRow0), 0, walkStart};
}
// The same for k-block kb.
template <class ALoader, class SP>
__device__ __forceinline__ cusync::Read readOf(const SP& sp, int kb, int32_t stageTileRow0, uint32_t walkStart) {
  return readAt(ALoader::kColumn(sp, kb), stageTileRow0, walkStart);
}

// k-block k0 of B's columns [n0, n0 + BN) into slot `sb`: one box of B as
// [N, K], or ceil(BN / 64) boxes of 64 columns of B as [K, N]. In a cluster
// pair each block loads half of the boxes and multicasts them to both
// blocks, whose full barriers each count the whole slot. With evictFirst a
// single block's loads carry the L2 policy `policy`; the hinted form with
// the normal policy in its place took the 128x64 conv tiles 9-15% longer
// (H200), so loads without the hint stay unhinted.
template <int BN, int TransB, int ClusterSize>
__device__ __forceinline__ void loadB(unsigned char* sb, const CUtensorMap* tmB, int32_t k0, int32_t n0,
                                      uint64_t* full, bool evictFirst, uint64_t policy, uint32_t rank) {
  if constexpr (ClusterSize == 2) {
    constexpr uint16_t kBoth = 0x3;
    if constexpr (TransB == 0) {
      const int32_t cb[2] = {k0, n0 + static_cast<int32_t>(rank) * (BN / 2)};
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sb + rank * (BN / 2) * 128,
                                      tmB, cb, full, kBoth);
    } else {
#pragma unroll
      for (int c = 0; c < BN / 64; ++c) {
        if ((c & 1) != static_cast<int>(rank)) continue;
        const int32_t cb[2] = {n0 + 64 * c, k0};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sb + c * 8192, tmB, cb,
                                        full, kBoth);
      }
    }
  } else {
    constexpr int kBoxes = TransB == 0 ? 1 : (BN + 63) / 64;
#pragma unroll
    for (int c = 0; c < kBoxes; ++c) {
      const int32_t cb[2] = {TransB == 0 ? k0 : n0 + 64 * c, TransB == 0 ? n0 : k0};
      if (evictFirst)
        tmaLoadHinted(sb + c * 8192, tmB, cb, full, policy);
      else
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sb + c * 8192, tmB, cb,
                                        full);
    }
  }
}

// Prefetches B's k-blocks [kbFrom, min(kbTo, kbEnd)) of columns [n0, n0 + BN)
// into L2 (no CCCL wrapper for the bulk tensor prefetch): a unit whose
// inputs are not ready streams the weights it will need while it waits.
template <int BN, int TransB, class ALoader, class SP>
__device__ __forceinline__ void prefetchB(const SP& sp, int kbFrom, int kbTo, int kbEnd, int32_t n0) {
#if CUSYNC_GEMM_SM90A
  const int end = kbTo < kbEnd ? kbTo : kbEnd;
  constexpr int kBoxes = TransB == 0 ? 1 : (BN + 63) / 64;
  for (int kb = kbFrom; kb < end; ++kb)
#pragma unroll
    for (int c = 0; c < kBoxes; ++c) {
      const int32_t k0 = ALoader::kColumn(sp, kb);
      const int32_t c0 = TransB == 0 ? k0 : n0 + 64 * c, c1 = TransB == 0 ? n0 : k0;
      asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(&sp.tmB), "r"(c0), "r"(c1)
                   : "memory");
    }
#endif
}

// The producer's position in the ring.
template <int S>
struct RingCursor {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == S) stage = 0, phase ^= 1;
  }
};

// The consumer warpgroup's side: wgmma over the k-blocks of a unit, each
// slot released to the producer once the next k-block's wgmma group is
// issued (one group in flight). The wgmma descriptors of ring slot 0 for this
// warpgroup are built once and moved by constants (MovingDesc): built per
// wgmma from the slot's address they cost ~12 vector instructions each.
// Storage is the block's SharedStorage: with resident weights B of k-block kb
// lies at its own place (Storage::residentB), not in the slot.
template <class T, int BM, int WN, int TransB, class Storage, ASmemLayout kALayout = ASmemLayout::Swizzled128>
struct ConsumerMainloop {
  static constexpr int S = Storage::kStages;
  static constexpr int kStageBytes = Storage::kStageBytes;
  static constexpr bool kResidentB = Storage::kResidentB;
  static constexpr bool kASwizzled = kALayout == ASmemLayout::Swizzled128;
  // A's rows per consumer index: 64 rows of 128 bytes swizzled, of 16 bytes in Blocks8.
  static constexpr int kASmemOff = BM == 128 ? (kASwizzled ? 64 * 128 : 64 * 16) : 0;
  static constexpr int kBSmemOff = BM == 128 ? 0 : WN * 128;  // bytes into B's k-block (NK rows or KN 64-column boxes)
  // Where B's k-block of slot 0 (or resident k-block 0) starts.
  static constexpr int kBOffset = kResidentB ? Storage::kResidentOffset : Storage::kABytes;
  // A k16 step in 16-byte units: 32 bytes along a swizzled row, or two 8-column blocks of BM x 16 bytes.
  static constexpr uint32_t kAStepUnits = kASwizzled ? 2 : 2 * BM;
  MovingDesc descA, descB;
  int stage = 0;
  uint32_t phase = 0;

  __device__ __forceinline__ ConsumerMainloop(unsigned char* smem, int cwUniform)
      : descA(kASwizzled ? smemDesc(smem + cwUniform * kASmemOff, 16, 1024)
                         : smemDesc(smem + cwUniform * kASmemOff, BM * 16, 128, false)),
        descB(smemDesc(smem + kBOffset + cwUniform * kBSmemOff, TransB == 0 ? 16 : 8192, 1024)) {}

  __device__ __forceinline__ void advance() {
    if (++stage == S) stage = 0, phase ^= 1;
  }

  // MMAs of k-blocks [kb0, kb1) into acc, starting at the current slot, whose
  // full barrier the caller has waited for. Returns the last slot, still held
  // (release it once the accumulator is final).
  // stepsOf(kb): the k16 steps of k-block kb to multiply (ALoader::k16Steps;
  // always all of them where A is Swizzled128).
  // UnitWN: the unit's columns per warpgroup, where a fused kernel's stages
  // differ in width (StageShapes): a narrower stage multiplies the first
  // UnitWN columns of B's k-block, which starts where the wider one's does.
  template <int UnitWN = WN, class Release, class StepsOf>
  __device__ __forceinline__ int run(float (&acc)[UnitWN / 2], uint64_t* full, int kb0, int kb1, bool signaller,
                                     Release&& release, StepsOf&& stepsOf) {
    static_assert(UnitWN == WN || (BM == 128 && UnitWN < WN),
                  "a narrower unit keeps B's offset only where every warpgroup reads all of B's columns");
    int prevStage = -1;
    for (int kb = kb0; kb < kb1; ++kb) {
      if (kb > kb0) mbarWait(&full[stage], phase);
      const uint32_t slot = static_cast<uint32_t>(stage * (kStageBytes / 16));  // in 16-byte units
      const uint32_t slotB =
          kResidentB ? static_cast<uint32_t>(kb * (Storage::kBKBlockBytes / 16)) : slot;  // B's k-block, likewise
      // The k16 steps of this k-block as one straight sequence of wgmmas:
      // a wgmma under a branch makes the compiler fence the accumulator
      // before it (warpgroup.arrive). A Blocks8 slot may hold fewer steps.
      auto steps = [&](auto n) {
        wgmmaFence();
#pragma unroll
        for (int kk = 0; kk < decltype(n)::value; ++kk) {
          // A k16 step: 32 bytes along the rows of B as [N, K] (kAStepUnits for A); 16 rows of 128 bytes of B as [K, N].
          mma16<T, UnitWN, TransB>(acc, descA.plus(slot + kk * kAStepUnits),
                               descB.plus(slotB + (TransB == 0 ? kk * 2 : kk * 128)),
                               (kb > kb0 || kk > 0) ? 1 : 0);
        }
        wgmmaCommit();
      };
      constexpr int kSteps = kBK / 16;
      if constexpr (kASwizzled) {
        steps(std::integral_constant<int, kSteps>{});
      } else {
        static_assert(kSteps == 4, "a Blocks8 k-block holds 1 to 4 k16 steps");
        switch (stepsOf(kb)) {
          case 1: steps(std::integral_constant<int, 1>{}); break;
          case 2: steps(std::integral_constant<int, 2>{}); break;
          case 3: steps(std::integral_constant<int, 3>{}); break;
          default: steps(std::integral_constant<int, 4>{}); break;
        }
      }
      wgmmaWait<1>();
      if (prevStage >= 0 && signaller) release(prevStage);
      prevStage = stage;
      advance();
    }
    wgmmaWait<0>();
    fenceRegs(acc);
    return prevStage;
  }
};

}  // namespace cusync_gemm::detail
