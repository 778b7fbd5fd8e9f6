// The persistent warp-specialized Hopper GEMM kernel (sm_90a).
//
// Block = 3 warpgroups. Warpgroup 0 is the producer: one elected thread takes
// tiles from the stage's dispenser, and for each k-block of a tile fills one
// slot of a shared-memory ring with TMA: B, the cusync wait, then A when the
// stage has ReorderTileLoads; otherwise the wait, B, then A. Warpgroups 1 and
// 2 are consumers: each owns 64 rows of the 128-row tile and runs wgmma over
// the ring, then the fused epilogue (detail/epilogue.cuh).
// The tile a ring slot belongs to travels with the slot (TileWork copy), and
// an invalid TileWork in a slot tells the consumers to stop. Four schedules
// (Sched): one tile per ticket, K split into parts, cluster pairs that share
// B by TMA multicast, and stream cuts of the k-blocks (gemm() only).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/atomic>
#include <cuda/ptx>
#include <type_traits>

#include "cusync/device.h"
#include "cusync/tile_order.h"
#include "kernels/gemm/detail/arch.cuh"
#include "kernels/gemm/detail/epilogue.cuh"
#include "kernels/gemm/detail/sm90.cuh"
#include "kernels/gemm/detail/split_fixup.cuh"
#include "kernels/gemm/detail/stream_plan.h"
#include "kernels/gemm/detail/wgmma_ops.cuh"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

constexpr int kBM = 128;
constexpr int kBK = 64;
constexpr int kThreads = 384;
constexpr int kTicketLead = 3;  // k-blocks before a tile's end at which the next ticket is taken

// A work unit in a ring slot: the stage tile, and the k-blocks [kb0, kb1) of
// it that this unit computes (all of them unless the launch splits K).
struct UnitWork {
  cusync::TileWork w;
  int32_t kb0 = 0, kb1 = 0;
  uint32_t split = 0;  // which of the tile's splits
  uint32_t pos = 0;    // the tile's position in the stage order
};

// How a launch turns tiles into work units.
//   Tiles:   one unit per tile, from the stage's dispenser.
//   SplitK:  units from a per-stage counter, in stage order: the first
//            dpTiles tiles whole, then the R later tiles in S phases, phase s
//            holding split s (a contiguous S-th of the k-blocks) of each of
//            them. The 64-row configurations split every tile (dpTiles = 0);
//            the 128-row tail-split configurations split only the tiles past
//            the whole waves, so that they fill the SMs. Units running at
//            once share k offsets (the operands they share stay in L2).
//   Pair:    a cluster of two blocks per stage tile of 256 rows: each block
//            computes 128 of the rows and loads its own A, and each loads half
//            of the B k-block and multicasts it to both, so a block receives B
//            from L2 once per pair instead of once per block (a third less L2
//            -> SM traffic for 128x256). The first block takes the tickets and
//            hands each tile to the second through shared memory.
//   Stream:  no tickets (gemm()'s NoSync stages only): the tiles' k-blocks
//            laid out column by column, cut into G equal ranges, one per
//            group of blocks; a group has one block per 128-row band, so its
//            blocks walk the same B k-blocks at once. A block's range may
//            start inside a tile (that part writes an fp32 partial) and end
//            inside one (that part, holding the tile's first k-block, adds
//            the later groups' partials and stores the tile). A finisher
//            waits only for other blocks' first units, which wait for
//            nothing, so no wait can go around (all blocks are resident).
enum class Sched { Tiles, SplitK, Pair, Stream };

// Split-K state in device memory (kernels/gemm/gemm_host.cpp allocates it per stage).
struct SplitParams {
  unsigned long long* counter = nullptr;  // unit tickets of the current run; reset by the last taker
  uint32_t* flags = nullptr;              // per (split tile, consumer warpgroup): partials written
  float* partials = nullptr;              // [split tile][split < S - 1][warpgroup][fragment] fp32
  uint32_t splits = 1, units = 0, unitsPerRun = 0;
  uint32_t dpTiles = 0;                   // leading tiles computed whole
  uint32_t streamGroups = 0;              // Stream: groups of blocks (flags and partials per block)
};

