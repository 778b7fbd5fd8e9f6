// SplitK and TailSplit: work units from a per-stage unit counter, in stage
// order. The first unsplitTiles tiles are whole units; the R later tiles
// come in S phases, phase s holding part s (a contiguous S-th of the
// k-blocks) of each of them. SplitK (64-row tiles) splits every tile;
// TailSplit (128-row tiles) only the tiles past the whole waves, so that the
// last wave fills the SMs. Parts running at once share k offsets, so the
// operands they share stay in L2, and a tile's last part, which finishes it,
// comes after its siblings whenever the parts span several waves: it then
// finds their partials written instead of waiting for them.
//
// Finishing a split tile: part s < S - 1 writes its fp32 partial and raises
// the tile's flag; part S - 1 waits for the S - 1 partials, adds them in a
// fixed order per warp slab (deterministic), runs the epilogue, takes one
// stage ticket and posts the tile once. Where all parts run at once in a
// NoSync launch they share the fixup instead: each warp slab is owned by one
// part, which adds the others' partials of it in the same order and stores
// it, so each part writes and reads (S - 1) / S of a tile instead of one part
// reading S - 1 partials. A part waits only for parts that run at the same
// time and write before they wait, so no wait goes around.
//
// Every block takes one stage ticket at its start (its run number), and the
// finisher of each split tile one more, so a run takes numTiles + blocks
// stage tickets as the stage expects.
#pragma once

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "cusync/device.h"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/schedule/partials.cuh"
#include "kernels/gemm/schedule/split_units.h"
#include "kernels/gemm/schedule/unit.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

template <class View>
class SplitTiles {
 public:
  static constexpr bool kCutsK = true;
  SoloLink link;

  // stageTickets = false in a fused kernel, whose counter gives the run numbers.
  __device__ __forceinline__ SplitTiles(const View& view, const KernelFlags& f, const ScheduleParams& sp, int kIters,
                                        bool stageTickets = true)
      : view_(view),
        sp_(sp),
        kIters_(kIters),
        staticFirst_(kNoSyncView<View> && f.staticFirst),
        ticketed_(stageTickets && !staticFirst_) {}

  // Producer thread: the block's first unit (with static first units, the
  // one at its own index), and its stage ticket for the run number.
  __device__ __forceinline__ void takeFirst() {
    if (staticFirst_) {
      cusync::CudaBackend::triggerDependents();
      start_.run = 1;
      first_ = unitOf(blockIdx.x, 1);
    } else {
      const unsigned long long t = atomicAdd(sp_.counter, 1ull);  // both atomics in flight at once
      start_ = cusync::tileElected(view_);
      resetAfterLast(sp_.counter, t, sp_.unitsPerRun);
      first_ = unitOf(t, start_.run);
    }
  }

  __device__ __forceinline__ Unit next() {
    Unit u;
    if (haveFirst_) {
      u = first_;
    } else {
      // The taker of the run's last unit ticket resets the counter.
      const unsigned long long t = atomicAdd(sp_.counter, 1ull);
      resetAfterLast(sp_.counter, t, staticFirst_ ? sp_.units : sp_.unitsPerRun);
      u = unitOf(staticFirst_ ? gridDim.x + t : t, start_.run);
    }
    haveFirst_ = false;
    return u;
  }

  __device__ __forceinline__ void atTicketPoint(const Unit&) {}

  // Consumer side, once the unit's MMAs are done.
  __device__ __forceinline__ UnitFinish finishOf(const Unit& u) const {
    UnitFinish f;
    f.parts = u.pos >= sp_.unsplitTiles ? sp_.splits : 1u;
    // Two or more parts, all at once (every unit is some block's only one:
    // no whole tiles first, no more units than blocks), NoSync: the parts
    // share the fixup. With more than eight parts, parts 0-7 own a slab each
    // and the rest only write: each owner warp reads what a finisher's warp
    // would, but one warp per SM instead of all eight of one SM.
    f.sharedFixup = kNoSyncView<View> && f.parts >= 2 && sp_.unsplitTiles == 0 &&
                    sp_.units <= gridDim.x;
    // The part whose consumer 0 stores (and traces the tile's end).
    f.tracesTile = u.split == (f.sharedFixup ? 0u : f.parts - 1);
    f.takesTicket = ticketed_ && !f.sharedFixup;
    return f;
  }

