// The persistent warp-specialized Hopper GEMM kernel (sm_90a): the skeleton
// that joins the parts.
//
//   Block = 3 warpgroups. Warpgroup 0 is the producer: one thread takes work
//   units from the tile scheduler (schedule/), and for each k-block of a unit
//   fills one slot of the shared-memory ring (kernel/mainloop.cuh): B, the
//   cusync wait, then A (stages with ReorderTileLoads), or the wait, B, A.
//   Warpgroups 1 and 2 are consumers: each owns 64 rows of a 128-row tile (or
//   half the columns of a 64-row one), runs wgmma over the ring, lets the
//   scheduler reduce split parts, then runs the fused epilogue
//   (kernel/epilogue.cuh) and posts the tile through the stage's output policy.
//
// The cusync hooks: the scheduler takes tiles with cusync::tileElected /
// ticketElected (the tile hook); the producer calls cusync::waitElected
// before each load of A (the wait hook); consumer thread 128 calls
// cusync::postElected once the tile's stores are complete (the post hook).
// The unit a ring slot belongs to travels with the slot, and an invalid unit
// tells the consumers to stop.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "cusync/device.h"
#include "kernels/gemm/kernel/arch.cuh"
#include "kernels/gemm/kernel/epilogue.cuh"
#include "kernels/gemm/kernel/mainloop.cuh"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/kernel/shared_storage.cuh"
#include "kernels/gemm/kernel/sm90.cuh"
#include "kernels/gemm/schedule/cluster_pair.cuh"
#include "kernels/gemm/schedule/k_cut.cuh"
#include "kernels/gemm/schedule/split_k.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

template <Schedule S, class View>
struct SchedulerFor {
  using type = WholeTiles<View>;
};
template <class View>
struct SchedulerFor<Schedule::SplitK, View> {
  using type = SplitTiles<View>;
};
template <class View>
struct SchedulerFor<Schedule::TailSplit, View> {
  using type = SplitTiles<View>;
};
template <class View>
struct SchedulerFor<Schedule::KCut, View> {
  using type = KCutRanges<View>;
};
template <class View>
struct SchedulerFor<Schedule::ClusterPair, View> {
  using type = ClusterPair<View>;
};