// Shared memory of a block: the ring of k-block slots (A then B), its full
// and empty mbarriers, the work unit of each slot, and the consumers'
// epilogue scratch. As many slots as fit beside the scratch.
template <int BN, int BM = 128, bool Deep = false, int TransB = 0>
struct Ring {
  static constexpr int kMaxSmem = 232448;  // an H100 block's opt-in dynamic shared memory (227 KiB)
  static constexpr int kABytes = BM * kBK * 2;
  // B's slot: BN rows of 128 bytes ([N, K]), or whole boxes of 64 columns
  // ([K, N]: 176 columns take three, the last one part used).
  static constexpr int kBBytes = (TransB == 0 ? BN : (BN + 63) / 64 * 64) * kBK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  // 128x192 keeps 4 stages (not 5) so that its epilogue scratch holds two
  // buffers per warp (NOTES.md v10j: same-machine A/B, 2 fewer misses). Deep
  // (stream launches) keeps 5 and one buffer: streams are picked for short-K
  // shapes, where v10j measured 5 stages 1.0-1.6% faster (gpt3-wo M = 256-512).
  // The narrow widths (176, 168, 144, 96): as many slots as fit beside one
  // epilogue buffer per warp and 2 KiB of barriers, slot records and alignment
  // (96: 7 slots, 144: 6; with two buffers 6 and 5, which ran 3-4% slower
  // where these widths are picked, NOTES.md v15b; 176 and 168 get 5 slots
  // either way and keep two buffers).
  static constexpr int kFitStages = (kMaxSmem - 1024 - 2048 - 8 * 1 * kScratchPerWarp) / kStageBytes;
  static constexpr int kStages = BM == 64 ? (BN == 256 ? 5 : 8)
                                 : BN == 256 ? 4
                                 : BN == 192 ? (Deep ? 5 : 4)
                                 : BN == 128 ? 6
                                             : kFitStages;
  static constexpr int kBarOffset = kStages * kStageBytes;
  static constexpr int kInfoOffset = kBarOffset + 2 * kStages * 8;
  // Pair launches: the tile handed to the second block, and the mbarriers
  // of the hand-over (mailbox full / empty) and of the post (peer stored /
  // post done).
  static constexpr int kPairOffset = (kInfoOffset + kStages * (int)sizeof(UnitWork) + 15) / 16 * 16;
  static constexpr int kPairBytes = (int)sizeof(cusync::TileWork) + 4 * 8;
  // The epilogue scratch: per consumer warp two buffers where they fit beside
  // the ring (128x256, 128x128, 64x128), else one. Aligned to 1024 bytes for
  // the 128-byte swizzle of the TMA stores that read it.
  static constexpr int kScratchOffset = (kPairOffset + kPairBytes + 1023) / 1024 * 1024;
  static constexpr int kEpiBufs = kScratchOffset + 8 * 2 * kScratchPerWarp + 1024 <= kMaxSmem ? 2 : 1;
  static constexpr int kBytes = kScratchOffset + 8 * kEpiBufs * kScratchPerWarp;  // 8 consumer warps
  static constexpr int kSmemRequest = kBytes + 1024;  // room to align the base to 1024
  static_assert(kSmemRequest <= kMaxSmem, "more shared memory than an H100 block may have");
};

// The ring of a schedule's kernel (stream launches keep the deeper one); the
// launch sizes shared memory by the same type.
template <Sched Sc, int BN, int BM, int TransB>
using RingOf = Ring<BN, BM, Sc == Sched::Stream, TransB>;

