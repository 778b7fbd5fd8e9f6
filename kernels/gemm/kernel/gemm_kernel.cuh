// The persistent warp-specialized Hopper GEMM kernel (sm_90a): the skeleton
// that joins the parts.
//
//   Block = 3 warpgroups. Warpgroup 0 is the producer: one thread (the
//   loader) fills the shared-memory ring with TMA loads, k-block by k-block
//   (kernel/mainloop.cuh): B, the cusync wait, then A (stages with
//   ReorderTileLoads), or the wait, B, A; with resident weights (a
//   convolution's filter, Shape::kResidentKBlocks) B once per block, before
//   its first unit, and A alone per k-block. It takes the work units from the
//   tile scheduler (schedule/) itself, or, where a stage waits on a producer,
//   from the warpgroup's second warp, which resolves the waits ahead of it
//   (kernel/input_waits.cuh). Warpgroups 1 and 2 are consumers: each owns 64
//   rows of a 128-row tile (or half the columns of a 64-row one), runs wgmma
//   over the ring, lets the scheduler reduce split parts, then runs the fused
//   epilogue (kernel/epilogue.cuh) and posts the tile through the stage's
//   output policy.
//
// The cusync hooks: the scheduler takes tiles with cusync::tileElected /
// ticketElected (the tile hook); the wait hook runs ahead of each load of A,
// in the waiter (cusync::waitSpanOf / awaitSpan, WaitQueue::resolveUnit),
// which every kernel with a stage that waits has (kernelWaits), so that the
// loader only reads the waiter's count; consumer thread 128 calls cusync::postElected once the tile's
// stores are complete (the post hook): in a one-stage kernel after the next
// unit's MMAs, or before the block exits, so that no consumer waits for its
// own stores.
//
// A kernel runs one stage, or two as one persistent grid (a fused pipeline,
// cusync/fused.h): every unit carries its stage, and the per-unit code runs
// with that stage's parameters and epilogue. The unit a ring slot belongs to
// travels with the slot, and an invalid unit tells the consumers to stop.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "cusync/device.h"
#include "kernels/gemm/kernel/arch.cuh"
#include "kernels/gemm/kernel/epilogue.cuh"
#include "kernels/gemm/kernel/input_waits.cuh"
#include "kernels/gemm/kernel/mainloop.cuh"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/kernel/shared_storage.cuh"
#include "kernels/gemm/kernel/sm90.cuh"
#include "kernels/gemm/schedule/cluster_pair.cuh"
#include "kernels/gemm/schedule/fused_units.cuh"
#include "kernels/gemm/schedule/k_cut.cuh"
#include "kernels/gemm/schedule/split_k.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

// The tile scheduler of a one-stage kernel, by schedule.
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
// A fused kernel's stages run whole tiles or 64-row split tiles.
template <Schedule S>
struct FusedStageSchedule {
  template <class View>
  using type = std::conditional_t<S == Schedule::SplitK, SplitTiles<View>, WholeTiles<View>>;
};

// Registers per thread of the producer and the consumer warpgroups. The
// block is launched with 168 a thread (one block of 384 threads an SM);
// setmaxnreg moves them between the warpgroups, within 128 P + 256 C <= 384 x 168.
// A consumer holds WN / 2 accumulators: 256 columns need 232 registers, and
// leave the producer 40. With 40, the loading thread and the waiter spill to
// local memory where the waiter is a warp (TileSync and its kin: 230-390
// bytes a kernel, ptxas -v) or where the loader's walk is long (the conv's
// packed filter taps: 190-270 bytes), and those loads land in the k-loop
// that paces narrow tiles. Narrower consumers give the producer 56, where
// neither spills; a warp waiter takes 56 also from 256-column consumers,
// which then spill at most 16 bytes instead of its ~330.
template <int WN, bool kWaiterWarp>
struct RegisterSplit {
  static constexpr int kProducer = (WN <= 192 || kWaiterWarp) ? 56 : 40;
  static constexpr int kConsumer = kProducer == 56 ? 224 : 232;
  static_assert(128 * kProducer + 256 * kConsumer <= 384 * 168, "the split exceeds the block's registers");
};