template <class Shape, class T, int TransB, Epilogue E, class View, class ALoader = TmaTileA>
__device__ __forceinline__ void gemmBody(const KernelParams<T, View>& kp) {
#if CUSYNC_GEMM_SM90A
  constexpr int BM = Shape::BM, BN = Shape::BN;
  constexpr int WN = BM == 128 ? BN : BN / 2;  // columns of one consumer warpgroup
  static_assert(BM == 128 || Shape::kSchedule == Schedule::SplitK, "64-row tiles go with split K");
  using Storage = SharedStorage<Shape, TransB>;
  using Sched = typename SchedulerFor<Shape::kSchedule, View>::type;
  constexpr int S = Storage::kStages;
  const unsigned long long tEntry = kp.trace != nullptr ? globalTimer() : 0;
  unsigned long long tTicket = 0;  // trace, thread 0: the first ticket is taken
  uint32_t lastTraced = ~0u;       // trace, consumer thread 128: the last tile this block finished
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  const Storage ss(reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t(1023)));
  uint64_t* const full = ss.full();
  uint64_t* const empty = ss.empty();
  Unit* const units = ss.units();
  const int wg = threadIdx.x / 128;
  const int kIters = static_cast<int>((kp.K + kBK - 1) / kBK);
  Sched sched(kp.view, kp.flags, kp.sched, kIters);
  using Link = decltype(sched.link);
  Link& link = sched.link;
  link.bind(ss);
  const uint32_t rank = link.rank();
  constexpr int kRowsPerTile = Link::kSize * BM;  // stage tile rows

  // Prologue. The producer's first unit is taken before the barriers are set
  // up, so that its atomics overlap the set-up; a programmatic dependent
  // launch (KernelFlags::waitPrior) waits for the previous grid first, since
  // the tickets, like all global memory, may still be in use by it.
  auto takeFirst = [&] {
    if (kp.trace != nullptr) tTicket = globalTimer();
    sched.takeFirst();
  };
  if (threadIdx.x == 0) {
    // Fetch the tensor maps now rather than on the first loads.
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&kp.tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&kp.tmB) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&kp.tmC) : "memory");
    if (!kp.flags.waitPrior) takeFirst();
  }
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], uint32_t{Link::kSlotReleases});
    }
    link.initBarriers();
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  if (kp.flags.waitPrior) {
    cusync::CudaBackend::waitForPriorGrids();
    if (threadIdx.x == 0) takeFirst();
  }
  link.syncAfterInit();

  if (wg == 0) {
    // The producer: one thread loads, the rest of the warpgroup idles.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      RingCursor<S> ring;
      constexpr uint32_t kTx = Storage::kStageBytes;
      const bool reorderLoads = (kp.view.opts & cusync::ReorderTileLoads) != 0;
      const uint64_t bPolicy = kp.flags.bEvictFirst ? evictFirstPolicy() : 0;
      for (;;) {
        const Unit u = sched.next();
        const cusync::TileWork& work = u.w;
        mbarWait(&empty[ring.stage], ring.phase ^ 1);
        units[ring.stage] = u;
        if (!work.valid) {
          cuda::ptx::mbarrier_arrive(&full[ring.stage]);
          break;
        }
        const int32_t mTile = static_cast<int32_t>(work.tile.y * kRowsPerTile);  // the stage tile's first row
        const int32_t m0 = mTile + static_cast<int32_t>(rank) * BM;             // this block's rows
        const int32_t n0 = static_cast<int32_t>(work.tile.x * BN);
        const uint32_t walkStart = static_cast<uint32_t>(u.kb0 * kBK);
        const unsigned long long tTook = kp.trace != nullptr ? globalTimer() : 0;
        unsigned int waited = 0;
        for (int kb = u.kb0; kb < u.kb1; ++kb) {
          if (kb > u.kb0) mbarWait(&empty[ring.stage], ring.phase ^ 1);
          sched.beforeLoads(kb, u);
          unsigned char* sa = ss.slotA(ring.stage);
          unsigned char* sb = ss.slotB(ring.stage);
          const int32_t k0 = kb * kBK;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               &full[ring.stage], kTx);
          // A pair's blocks both wait for the whole stage tile's rows.
          const cusync::Read read = ALoader::read(k0, mTile, walkStart);
          // The wait hook. With ReorderTileLoads B (the weights) is loaded
          // first, so the wait overlaps B's load.
          auto waitForA = [&] {
            if (kp.trace != nullptr) {
              const unsigned long long t0 = globalTimer();
              cusync::waitElected(kp.view, work, read, 0, cusync::Reader::AsyncProxy);
              waited += static_cast<unsigned int>(globalTimer() - t0);
            } else {
              cusync::waitElected(kp.view, work, read, 0, cusync::Reader::AsyncProxy);
            }
          };
          if (!reorderLoads) waitForA();
          loadB<BN, TransB, Link::kSize>(sb, &kp.tmB, k0, n0, &full[ring.stage], kp.flags.bEvictFirst,
                                                         bPolicy, rank);
          if (reorderLoads) waitForA();
          ALoader::load(sa, &kp.tmA, k0, m0, &full[ring.stage]);
          ring.advance();
        }
        if (kp.trace != nullptr && u.kb0 == 0 && rank == 0) {
          kp.trace[work.index].start = tTook;
          kp.trace[work.index].waitNs = waited;
          kp.trace[work.index].setupNs = tTicket != 0 ? static_cast<unsigned int>(tTicket - tEntry) : 0u;
        }
        tTicket = 0;  // the set-up belongs to the block's first unit only
      }
    }
  } else {
    // The consumers.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1;
    const bool signaller = (threadIdx.x % 128) == 0;
    constexpr int kRowOff = BM == 128 ? 64 : 0;  // rows of the tile per consumer index
    constexpr int kColOff = BM == 128 ? 0 : WN;  // columns of the tile per consumer index
    static_assert(BM == 128 || WN == 64 || WN == 128, "the 64-row path splits BN between the consumers");
    float acc[WN / 2];
    // Descriptors stay in uniform registers only if the compiler sees the
    // consumer index as warp-uniform.
    ConsumerMainloop<T, BM, WN, TransB, S, Storage::kStageBytes, Storage::kABytes> mainloop(
        ss.base, __shfl_sync(0xffffffffu, cw, 0));
    uint32_t epiTurn = 0;  // this warp's TMA store chunks so far (epilogue())
    auto release = [&](int st) { link.releaseSlot(&empty[st]); };
    for (;;) {
      mbarWait(&full[mainloop.stage], mainloop.phase);
      const Unit u = units[mainloop.stage];
      const cusync::TileWork& work = u.w;
      if (!__any_sync(0xffffffffu, work.valid)) break;
      const unsigned long long tMma = kp.trace != nullptr ? globalTimer() : 0;
      // Whole tiles take the k range from the kernel's arguments, which the
      // compiler knows to be warp-uniform: it then keeps the ring position
      // and the descriptors in uniform registers (128x96 spends 14% less time
      // in its MMAs at llama-qkv M = 512 than with the range from the slot
      // record). Split and KCut units read theirs from the slot record.
      const int kb0 = Sched::kCutsK ? __shfl_sync(0xffffffffu, u.kb0, 0) : 0;
      const int kb1 = Sched::kCutsK ? __shfl_sync(0xffffffffu, u.kb1, 0) : kIters;
      const int lastStage = mainloop.run(acc, full, kb0, kb1, signaller, release);
      UnitFinish fin = sched.finishOf(u);
      if (kp.trace != nullptr && threadIdx.x == 128 && rank == 0 && fin.tracesTile) {
        kp.trace[work.index].mmaStart = tMma;
        kp.trace[work.index].mmaNs = static_cast<unsigned int>(globalTimer() - tMma);
      }
      if (signaller) release(lastStage);
      if (!sched.template reduce<WN / 8>(acc, u, fin, cw)) continue;
      // The epilogue works warp by warp (no warpgroup barrier inside), so the
      // warps of a shared fixup store only the slabs their part owns.
      if (fin.store)
        epilogue<T, WN, E, Storage::kEpiBufs>(
            acc, kp.C, kp.epi, static_cast<int64_t>(work.tile.y) * kRowsPerTile + rank * BM + cw * kRowOff,
            static_cast<int64_t>(work.tile.x) * BN + cw * kColOff, ss.scratch(threadIdx.x / 32 - 4), &kp.tmC,
            epiTurn);
      sched.afterStore(fin, cw);
      if constexpr (!cusync::policy::isNoSync<typename View::Out>) {
        // The post hook: every TMA store of the tile has written C, then one thread posts.
        epilogueStoresDone();
        consumerBarrier();
        if (threadIdx.x == 128) {
          if (link.postsTile()) cusync::postElected(kp.view, work);
          link.afterPost();
        }
      }
      if (kp.trace != nullptr && threadIdx.x == 128 && rank == 0 && fin.store) {
        kp.trace[work.index].end = globalTimer();
        kp.trace[work.index].sm = smId();
        kp.trace[work.index].blockEntry = tEntry;
        lastTraced = work.index;
      }
    }
  }
  if (wg != 0) epilogueScratchFree();  // the copy engine is done reading this block's scratch
  link.syncBeforeExit();
  if (wg != 0 && lastTraced != ~0u) kp.trace[lastTraced].blockExit = globalTimer();
#endif
}

template <class Shape, class T, int TransB, Epilogue E, class View>
__global__ void __launch_bounds__(kThreads, 1) gemmKernel(const __grid_constant__ KernelParams<T, View> kp) {
  gemmBody<Shape, T, TransB, E, View>(kp);
}

template <class Shape, class T, int TransB, Epilogue E, class View>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
    gemmKernelPair(const __grid_constant__ KernelParams<T, View> kp) {
  gemmBody<Shape, T, TransB, E, View>(kp);
}

}  // namespace cusync_gemm::detail