// TransB = 0: B is [N, K], tensor map box {64 (k), BN (n)}.
// TransB = 1: B is [K, N], tensor map box {64 (n), 64 (k)}, ceil(BN / 64) boxes per slot.
//
// BM = 128: consumer warpgroup cw owns rows [64 cw, 64 cw + 64) x all BN columns.
// BM = 64 (split-K path): consumer cw owns all 64 rows x columns [cw BN/2, (cw + 1) BN/2).
// Split: work units (tile position, split) come from sp.counter, phase by
// phase (see Sched::SplitK); split s < S - 1 writes its fp32 partial and
// raises the tile's flag; split S - 1 waits for the S - 1 partials, adds them
// in a fixed order per warp slab (slabOwner(): deterministic), runs the
// epilogue, takes one stage ticket and posts the tile once. Where all parts
// run at once in a NoSync launch they share the fixup instead (same order). Every block takes one stage ticket at start (its run
// number), so a run takes numTiles + blocks stage tickets as the stage expects.
template <class T, int BM, int BN, int TransB, Sched Sc, Epilogue E, class In, class Out>
__device__ __forceinline__ void gemmBody(const CUtensorMap& tmA, const CUtensorMap& tmB, const CUtensorMap& tmC, T* C,
                                         const EpiParams& p,
                                         const cusync::StageView<In, Out>& view, const SplitParams& sp) {
#if CUSYNC_GEMM_SM90A
  const unsigned long long tEntry = p.trace != nullptr ? globalTimer() : 0;
  unsigned long long tTicket = 0;  // trace, thread 0: the first ticket is taken (before it is decoded)
  uint32_t lastTraced = ~0u;  // trace, consumer thread 128: the last tile this block finished
  static_assert(BM == 128 || BM == 64, "BM");
  static_assert(BM == 128 || Sc == Sched::SplitK, "64-row tiles go with split K");
  constexpr bool Split = Sc == Sched::SplitK;
  constexpr bool Stream = Sc == Sched::Stream;
  constexpr bool Pair = Sc == Sched::Pair;
  constexpr int kRowsPerTile = Pair ? 2 * BM : BM;  // stage tile rows
  constexpr int WN = BM == 128 ? BN : BN / 2;  // columns of one consumer warpgroup
  using R = RingOf<Sc, BN, BM, TransB>;
  constexpr int S = R::kStages;
  extern __shared__ __align__(1024) unsigned char smemRaw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + R::kBarOffset);
  uint64_t* empty = full + S;
  UnitWork* info = reinterpret_cast<UnitWork*>(smem + R::kInfoOffset);
  cusync::TileWork* mailbox = reinterpret_cast<cusync::TileWork*>(smem + R::kPairOffset);
  uint64_t* mboxFull = reinterpret_cast<uint64_t*>(smem + R::kPairOffset + sizeof(cusync::TileWork));
  uint64_t* mboxEmpty = mboxFull + 1;
  uint64_t* peerStored = mboxFull + 2;  // the second block stored its rows of the tile
  uint64_t* postDone = mboxFull + 3;    // the first block posted the tile
  const uint32_t rank = Pair ? cuda::ptx::get_sreg_cluster_ctarank() : 0u;

  const int wg = threadIdx.x / 128;
  const int kIters = static_cast<int>((p.K + kBK - 1) / kBK);

  // Static first tiles (gemm()'s own NoSync stages, EpiParams::staticFirst):
  // a block's first tile (split K: unit) is the one at its own index in the
  // stage order, so that its first loads wait for no atomic (measured ~1.3 us
  // from a block's start to its first ticket on the H100, NOTES.md v11). Later
  // tickets count from the first tile no block starts with: per run, the
  // tiles past the ticket blocks and one closing ticket per block. Stages
  // with a policy need the run numbers that tickets carry, so they take
  // every tile by ticket.
  constexpr bool kNoSyncStage = cusync::policy::isNoSync<In> && cusync::policy::isNoSync<Out>;
  static_assert(!Stream || kNoSyncStage, "stream blocks take no tickets: NoSync stages only");
  const bool staticFirst = kNoSyncStage && p.staticFirst;
  const bool staticAll = staticFirst && p.staticAll && Sc == Sched::Tiles;
  const uint32_t ticketBlocks = Pair ? gridDim.x / 2 : gridDim.x;
  // Tiles, Pair: the tile of ticket t (taken from the stage's counter).
  // Static first tiles: a run takes numTiles tickets (the tiles past the
  // ticket blocks, then one closing ticket per block) and the taker of the
  // last resets the counter, so tickets stay below numTiles (32-bit, no
  // division in the producer's 40 registers).
  auto tileOf = [&](unsigned long long t) {
    if (!staticFirst) return cusync::tileOfTicket(view, t);
    resetAfterLast(view.tickets, t, view.numTiles);
    cusync::TileWork w;
    w.run = 1;
    w.index = ticketBlocks + static_cast<uint32_t>(t);
    w.valid = w.index < view.numTiles;
    if (w.valid) w.tile = cusync::protocol::persistentTile(view, w.index);
    return w;
  };

  // Split K: unit [t] of the run decodes into (tile position, split); see Sched::SplitK.
  auto splitUnit = [&](const cusync::TileWork& start, unsigned long long t) {
    UnitWork u;
    u.w = start;
    u.w.valid = t < sp.units;
    if (u.w.valid) {
      // Split units go phase by phase: every split tile's part 0, then
      // every part 1, ... So the parts running at once share k offsets
      // (and the B slices of their column in L2), and a tile's last
      // part, which finishes it, comes after its siblings whenever the
      // parts span several waves: it then finds their partials written
      // instead of waiting for them (NOTES.md v8).
      const uint32_t dp = sp.dpTiles;
      const uint32_t S = t < dp ? 1u : sp.splits;
      const uint32_t R = sp.units > dp ? (sp.units - dp) / sp.splits : 1u;  // split tiles
      const uint32_t q = static_cast<uint32_t>(t) - (t < dp ? 0u : dp);
      u.pos = t < dp ? q : dp + q % R;
      u.split = t < dp ? 0u : q / R;
      u.w.index = u.pos;
      u.w.tile = cusync::protocol::persistentTile(view, u.pos);
      u.kb0 = static_cast<int32_t>(u.split * static_cast<uint32_t>(kIters) / S);
      u.kb1 = static_cast<int32_t>((u.split + 1) * static_cast<uint32_t>(kIters) / S);
    }
    return u;
  };

  // Stream: this block's band and its group's range [streamPos, streamEnd)
  // of the (column, k-block) sequence; the unit at position x of it.
  const uint32_t bands = view.shape.grid.y;
  uint32_t streamPos = 0, streamEnd = 0;
  auto streamUnit = [&](uint32_t x) {
    UnitWork u;
    u.w.run = 1;
    u.w.valid = x < streamEnd;
    if (u.w.valid) {
      const uint32_t c = x / static_cast<uint32_t>(kIters);
      u.kb0 = static_cast<int32_t>(x - c * static_cast<uint32_t>(kIters));
      u.kb1 = u.kb0 + static_cast<int32_t>(min(static_cast<uint32_t>(kIters - u.kb0), streamEnd - x));
      u.w.tile = cusync::Dim3(c, blockIdx.x % bands, 1);
      u.w.index = u.w.tile.y * view.shape.grid.x + c;
      u.pos = u.w.index;
    }
    return u;
  };

  // The producer's first tickets are taken before the barriers are set up,
  // so that their atomics (and the order-table read) overlap the block's
  // set-up instead of delaying the first loads. Pair: the first block takes
  // them; the hand-over to the second waits for the barriers below.
  // With p.waitPrior (a programmatic dependent launch) they wait for the
  // previous grid first: the tickets, like all global memory, may still be in
  // use by it.
  UnitWork first;
  cusync::TileWork start{};  // split K: the run number, one of the blocks' stage tickets
  // Split K: the next unit from the unit counter, which the taker of the
  // run's last unit ticket resets.
  auto nextSplitUnit = [&] {
    const unsigned long long t = atomicAdd(sp.counter, 1ull);
    resetAfterLast(sp.counter, t, staticFirst ? sp.units : sp.unitsPerRun);
    return splitUnit(start, staticFirst ? gridDim.x + t : t);
  };
  auto takeFirst = [&] {
    if (p.trace != nullptr) tTicket = globalTimer();
    if (staticFirst || Stream) {
      // No CCCL wrapper for griddepcontrol; the ticket path triggers dependents in tileElected().
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
      if constexpr (Stream) {
        const uint64_t kbTotal = static_cast<uint64_t>(view.shape.grid.x) * static_cast<uint64_t>(kIters);
        const uint32_t g = blockIdx.x / bands;
        streamPos = streamBegin(g, sp.streamGroups, kbTotal);
        streamEnd = streamBegin(g + 1, sp.streamGroups, kbTotal);
        first = streamUnit(streamPos);
      } else if constexpr (Split) {
        start.run = 1;
        first = splitUnit(start, blockIdx.x);
      } else if (rank == 0) {
        first.w.run = 1;
        first.w.index = Pair ? blockIdx.x / 2 : blockIdx.x;  // a pair's first block takes the tickets
        first.w.valid = first.w.index < view.numTiles;
        if (first.w.valid) first.w.tile = cusync::protocol::persistentTile(view, first.w.index);
      }
    } else if constexpr (Split) {
      const unsigned long long t = atomicAdd(sp.counter, 1ull);  // both atomics in flight at once
      start = cusync::tileElected(view);
      resetAfterLast(sp.counter, t, sp.unitsPerRun);
      first = splitUnit(start, t);
    } else if (rank == 0) {
      first.w = cusync::tileElected(view);
    }
  };
  if (threadIdx.x == 0) {
    // Fetch both tensor maps now rather than on the first loads.
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmA) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmB) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&tmC) : "memory");
    if (!p.waitPrior) takeFirst();
  }

  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      // Pair: a slot is free once the consumers of both blocks are done with
      // it, since either block's multicast writes into both.
      cuda::ptx::mbarrier_init(&empty[s], Pair ? 4 : 2);
    }
    if constexpr (Pair) {
      cuda::ptx::mbarrier_init(mboxFull, 1);
      cuda::ptx::mbarrier_init(mboxEmpty, 1);
      cuda::ptx::mbarrier_init(peerStored, 1);
      cuda::ptx::mbarrier_init(postDone, 1);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  if (p.waitPrior) {
    // No CCCL wrapper for griddepcontrol.
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if (threadIdx.x == 0) takeFirst();
  }
  // Pair: no remote arrive or multicast may reach a block before its barriers exist.
  if constexpr (Pair) clusterSync();
  else __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int stage = 0;
      uint32_t phase = 0;
      constexpr uint32_t kTx = R::kStageBytes;
      bool haveFirst = true;
      unsigned long long nextTicket = 0;  // Tiles, Pair: the next tile's ticket, taken during this one
      uint32_t lastIndex = 0;             // Tiles with staticAll: the stage-order index of the last tile
      const bool reorderLoads = (view.opts & cusync::ReorderTileLoads) != 0;
      const uint64_t bPolicy = p.bEvictFirst ? evictFirstPolicy() : 0;
      uint32_t mboxPhase = 0;
      // Pair: the other block's consumers release this block's slots too.
      // A CTA-scope wait suffices: they arrive after wgmma.wait_group, so
      // their reads of the slot are complete, and the loads that follow are
      // ordered after the wait (CUTLASS waits the same way; an acquire at
      // cluster scope per k-block made the A-sharing pairs of NOTES.md v15a
      // 4-5% slower).
      auto waitEmpty = [&](int st, uint32_t ph) { mbarWait(&empty[st], ph ^ 1); };
      for (;;) {
        UnitWork u;
        if constexpr (Split) {
          u = haveFirst ? first : nextSplitUnit();
        } else if constexpr (Stream) {
          u = haveFirst ? first : streamUnit(streamPos);
          streamPos += static_cast<uint32_t>(u.kb1 - u.kb0);
        } else {
          // The ticket was taken kTicketLead loads before the previous
          // tile's last one (below), so its atomic ran while this thread
          // waited for slots (0.3% faster on average than taking it here,
          // NOTES.md v10e). A whole tile ahead measured up to 11% slower
          // where the last wave is nearly full: blocks then keep tiles that
          // a block finishing earlier would have taken (NOTES.md v8).
          if (rank == 0) {
            if (haveFirst) {
              u.w = first.w;
            } else if (staticAll) {
              u.w.run = 1;
              u.w.index = lastIndex + gridDim.x;
              u.w.valid = u.w.index < view.numTiles;
              if (u.w.valid) u.w.tile = cusync::protocol::persistentTile(view, u.w.index);
            } else {
              u.w = tileOf(nextTicket);
            }
            lastIndex = u.w.index;
          }
          if constexpr (Pair) {
            if (rank == 0) {
              mbarWaitCluster(mboxEmpty, mboxPhase ^ 1);
              *static_cast<cusync::TileWork*>(__cluster_map_shared_rank(mailbox, 1)) = u.w;
              arriveRemote(mboxFull, 1);
            } else {
              mbarWaitCluster(mboxFull, mboxPhase);
              u.w = *mailbox;
              arriveRemote(mboxEmpty, 0);
            }
            mboxPhase ^= 1;
          }
          u.kb0 = 0;
          u.kb1 = kIters;
        }
        haveFirst = false;
        const cusync::TileWork& work = u.w;
        waitEmpty(stage, phase);
        info[stage] = u;
        if (!work.valid) {
          cuda::ptx::mbarrier_arrive(&full[stage]);
          break;
        }
        const int32_t mTile = static_cast<int32_t>(work.tile.y * kRowsPerTile);  // the stage tile's first row
        const int32_t m0 = mTile + static_cast<int32_t>(rank) * BM;             // this block's rows
        const int32_t n0 = static_cast<int32_t>(work.tile.x * BN);
        const uint32_t walkStart = static_cast<uint32_t>(u.kb0 * kBK);
        const unsigned long long tTook = p.trace != nullptr ? globalTimer() : 0;
        unsigned int waited = 0;
        const int kbTicket = u.kb1 - kTicketLead > u.kb0 ? u.kb1 - kTicketLead : u.kb0;
        for (int kb = u.kb0; kb < u.kb1; ++kb) {
          if (kb > u.kb0) waitEmpty(stage, phase);
          if constexpr (!Split && !Stream) {
            if (rank == 0 && kb == kbTicket && !staticAll) nextTicket = cusync::ticketElected(view);
          }
          unsigned char* sa = smem + stage * R::kStageBytes;
          unsigned char* sb = sa + R::kABytes;
          const int32_t k0 = kb * kBK;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               &full[stage], kTx);
          // Pair: both blocks wait for the whole stage tile's rows.
          const cusync::Read read{static_cast<uint32_t>(k0), static_cast<uint32_t>(mTile), 0, walkStart};
          // ReorderTileLoads: load the weights (B) before waiting for A's
          // producer, so the wait overlaps B's load; without the flag the
          // wait comes first (measured slower in the MLP: kernels/mlp/NOTES.md run 4).
          auto waitForA = [&] {
            if (p.trace != nullptr) {
              const unsigned long long t0 = globalTimer();
              cusync::waitElected(view, work, read, 0, cusync::Reader::AsyncProxy);
              waited += static_cast<unsigned int>(globalTimer() - t0);
            } else {
              cusync::waitElected(view, work, read, 0, cusync::Reader::AsyncProxy);
            }
          };
          if (!reorderLoads) waitForA();
          if constexpr (Pair) {
            // Each block loads its half of B's boxes and multicasts them to
            // both; each block's full barrier counts the whole slot.
            constexpr uint16_t kBoth = 0x3;
            if constexpr (TransB == 0) {
              const int32_t cb[2] = {k0, n0 + static_cast<int32_t>(rank) * (BN / 2)};
              cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                              sb + rank * (BN / 2) * 128, &tmB, cb, &full[stage], kBoth);
            } else {
#pragma unroll
              for (int c = 0; c < BN / 64; ++c) {
                if ((c & 1) != static_cast<int>(rank)) continue;
                const int32_t cb[2] = {n0 + 64 * c, k0};
                cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sb + c * 8192, &tmB,
                                                cb, &full[stage], kBoth);
              }
            }
          } else {
            // B as one box ([N, K]) or BN / 64 boxes of 64 columns ([K, N]).
            constexpr int kBoxes = TransB == 0 ? 1 : (BN + 63) / 64;
#pragma unroll
            for (int c = 0; c < kBoxes; ++c) {
              const int32_t cb[2] = {TransB == 0 ? k0 : n0 + 64 * c, TransB == 0 ? n0 : k0};
              if (p.bEvictFirst)
                tmaLoadHinted(sb + c * 8192, &tmB, cb, &full[stage], bPolicy);
              else
                cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sb + c * 8192, &tmB,
                                                cb, &full[stage]);
            }
          }
          if (reorderLoads) waitForA();
          const int32_t ca[2] = {k0, m0};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sa, &tmA, ca, &full[stage]);
          if (++stage == S) stage = 0, phase ^= 1;
        }
        if (p.trace != nullptr && u.kb0 == 0 && rank == 0) {
          p.trace[work.index].start = tTook;
          p.trace[work.index].waitNs = waited;
          p.trace[work.index].setupNs = tTicket != 0 ? static_cast<unsigned int>(tTicket - tEntry) : 0u;
        }
        tTicket = 0;  // the set-up belongs to the block's first unit only
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1;
    const bool signaller = (threadIdx.x % 128) == 0;
    constexpr int kRowOff = BM == 128 ? 64 : 0;          // rows of the tile per consumer index
    constexpr int kColOff = BM == 128 ? 0 : WN;          // columns of the tile per consumer index
    constexpr int kASmemOff = BM == 128 ? 64 * 128 : 0;  // bytes into the A slot
    constexpr int kBSmemOff = BM == 128 ? 0 : WN * 128;  // bytes into the B slot (NK rows or KN 64-column boxes)
    static_assert(BM == 128 || WN == 64 || WN == 128, "the 64-row path splits BN between the consumers");
    float acc[WN / 2];
    // The wgmma descriptors of ring slot 0 for this consumer, computed once
    // and moved by constants (MovingDesc). Built per wgmma from the slot's
    // address they cost ~12 vector instructions each (NOTES.md v16c); now
    // 128x96 spends 7-10% less time in its MMAs at llama-qkv M = 512 and
    // M = 64 launches are 3-4% faster (v16f). Whether they stay in uniform
    // registers depends on the k loop's bounds (below).
    static_assert(R::kStageBytes % 1024 == 0, "slots keep the 128-byte swizzle's 1 KiB alignment");
    const int cwU = __shfl_sync(0xffffffffu, cw, 0);
    const MovingDesc descA(smemDesc(smem + cwU * kASmemOff, 16, 1024));
    const MovingDesc descB(smemDesc(smem + R::kABytes + cwU * kBSmemOff, TransB == 0 ? 16 : 8192, 1024));
    uint32_t epiTurn = 0;  // this warp's TMA store chunks so far (epilogue())
    int stage = 0;
    uint32_t phase = 0;
    uint32_t postPhase = 0;
    // A slot is released to this block's producer and, in a pair, to the
    // other block's, whose multicast also writes it.
    auto release = [&](int st) {
      cuda::ptx::mbarrier_arrive(&empty[st]);
      if constexpr (Pair) releaseSlotRemote(&empty[st], rank ^ 1u);
    };
    for (;;) {
      mbarWait(&full[stage], phase);
      const UnitWork u = info[stage];
      const cusync::TileWork& work = u.w;
      if (!__any_sync(0xffffffffu, work.valid)) break;
      const unsigned long long tMma = p.trace != nullptr ? globalTimer() : 0;
      int prevStage = -1;
      // Whole tiles take the k range from the kernel's arguments, which the
      // compiler knows to be warp-uniform: it then keeps the ring position
      // and the descriptors in uniform registers (UIADD3 per wgmma) instead
      // of moving each descriptor with 4 R2UR, and 128x96 spends 14% less
      // time in its MMAs at llama-qkv M = 512 (NOTES.md v17a). Split and
      // stream units read theirs from the slot record; a vote in their loop
      // condition made those kernels slower and a reduction of the count
      // changed nothing (v17a u3, v17e). The validity check is a vote, as in
      // the v17a build that was measured (it changed together with the k
      // count; the shuffle it replaced was not tried alone with it).
      const int kb0 = Split || Stream ? __shfl_sync(0xffffffffu, u.kb0, 0) : 0;
      const int kb1 = Split || Stream ? __shfl_sync(0xffffffffu, u.kb1, 0) : kIters;
      for (int kb = kb0; kb < kb1; ++kb) {
        if (kb > kb0) mbarWait(&full[stage], phase);
        const uint32_t slot = static_cast<uint32_t>(stage * (R::kStageBytes / 16));  // in 16-byte units
        wgmmaFence();
#pragma unroll
        for (int kk = 0; kk < kBK / 16; ++kk) {
          // A k16 step: 32 bytes along the rows of A and of B as [N, K]; 16 rows of 128 bytes of B as [K, N].
          mma16<T, WN, TransB>(acc, descA.plus(slot + kk * 2), descB.plus(slot + (TransB == 0 ? kk * 2 : kk * 128)),
                               (kb > kb0 || kk > 0) ? 1 : 0);
        }
        wgmmaCommit();
        wgmmaWait<1>();
        if (prevStage >= 0 && signaller) release(prevStage);
        prevStage = stage;
        if (++stage == S) stage = 0, phase ^= 1;
      }
      wgmmaWait<0>();
      fenceRegs(acc);
      // Parts of this unit's tile: 1 unless it is one of the split tiles.
      const uint32_t NS = Split && u.pos >= sp.dpTiles ? sp.splits : 1u;
      // Two to eight parts, all at once (every unit is some block's only
      // one: no whole tiles first, no more units than blocks), NoSync: the
      // parts share the fixup (below).
      const bool shareFixup =
          Split && kNoSyncStage && NS >= 2 && NS <= 8 && sp.dpTiles == 0 && sp.units <= gridDim.x;
      if (p.trace != nullptr && threadIdx.x == 128 && rank == 0) {
        // The part whose consumer 0 stores (and traces the tile's end).
        if (Stream ? u.kb0 == 0 : u.split == (shareFixup ? 0u : NS - 1)) {
          p.trace[work.index].mmaStart = tMma;
          p.trace[work.index].mmaNs = static_cast<unsigned int>(globalTimer() - tMma);
        }
      }
      if (signaller) release(prevStage);
      bool skipTicket = false;  // split K: this consumer does not take the tile's stage ticket
      bool storeRows = true;    // shared fixup: this warp's part owns its slab and stores it
      if constexpr (Split) {
        if (NS > 1) {
          const uint32_t tp = u.pos - sp.dpTiles;  // index among the split tiles
          constexpr int R4 = WN / 8;  // float4 per thread
          const uint32_t flag = tp * 2 + cw;
          float4* const part = reinterpret_cast<float4*>(sp.partials);
          auto slot = [&](uint32_t s) { return part + (static_cast<size_t>(tp * (NS - 1) + s) * 2 + cw) * (128 * R4); };
          // The slab of warp w (16 rows) of consumer cw (slab 4 cw + w) sums
          // its parts in the order of slabOwner().
          const uint32_t own = slabOwner(cw, NS);
          // Shared fixup: the slab's owner part adds the other parts'
          // partials of it and stores the slab; the other parts write their
          // partial of it (part s to slot s, or s - 1 above the owner). Each
          // part writes and reads (NS - 1) / NS of a tile instead of one part
          // reading all NS - 1 partials after the others (NOTES.md v11f,
          // v12c). A part waits only for parts that run at the same time and
          // write before they wait, so no wait can go around.
          if (shareFixup) {
            const uint32_t slab = static_cast<uint32_t>(cw * 4 + (threadIdx.x % 128) / 32);
            uint32_t* const slabFlag = &sp.flags[tp * 8 + slab];
            auto slotOfPart = [&](uint32_t s) { return slot(s < own ? s : s - 1); };
            if (u.split != own) {
              writeSlabPartial<R4>(acc, slotOfPart(u.split), slabFlag);
              // The tile's one stage ticket (without static first tiles) is
              // taken by the last part; its thread 128 (slab 0) writes.
              if (u.split + 1 == NS && threadIdx.x == 128 && !staticFirst) (void)cusync::tileElected(view);
              storeRows = false;
            } else {
              awaitSlab(slabFlag, NS - 1);
              addPartsInSlabOrder<R4>(acc, own, own, NS, slotOfPart);
            }
            skipTicket = true;  // the last part's thread 128 took it
          } else {
            if (u.split + 1 < NS) {
              writePartial<R4>(acc, slot(u.split), cw, &sp.flags[flag]);
              continue;  // the last split of this tile finishes it
            }
            awaitPartials(&sp.flags[flag], NS - 1, cw);
            // The finisher holds part NS - 1; part s < NS - 1 wrote slot s.
            addPartsInSlabOrder<R4>(acc, own, NS - 1, NS, slot);
          }
        }
      }
      if constexpr (Stream) {
        if (u.kb0 > 0 || u.kb1 < kIters) {
          constexpr int R4 = WN / 8;  // float4 per thread
          float4* const part = reinterpret_cast<float4*>(sp.partials);
          auto slot = [&](uint32_t b) { return part + (static_cast<size_t>(b) * 2 + cw) * (128 * R4); };
          // A part without the tile's first k-block is its block's first
          // unit: it writes the block's one partial.
          if (u.kb0 > 0) {
            writePartial<R4>(acc, slot(blockIdx.x), cw, &sp.flags[blockIdx.x * 2 + cw]);
            continue;
          }
          // The tile's first k-block: the groups after this one up to the
          // one holding the tile's last k-block each hold a part of it as
          // their first unit. Added in group order (deterministic).
          const uint64_t lastK = static_cast<uint64_t>(work.tile.x + 1) * static_cast<uint64_t>(kIters) - 1;
          // Recomputed here rather than kept from the set-up: a value live
          // through the main loop cost the stream kernels spills (ptxas -v).
          const uint64_t kbTotal = static_cast<uint64_t>(view.shape.grid.x) * static_cast<uint64_t>(kIters);
          const uint32_t lastGroup = streamGroupOf(lastK, sp.streamGroups, kbTotal);
          for (uint32_t h = blockIdx.x / bands + 1; h <= lastGroup; ++h) {
            const uint32_t b = h * bands + work.tile.y;
            awaitPartials(&sp.flags[b * 2 + cw], 1u, cw);
            addPartial<R4>(acc, slot(b));
          }
        }
      }
      // The epilogue works warp by warp (no warpgroup barrier inside), so the
      // warps of a shared fixup store only the slabs their part owns.
      if (storeRows)
        epilogue<T, WN, E, R::kEpiBufs>(
            acc, C, p, static_cast<int64_t>(work.tile.y) * kRowsPerTile + rank * BM + cw * kRowOff,
            static_cast<int64_t>(work.tile.x) * BN + cw * kColOff,
            smem + R::kScratchOffset + (threadIdx.x / 32 - 4) * R::kEpiBufs * kScratchPerWarp, &tmC, epiTurn);
      // The warpgroup's warps meet again before their next wgmma, which all
      // four must issue together.
      if (shareFixup) asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
      if constexpr (Split) {
        // This block finished the tile: take one of the run's numTiles stage tickets.
        if (threadIdx.x == 128 && !staticFirst && !skipTicket) (void)cusync::tileElected(view);
      }
      if constexpr (!cusync::policy::isNoSync<Out>) {
        epilogueStoresDone();  // the tile's TMA stores have written C before anyone posts it
        consumerBarrier();
        if (threadIdx.x == 128) {
          if constexpr (Pair) {
            // The first block posts the pair's tile once the second has
            // stored its rows; the second waits for that post before it
            // signals its next tile, so the two never drift a tile apart.
            if (rank == 1) {
              mbarWaitCluster(postDone, postPhase ^ 1);
              cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
              arriveRemote(peerStored, 0);
            } else {
              mbarWaitCluster(peerStored, postPhase);
              cusync::postElected(view, work);
              arriveRemote(postDone, 1);
            }
            postPhase ^= 1;
          } else {
            cusync::postElected(view, work);
          }
        }
      }
      if (p.trace != nullptr && threadIdx.x == 128 && rank == 0 && storeRows) {
        p.trace[work.index].end = globalTimer();
        p.trace[work.index].sm = smId();
        p.trace[work.index].blockEntry = tEntry;
        lastTraced = work.index;
      }
    }
  }
  if (wg != 0) epilogueScratchFree();  // the copy engine is done reading this block's scratch
  // Pair: neither block may exit while the other can still arrive on its
  // barriers or multicast into its shared memory.
  if constexpr (Pair) clusterSync();
  if (wg != 0 && lastTraced != ~0u) p.trace[lastTraced].blockExit = globalTimer();