template <class Shape, class KP>
__device__ __forceinline__ auto makeScheduler(const KP& kp) {
  if constexpr (KP::kStages == 1) {
    using S = typename SchedulerFor<Shape::kSchedule, StageViewOf<0, KP>>::type;
    return S(kp.s0.view, kp.flags, kp.s0.sched, static_cast<int>((kp.s0.K + kBK - 1) / kBK));
  } else {
    static_assert(Shape::kSchedule == Schedule::WholeTiles || Shape::kSchedule == Schedule::SplitK,
                  "a fused kernel's stages run whole tiles or 64-row split tiles");
    return FusedUnits<KP, FusedStageSchedule<Shape::kSchedule>::template type>(kp);
  }
}

template <class Shape, class T, int TransB, Epilogue E0, Epilogue E1, class KP, class ALoader = TmaTileA>
__device__ __forceinline__ void gemmBody(const KP& kp) {
#if CUSYNC_GEMM_SM90A
  // Shape: one tile shape for every stage, or one per stage (StageShapes);
  // the ring and the register split are sized for the widest.
  using RingShape = typename Shape::Ring;
  constexpr int BM = Shape::BM;
  constexpr int WN = BM == 128 ? RingShape::BN : RingShape::BN / 2;  // columns of one consumer warpgroup, widest
  static_assert(BM == 128 || Shape::kSchedule == Schedule::SplitK, "64-row tiles go with split K");
  constexpr bool kWaits = kernelWaits<KP>();
  using Storage = SharedStorage<RingShape, TransB, kWaits>;
  constexpr int S = Storage::kStages;
  const bool tracing = kp.s0.trace != nullptr;  // every stage traces, or none
  const unsigned long long tEntry = tracing ? globalTimer() : 0;
  unsigned long long tTicket = 0;  // trace, thread 0: the first ticket is taken
  uint32_t lastTraced = ~0u;       // trace, consumer thread 128: the last tile this block finished
  uint32_t lastTracedStage = 0;
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  const Storage ss(reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t(1023)));
  uint64_t* const full = ss.full();
  uint64_t* const empty = ss.empty();
  Unit* const units = ss.units();
  WaitQueue queue(ss.waitQueue());
  const int wg = threadIdx.x / 128;
  auto sched = makeScheduler<Shape>(kp);
  using Link = decltype(sched.link);
  Link& link = sched.link;
  link.bind(ss);
  const uint32_t rank = link.rank();
  constexpr int kRowsPerTile = Link::kSize * BM;  // stage tile rows
  // The thread that takes tickets: the waiter where stages wait, else the loader.
  constexpr unsigned kSchedulerThread = kWaits ? 32 : 0;
  using Regs = RegisterSplit<WN, kernelWaitsPerKBlock<KP>()>;

  // Prologue. The first unit is taken before the barriers are set up, so that
  // its atomics overlap the set-up; a programmatic dependent launch
  // (KernelFlags::waitPrior) waits for the previous grid first, since the
  // tickets, like all global memory, may still be in use by it.
  auto takeFirst = [&] {
    if (tracing && !kWaits) tTicket = globalTimer();
    sched.takeFirst();
  };
  if (threadIdx.x == 0) {
    // Fetch the tensor maps now rather than on the first loads.
    forEachStage(kp, [&](auto, const auto& sp) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(&sp.tmA) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(&sp.tmB) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(&sp.tmC) : "memory");
    });
  }
  if (threadIdx.x == kSchedulerThread && !kp.flags.waitPrior) takeFirst();
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], uint32_t{Link::kSlotReleases});
    }
    if constexpr (Storage::kResidentB) cuda::ptx::mbarrier_init(ss.residentFull(), 1);
    link.initBarriers();
    if constexpr (kWaits) queue.init();
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  if (kp.flags.waitPrior) {
    cusync::CudaBackend::waitForPriorGrids();
    if (threadIdx.x == kSchedulerThread) takeFirst();
  }
  link.syncAfterInit();

  if (wg == 0) {
    releaseRegistersTo<Regs::kProducer>();
    if constexpr (kWaits) {
      // The waiter: a warp where a stage waits k-block by k-block, else
      // thread 32 alone (no meetings per unit on short tiles).
      constexpr bool kWaiterWarp = kernelWaitsPerKBlock<KP>();
      if (kWaiterWarp ? threadIdx.x / 32 == 1 : threadIdx.x == 32) {
        // Its lane 0 puts the units into the queue; it counts their k-blocks
        // ready once their waits pass.
        const bool taker = threadIdx.x == kSchedulerThread;
        uint32_t resolved = 0;
        for (uint32_t i = 0;; ++i) {
          Unit u;
          if (taker) queue.push(i, u = sched.next());
          if constexpr (kWaiterWarp) {
            __syncwarp();
            u = queue.entry(i);
          }
          if (!u.w.valid) break;
          withStage(kp, u.stage, [&](auto, const auto& sp) {
            queue.resolveUnit<ALoader, kRowsPerTile>(sp, u, resolved, kp.flags.waitMemo);
            if (tracing && taker && rank == 0 && u.kb0 == 0)
              sp.trace[u.w.index].readyLow32 = static_cast<unsigned int>(globalTimer()) | 1u;
          });
          if (taker) {
            queue.awaitTicketPoint(i);
            sched.atTicketPoint(u);
          }
          if constexpr (kWaiterWarp) __syncwarp();
        }
      }
    }
    if (threadIdx.x == 0) {
      // The loader.
      RingCursor<S> ring;
      const uint64_t bPolicy = kp.flags.bEvictFirst ? evictFirstPolicy() : 0;
      uint32_t loaded = 0;  // k-blocks loaded (counted as the waiter counts them ready)
      uint32_t readyCached = 0;  // the waiter's count as the loader last read it
      for (uint32_t i = 0;; ++i) {
        const Unit u = kWaits ? queue.pop(i) : sched.next();
        const cusync::TileWork& work = u.w;
        mbarWait(&empty[ring.stage], ring.phase ^ 1);
        units[ring.stage] = u;
        if (!work.valid) {
          cuda::ptx::mbarrier_arrive(&full[ring.stage]);
          break;
        }
        withStage(kp, u.stage, [&](auto stageIndex, const auto& sp) {
          constexpr int BN = Shape::template Stage<decltype(stageIndex)::value>::BN;  // this stage's tile width
          // The bytes of one full k-block of this stage: A and its B columns.
          constexpr uint32_t kTx = Storage::kABytes + (Storage::kResidentB ? 0 : Storage::bKBlockBytes(BN));
          const bool reorderLoads = (sp.view.opts & cusync::ReorderTileLoads) != 0;
          const int32_t mTile = static_cast<int32_t>(work.tile.y * kRowsPerTile);  // the stage tile's first row
          const int32_t m0 = mTile + static_cast<int32_t>(rank) * BM;             // this block's rows
          const int32_t n0 = static_cast<int32_t>(work.tile.x * BN);
          const typename ALoader::Rows aRows = ALoader::rows(sp, m0);
          const unsigned long long tTook = tracing ? globalTimer() : 0;
          unsigned int waited = 0;
          if constexpr (kWaits) {
            // Inputs not ready yet: stream this unit's weights into L2 meanwhile.
            if (sp.prefetchKBlocks > 0 && readyCached < loaded + 1 && (readyCached = queue.readyCount()) < loaded + 1)
              prefetchB<BN, TransB, ALoader>(sp, u.kb0 + S, u.kb0 + static_cast<int>(sp.prefetchKBlocks), u.kb1, n0);
          }
          const int kbTicket = u.ticketPoint(kp.flags.ticketLead);
          // How this unit's loads of A meet the waiter's count of ready
          // k-blocks: a stage that waits on nothing not at all (its k-blocks
          // counted at once, as the waiter counts them); a policy that waits
          // at its walk's first step only once, at the unit's first k-block
          // (the waiter publishes such a unit's k-blocks together); any other
          // policy k-block by k-block. A check per k-block costs the loading
          // thread, which paces the narrow tiles' k-loops, ~6 instructions.
          using StageIn = typename std::remove_reference_t<decltype(sp)>::View::In;
          constexpr int kWaitForm = !kWaits || cusync::policy::isNoSync<StageIn>    ? 0
                                    : cusync::policy::waitsAtWalkStartOnly<StageIn> ? 1
                                                                                    : 2;
          if constexpr (kWaits && kWaitForm == 0) loaded += static_cast<uint32_t>(u.kb1 - u.kb0);
          if constexpr (Storage::kResidentB) {
            // The tile's k-blocks of B, once per block, at its first unit:
            // every unit shares them (one column tile, whole tiles; the host checks).
            if (i == 0) {
              const int kIters = static_cast<int>((sp.K + kBK - 1) / kBK);
              cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                   cuda::ptx::space_shared, ss.residentFull(),
                                                   static_cast<uint32_t>(kIters * Storage::kBKBlockBytes));
              typename ALoader::KStep bStep = ALoader::kStepAt(sp, 0);
              for (int kb = 0; kb < kIters; ++kb) {
                loadB<BN, TransB, Link::kSize>(ss.residentB(kb), &sp.tmB, bStep.kColumn(), n0, ss.residentFull(),
                                               false, 0, rank);
                ALoader::nextKStep(sp, bStep);
              }
            }
          }
          // The k-loop in two forms, with and without B's L2 hint, so that
          // no k-block branches on it.
          auto loadKBlocks = [&](auto bEvictFirst) {
            typename ALoader::KStep kStep = ALoader::kStepAt(sp, u.kb0);
            for (int kb = u.kb0; kb < u.kb1; ++kb) {
              if (kb > u.kb0) mbarWait(&empty[ring.stage], ring.phase ^ 1);
              if (kb == kbTicket) {
                if constexpr (kWaits)
                  queue.reachTicketPoint();
                else
                  sched.atTicketPoint(u);
              }
              unsigned char* sa = ss.slotA(ring.stage);
              [[maybe_unused]] unsigned char* sb = ss.slotB(ring.stage);
              const int32_t k0 = kStep.kColumn();  // B's k coordinate
              // A loader that fills fewer k16 steps of A than a whole slot's
              // (packed filter taps in a conv's last k-block) expects fewer bytes.
              const int aSteps = ALoader::k16Steps(sp, kb);
              const uint32_t tx = kTx - static_cast<uint32_t>(kBK / 16 - aSteps) *
                                            static_cast<uint32_t>(Storage::kABytes / (kBK / 16));
              cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                   cuda::ptx::space_shared, &full[ring.stage], tx);
              // The wait hook, or the waiter's count of it. With ReorderTileLoads
              // B (the weights) is loaded first, so the wait overlaps B's load.
              // A pair's blocks both wait for the whole stage tile's rows.
              // The trace counts the time the loader is held: where the waiter's
              // count already covers the k-block (its cached copy), nothing is
              // timed, since two timer reads per k-block cost more than that
              // check and add up to 1.5-3.5 us per tile of their own.
              auto timed = [&](auto&& f) {
                if (tracing) {
                  const unsigned long long t0 = globalTimer();
                  f();
                  waited += static_cast<unsigned int>(globalTimer() - t0);
                } else {
                  f();
                }
              };
              // Without a waiter no stage has an input policy: nothing to
              // wait for, and no timer reads.
              auto waitForA = [&] {
                if constexpr (kWaitForm == 2) {
                  if (readyCached < ++loaded) timed([&] { readyCached = queue.awaitReady(loaded); });
                } else if constexpr (kWaitForm == 1) {
                  if (kb == u.kb0) {
                    loaded += static_cast<uint32_t>(u.kb1 - u.kb0);
                    if (readyCached < loaded) timed([&] { readyCached = queue.awaitReady(loaded); });
                  }
                }
              };
              if (!reorderLoads) waitForA();
              if constexpr (!Storage::kResidentB)
                loadB<BN, TransB, Link::kSize>(sb, &sp.tmB, k0, n0, &full[ring.stage], decltype(bEvictFirst)::value,
                                               bPolicy, rank);
              if (reorderLoads) waitForA();
              ALoader::load(sa, sp, aRows, kStep, kb, &full[ring.stage]);
              ALoader::nextKStep(sp, kStep);
              ring.advance();
            }
          };
          if (sp.bEvictFirst)
            loadKBlocks(std::true_type{});
          else
            loadKBlocks(std::false_type{});
          if (tracing && u.kb0 == 0 && rank == 0) {
            sp.trace[work.index].start = tTook;
            sp.trace[work.index].waitNs = waited;
            sp.trace[work.index].setupNs = tTicket != 0 ? static_cast<unsigned int>(tTicket - tEntry) : 0u;
          }
        });
        tTicket = 0;  // the set-up belongs to the block's first unit only
      }
    }
  } else {
    // The consumers.
    claimRegistersTo<Regs::kConsumer>();
    const int cw = wg - 1;
    const bool signaller = (threadIdx.x % 128) == 0;
    constexpr int kRowOff = BM == 128 ? 64 : 0;  // rows of the tile per consumer index
    static_assert(BM == 128 || WN == 64 || WN == 128, "the 64-row path splits BN between the consumers");
    // The widest stage's accumulators; a narrower stage (StageShapes) uses
    // their first registers. Arrays of each stage's own width, each in its
    // stage's scope, made ptxas serialize the wider stage's wgmmas.
    float acc[WN / 2];
    // Descriptors stay in uniform registers only if the compiler sees the
    // consumer index as warp-uniform.
    ConsumerMainloop<T, BM, WN, TransB, Storage, ALoader::kLayout> mainloop(
        ss.base, __shfl_sync(0xffffffffu, cw, 0));
    uint32_t epiTurn = 0;  // this warp's TMA store chunks so far (epilogue())
    bool residentReady = !Storage::kResidentB;  // resident weights landed (waited once, at the first unit)
    auto release = [&](int st) { link.releaseSlot(&empty[st]); };
    // A tile is posted once its TMA stores have completed. Waiting for them
    // right after issuing them held the consumers 2.5 us a tile in a
    // convolution's many short tiles (ResNet 56 x 56, batch 32, H100 traces:
    // 3.4 us of epilogue and post against 0.8 us without a post). A block
    // that runs one stage alone therefore posts a tile once its next unit's
    // MMAs are done, when those stores have long completed, and its last
    // tile before it exits. Not in a cluster pair (the pair posts through its
    // own hand-over), nor in a fused kernel, where a block's next unit may
    // wait on the very tile it holds.
    constexpr bool kDeferPosts =
        KP::kStages == 1 && Link::kSize == 1 && !cusync::policy::isNoSync<typename StageViewOf<0, KP>::Out>;
    cusync::TileWork heldPost;  // the tile whose post is deferred; none while not valid
    auto postHeld = [&] {
      if constexpr (kDeferPosts) {
        if (!heldPost.valid) return;
        epilogueStoresDone();
        consumerBarrier();
        if (threadIdx.x == 128) cusync::postElected(kp.s0.view, heldPost);
        heldPost.valid = false;
      }
    };
    // Each stage's k-blocks, computed once: recomputed per unit, the count was
    // rematerialized inside the k loop.
    int kItersOf[KP::kStages];
    forEachStage(kp, [&](auto I, const auto& sp) { kItersOf[decltype(I)::value] = static_cast<int>((sp.K + kBK - 1) / kBK); });
    for (;;) {
      mbarWait(&full[mainloop.stage], mainloop.phase);
      const Unit u = units[mainloop.stage];
      const cusync::TileWork& work = u.w;
      if (!__any_sync(0xffffffffu, work.valid)) {
        postHeld();
        break;
      }
      const unsigned long long tMma = tracing ? globalTimer() : 0;
      if (!residentReady) {
        mbarWait(ss.residentFull(), 0);
        residentReady = true;
      }
      // The stage from lane 0: a branch on a value the compiler cannot see
      // as warp-uniform (the slot record's) makes the code under it
      // divergent, and the k loop then builds its descriptors in vector
      // registers (an R2UR per operand per wgmma) instead of uniform ones.
      const uint32_t unitStage = KP::kStages == 1 ? 0u : __shfl_sync(0xffffffffu, u.stage, 0);
      withStage(kp, unitStage, [&](auto stageIndex, const auto& sp) {
        constexpr Epilogue E = decltype(stageIndex)::value == 0 ? E0 : E1;
        // This stage's tile width and columns per warpgroup.
        constexpr int BN = Shape::template Stage<decltype(stageIndex)::value>::BN;
        constexpr int kUnitWN = BM == 128 ? BN : BN / 2;
        constexpr int kColOff = BM == 128 ? 0 : kUnitWN;  // columns of the tile per consumer index
        static_assert(kUnitWN <= WN, "the ring and the accumulators are sized for the widest stage");
        float(&unitAcc)[kUnitWN / 2] = reinterpret_cast<float(&)[kUnitWN / 2]>(acc);
        // Whole tiles take the k range from the kernel's arguments, which the
        // compiler knows to be warp-uniform: it then keeps the ring position
        // and the descriptors in uniform registers (128x96 spends 14% less
        // time in its MMAs at llama-qkv M = 512 than with the range from the
        // slot record). Split and KCut units read theirs from the slot record.
        const int kb0 = decltype(sched)::kCutsK ? __shfl_sync(0xffffffffu, u.kb0, 0) : 0;
        const int kb1 = decltype(sched)::kCutsK ? __shfl_sync(0xffffffffu, u.kb1, 0) : kItersOf[decltype(stageIndex)::value];
        const int lastStage = mainloop.template run<kUnitWN>(unitAcc, full, kb0, kb1, signaller, release,
                                           [&](int kb) { return ALoader::k16Steps(sp, kb); });
        postHeld();  // the previous tile's stores completed during these MMAs
        UnitFinish fin = sched.finishOf(u);
        if (tracing && threadIdx.x == 128 && rank == 0 && fin.tracesTile) {
          sp.trace[work.index].mmaStart = tMma;
          sp.trace[work.index].mmaNs = static_cast<unsigned int>(globalTimer() - tMma);
        }
        if (signaller) release(lastStage);
        if (!sched.template reduce<kUnitWN / 8>(unitAcc, u, fin, cw)) return;
        // The epilogue works warp by warp (no warpgroup barrier inside), so
        // the warps of a shared fixup store only the slabs their part owns.
        if (fin.store)
          epilogue<T, kUnitWN, E, Storage::kEpiBufs>(
              unitAcc, sp.C, sp.epi, static_cast<int64_t>(work.tile.y) * kRowsPerTile + rank * BM + cw * kRowOff,
              static_cast<int64_t>(work.tile.x) * BN + cw * kColOff, ss.scratch(threadIdx.x / 32 - 4), &sp.tmC,
              SplitOutput{sp.C2, &sp.tmC2, sp.splitN}, epiTurn);
        sched.afterStore(fin, cw);
        if constexpr (kDeferPosts) {
          heldPost = work;  // valid; posted by postHeld(), after the next unit's MMAs or before the block exits
        } else if constexpr (!cusync::policy::isNoSync<typename std::remove_reference_t<decltype(sp)>::View::Out>) {
          // The post hook: every TMA store of the tile has written C, then one thread posts.
          epilogueStoresDone();
          consumerBarrier();
          if (threadIdx.x == 128) {
            if (link.postsTile()) cusync::postElected(sp.view, work);
            link.afterPost();
          }
        }
        // A pair's second block names its SM, so that tail analyses count both SMs of a pair tile.
        if (tracing && threadIdx.x == 128 && rank == 1 && fin.store) sp.trace[work.index].peerSm = smId() + 1;
        if (tracing && threadIdx.x == 128 && rank == 0 && fin.store) {
          sp.trace[work.index].end = globalTimer();
          sp.trace[work.index].sm = smId();
          sp.trace[work.index].blockEntry = tEntry;
          lastTraced = work.index;
          lastTracedStage = u.stage;
        }
      });
    }
  }
  if (wg != 0) epilogueScratchFree();  // the copy engine is done reading this block's scratch
  link.syncBeforeExit();
  if (wg != 0 && lastTraced != ~0u)
    withStage(kp, lastTracedStage, [&](auto, const auto& sp) { sp.trace[lastTraced].blockExit = globalTimer(); });
#endif
}

template <class Shape, class T, int TransB, Epilogue E0, Epilogue E1, class KP, class ALoader = TmaTileA>
__global__ void __launch_bounds__(kThreads, 1) gemmKernel(const __grid_constant__ KP kp) {
  gemmBody<Shape, T, TransB, E0, E1, KP, ALoader>(kp);
}

template <class Shape, class T, int TransB, Epilogue E0, Epilogue E1, class KP, class ALoader = TmaTileA>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
    gemmKernelPair(const __grid_constant__ KP kp) {
  gemmBody<Shape, T, TransB, E0, E1, KP, ALoader>(kp);
}

}  // namespace cusync_gemm::detail