  // Hands this part's partial on, or adds the other parts' to acc. Returns
  // false where this consumer warpgroup is done with the unit.
  template <int R4>
  __device__ __forceinline__ bool reduce(float (&acc)[4 * R4], const Unit& u, UnitFinish& f, int cw) {
    const uint32_t NS = f.parts;
    if (NS <= 1) return true;
    const uint32_t tp = u.pos - sp_.unsplitTiles;  // index among the split tiles
    const uint32_t flag = tp * 2 + cw;
    float4* const part = reinterpret_cast<float4*>(sp_.partials);
    auto slot = [&](uint32_t s) { return part + (static_cast<size_t>(tp * (NS - 1) + s) * 2 + cw) * (128 * R4); };
    // The slab of warp w (16 rows) of consumer cw (slab 4 cw + w) sums its
    // parts in the order of slabOwner().
    const uint32_t own = slabOwner(cw, NS);
    if (f.sharedFixup) {
      const uint32_t slab = static_cast<uint32_t>(cw * 4 + (threadIdx.x % 128) / 32);
      uint32_t* const slabFlag = &sp_.flags[tp * 8 + slab];
      auto slotOfPart = [&](uint32_t s) { return slot(s < own ? s : s - 1); };
      if (u.split != own) {
        writeSlabPartial<R4>(acc, slotOfPart(u.split), slabFlag);
        // The tile's one stage ticket (without static first units) is taken
        // by the last part; its thread 128 (slab 0) writes.
        if (u.split + 1 == NS && threadIdx.x == 128 && ticketed_) (void)cusync::tileElected(view_);
        f.store = false;
      } else {
        awaitSlab(slabFlag, NS - 1);
        addPartsInSlabOrder<R4>(acc, own, own, NS, slotOfPart);
      }
      return true;
    }
    if (u.split + 1 < NS) {
      writePartial<R4>(acc, slot(u.split), cw, &sp_.flags[flag]);
      return false;  // the last part of this tile finishes it
    }
    awaitPartials(&sp_.flags[flag], NS - 1, cw);
    // The finisher holds part NS - 1; part s < NS - 1 wrote slot s.
    addPartsInSlabOrder<R4>(acc, own, NS - 1, NS, slot);
    return true;
  }

  // After the epilogue: the warps of a shared fixup meet again before their
  // next wgmma, which all four must issue together; the block that finished
  // a split tile takes one of the run's numTiles stage tickets.
  __device__ __forceinline__ void afterStore(const UnitFinish& f, int cw) {
    if (f.sharedFixup) asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
    if (threadIdx.x == 128 && f.takesTicket) (void)cusync::tileElected(view_);
  }

  // Unit [t] of run `run`: (tile position, part).
  __device__ __forceinline__ Unit unitOf(unsigned long long t, uint32_t run) const {
    Unit u;
    u.w.run = run;
    u.w.valid = t < sp_.units;
    if (u.w.valid) {
      const SplitUnit s = splitUnitAt(static_cast<uint32_t>(t), sp_.unsplitTiles, sp_.splits, sp_.units);
      u.pos = s.pos;
      u.split = s.split;
      u.w.index = u.pos;
      u.w.tile = cusync::protocol::persistentTile(view_, u.pos);
      splitKBlocks(s.split, s.parts, static_cast<uint32_t>(kIters_), u.kb0, u.kb1);
    }
    return u;
  }

 private:
  const View& view_;
  const ScheduleParams& sp_;
  int kIters_;
  bool staticFirst_;
  bool ticketed_;  // takes stage tickets (not in gemm()'s NoSync stages or a fused kernel)
  bool haveFirst_ = true;
  cusync::TileWork start_{};  // the run number, from one of the blocks' stage tickets
  Unit first_;
};

}  // namespace cusync_gemm::detail