#endif
}

// 128-row tiles (T128x128, T128x256).
template <class T, int BN, int TransB, Epilogue E, class In, class Out>
__global__ void __launch_bounds__(kThreads, 1)
    gemmKernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
               const __grid_constant__ CUtensorMap tmC, T* C, EpiParams p,
               const __grid_constant__ cusync::StageView<In, Out> view) {
  gemmBody<T, 128, BN, TransB, Sched::Tiles, E, In, Out>(tmA, tmB, tmC, C, p, view, SplitParams{});
}

// Pairs of 128-row blocks in a cluster sharing B by multicast (T128x192Pair,
// T128x256Pair): stage tiles of 256 rows.
template <class T, int BN, int TransB, Epilogue E, class In, class Out>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1)
    gemmKernelPair(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                   const __grid_constant__ CUtensorMap tmC, T* C, EpiParams p,
                   const __grid_constant__ cusync::StageView<In, Out> view) {
  gemmBody<T, 128, BN, TransB, Sched::Pair, E, In, Out>(tmA, tmB, tmC, C, p, view, SplitParams{});
}

// Stream: 128-row tiles, the k-blocks cut evenly over groups of blocks
// (T128x192Stream, T128x256Stream; Ring<BN>).
template <class T, int BN, int TransB, Epilogue E, class In, class Out>
__global__ void __launch_bounds__(kThreads, 1)
    gemmKernelStream(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                     const __grid_constant__ CUtensorMap tmC, T* C, EpiParams p,
                     const __grid_constant__ cusync::StageView<In, Out> view, SplitParams sp) {
  gemmBody<T, 128, BN, TransB, Sched::Stream, E, In, Out>(tmA, tmB, tmC, C, p, view, sp);
}

// Split K: 64-row tiles split throughout (T64x128SplitK, T64x256SplitK;
// smem Ring<BN, 64>), or 128-row tiles with the last wave split
// (T128x256SplitTail, T128x192SplitTail; Ring<BN>).
template <class T, int BM, int BN, int TransB, Epilogue E, class In, class Out>
__global__ void __launch_bounds__(kThreads, 1)
    gemmKernelSplit(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                    const __grid_constant__ CUtensorMap tmC, T* C, EpiParams p,
                    const __grid_constant__ cusync::StageView<In, Out> view, SplitParams sp) {
  gemmBody<T, BM, BN, TransB, Sched::SplitK, E, In, Out>(tmA, tmB, tmC, C, p, view, sp);
}

}  // namespace cusync_gemm::detail
