// WholeTiles: one work unit per stage tile, in the stage's tile order.
//
// Stages with a policy take every tile by ticket from the stage's dispenser
// (cusync::tileElected / ticketElected + tileOfTicket): the ticket carries
// the run number that waits and posts scale with. The next ticket is taken
// at the current tile's ticket point (KernelFlags::ticketLead k-blocks
// before its loads end), so its atomic
// runs while the producer waits for ring slots (a whole tile ahead measured
// up to 11% slower where the last wave is nearly full: a block then keeps a
// tile that a block finishing earlier would have taken).
//
// gemm()'s own NoSync stages need no run numbers: each block starts on the
// tile at its own index (KernelFlags::staticFirst), later tiles count from
// the first tile no block starts with, and with staticAll block b takes tiles
// b, b + blocks, ... without any ticket. Stages with a policy take the same
// static tiles with KernelFlags::staticRuns, and their run number from one
// atomic per block and run.
#pragma once

#include <cuda/atomic>

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "cusync/device.h"
#include "cusync/policy/no_sync.h"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/schedule/partials.cuh"
#include "kernels/gemm/schedule/static_tiles.h"
#include "kernels/gemm/schedule/unit.cuh"

namespace cusync_gemm::detail {

template <class View>
constexpr bool kNoSyncView = cusync::policy::isNoSync<typename View::In> && cusync::policy::isNoSync<typename View::Out>;

// The tile at position `index` of the stage order, for tiles taken without
// a stage ticket: run 1 of a NoSync stage (which counts no runs), or the run
// a fused kernel's counter gives.
template <class View>
__device__ __forceinline__ cusync::TileWork staticTile(const View& view, uint32_t index, uint32_t run = 1) {
  cusync::TileWork w;
  w.run = run;
  w.index = index;
  w.valid = w.index < view.numTiles;
  if (w.valid) w.tile = cusync::protocol::persistentTile(view, w.index);
  return w;
}

template <class View, class Link = SoloLink>
class WholeTiles {
 public:
  static constexpr bool kCutsK = false;  // every unit is a whole tile, k-blocks [0, kIters)

  __device__ __forceinline__ WholeTiles(const View& view, const KernelFlags& f, const ScheduleParams&, int kIters,
                                        bool = true)
      : view_(view),
        kIters_(kIters),
        staticRuns_(!kNoSyncView<View> && f.staticRuns),
        staticFirst_((kNoSyncView<View> && f.staticFirst) || staticRuns_),
        staticAll_(staticRuns_ || (staticFirst_ && f.staticAll && Link::kSize == 1)) {}

  Link link;

  // Producer thread: the block's first tile, taken before the ring's barriers
  // exist so that its atomic (or the order-table read) overlaps the set-up.
  __device__ __forceinline__ void takeFirst() {
    if (staticFirst_) {
      cusync::CudaBackend::triggerDependents();  // the ticket path triggers in tileElected()
      if (link.rank() == 0) {
        const uint32_t taker = blockIdx.x / Link::kSize;
        uint32_t run = 1;
        if (staticRuns_) {
          // This taker's tiles plus its closing ticket: the takers of a run
          // add up to the stage's tickets per run.
          const uint32_t tiles = staticTileCount(taker, gridDim.x / Link::kSize, view_.numTiles);
          const unsigned long long before =
              cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*view_.tickets)
                  .fetch_add(tiles + 1, cuda::memory_order_relaxed);
          run = staticRunOf(before, view_.ticketsPerRun);
          if (taker == 0 && view_.started != nullptr) cusync::CudaBackend::storeRelease(view_.started, run);
        }
        first_ = staticTile(view_, taker, run);
      }
    } else if (link.rank() == 0) {
      first_ = cusync::tileElected(view_);
    }
  }

  // Producer thread: the next unit (the first one first); invalid once the
  // stage's tiles are gone.
  __device__ __forceinline__ Unit next() {
    Unit u;
    if (link.rank() == 0) {
      if (haveFirst_) {
        u.w = first_;
      } else if (staticAll_) {
        u.w = staticTile(view_, lastIndex_ + gridDim.x / Link::kSize, first_.run);
      } else {
        u.w = tileOf(nextTicket_);
      }
      lastIndex_ = u.w.index;
    }
    link.handOver(u.w);
    u.kb0 = 0;
    u.kb1 = kIters_;
    haveFirst_ = false;
    return u;
  }

  // Producer thread, at unit u's ticket point (Unit::ticketPoint).
  __device__ __forceinline__ void atTicketPoint(const Unit&) {
    if (link.rank() == 0 && !staticAll_) nextTicket_ = cusync::ticketElected(view_);
  }

  // Unit i of the stage in run `run` (a fused kernel's counter decodes it).
  __device__ __forceinline__ Unit unitOf(uint32_t i, uint32_t run) const {
    Unit u;
    u.w = staticTile(view_, i, run);
    u.kb0 = 0;
    u.kb1 = kIters_;
    u.pos = i;
    return u;
  }

  // Consumer side: a whole tile is stored by the warpgroups that computed it.
  __device__ __forceinline__ UnitFinish finishOf(const Unit&) const { return UnitFinish{}; }
  template <int R4>
  __device__ __forceinline__ bool reduce(float (&)[4 * R4], const Unit&, UnitFinish&, int) {
    return true;
  }
  __device__ __forceinline__ void afterStore(const UnitFinish&, int) {}

 private:
  // The tile of ticket t. Without static first tiles: the stage's decode.
  // With them, a run takes numTiles tickets (the tiles past the ticket
  // blocks, then one closing ticket per block) and the taker of the last
  // resets the counter, so tickets stay below numTiles (32-bit, no division
  // in the producer's 40 registers).
  __device__ __forceinline__ cusync::TileWork tileOf(unsigned long long t) const {
    if (!staticFirst_) return cusync::tileOfTicket(view_, t);
    resetAfterLast(view_.tickets, t, view_.numTiles);
    const uint32_t ticketBlocks = Link::kSize == 2 ? gridDim.x / 2 : gridDim.x;
    return staticTile(view_, ticketBlocks + static_cast<uint32_t>(t));
  }

  const View& view_;
  int kIters_;
  bool staticRuns_, staticFirst_, staticAll_;
  bool haveFirst_ = true;
  cusync::TileWork first_{};
  unsigned long long nextTicket_ = 0;
  uint32_t lastIndex_ = 0;
};

}  // namespace cusync_gemm::detail
