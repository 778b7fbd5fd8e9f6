// KCut: the work cut evenly by k-blocks instead of by tiles, so that few
// tiles still fill every SM. The tiles' k-blocks are laid out column by
// column (k_cut_range.h) and cut into G equal ranges, one per group of
// blocks; a group has one block per 128-row band, so its blocks read the
// same B k-blocks at the same time (B is fetched once). A range may start
// inside a tile (that part writes the block's one fp32 partial) and end
// inside one (that part, holding the tile's first k-block, adds the later
// groups' partials in group order, deterministic, and stores the tile). A
// finisher waits only for other blocks' first units, which wait for
// nothing, so no wait goes around; every block must be resident at once.
// No tickets: gemm()'s NoSync stages only.
#pragma once

#include <cstdint>

#include "cusync/backend_cuda.h"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/schedule/k_cut_range.h"
#include "kernels/gemm/schedule/partials.cuh"
#include "kernels/gemm/schedule/unit.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

template <class View>
class KCutRanges {
  static_assert(kNoSyncView<View>, "KCut blocks take no tickets: NoSync stages only");

 public:
  static constexpr bool kCutsK = true;
  SoloLink link;

  __device__ __forceinline__ KCutRanges(const View& view, const KernelFlags&, const ScheduleParams& sp, int kIters)
      : view_(view), sp_(sp), kIters_(kIters), bands_(view.shape.grid.y) {}

  // Producer thread: this block's band and its group's range [pos_, end_) of
  // the (column, k-block) sequence.
  __device__ __forceinline__ void takeFirst() {
    cusync::CudaBackend::triggerDependents();
    const uint64_t kbTotal = static_cast<uint64_t>(view_.shape.grid.x) * static_cast<uint64_t>(kIters_);
    const uint32_t g = blockIdx.x / bands_;
    pos_ = kCutBegin(g, sp_.kCutGroups, kbTotal);
    end_ = kCutBegin(g + 1, sp_.kCutGroups, kbTotal);
    first_ = unitAt(pos_);
  }

  __device__ __forceinline__ Unit next() {
    const Unit u = haveFirst_ ? first_ : unitAt(pos_);
    pos_ += static_cast<uint32_t>(u.kb1 - u.kb0);
    haveFirst_ = false;
    return u;
  }

  __device__ __forceinline__ void atTicketPoint(const Unit&) {}

  __device__ __forceinline__ UnitFinish finishOf(const Unit& u) const {
    UnitFinish f;
    f.tracesTile = u.kb0 == 0;
    return f;
  }

  template <int R4>
  __device__ __forceinline__ bool reduce(float (&acc)[4 * R4], const Unit& u, UnitFinish&, int cw) {
    if (u.kb0 == 0 && u.kb1 >= kIters_) return true;  // a whole tile
    float4* const part = reinterpret_cast<float4*>(sp_.partials);
    auto slot = [&](uint32_t b) { return part + (static_cast<size_t>(b) * 2 + cw) * (128 * R4); };
    // A part without the tile's first k-block is its block's first unit: it
    // writes the block's one partial.
    if (u.kb0 > 0) {
      writePartial<R4>(acc, slot(blockIdx.x), cw, &sp_.flags[blockIdx.x * 2 + cw]);
      return false;
    }
    // The tile's first k-block: the groups after this one up to the one
    // holding the tile's last k-block each hold a part of it as their first
    // unit. Recomputed here rather than kept from the set-up: a value live
    // through the main loop costs the KCut kernels spills.
    const uint64_t lastK = static_cast<uint64_t>(u.w.tile.x + 1) * static_cast<uint64_t>(kIters_) - 1;
    const uint64_t kbTotal = static_cast<uint64_t>(view_.shape.grid.x) * static_cast<uint64_t>(kIters_);
    const uint32_t lastGroup = kCutGroupOf(lastK, sp_.kCutGroups, kbTotal);
    for (uint32_t h = blockIdx.x / bands_ + 1; h <= lastGroup; ++h) {
      const uint32_t b = h * bands_ + u.w.tile.y;
      awaitPartials(&sp_.flags[b * 2 + cw], 1u, cw);
      addPartial<R4>(acc, slot(b));
    }
    return true;
  }

  __device__ __forceinline__ void afterStore(const UnitFinish&, int) {}

 private:
  // The unit at position x of this group's range.
  __device__ __forceinline__ Unit unitAt(uint32_t x) const {
    Unit u;
    u.w.run = 1;
    u.w.valid = x < end_;
    if (u.w.valid) {
      const uint32_t c = x / static_cast<uint32_t>(kIters_);
      u.kb0 = static_cast<int32_t>(x - c * static_cast<uint32_t>(kIters_));
      u.kb1 = u.kb0 + static_cast<int32_t>(min(static_cast<uint32_t>(kIters_ - u.kb0), end_ - x));
      u.w.tile = cusync::Dim3(c, blockIdx.x % bands_, 1);
      u.w.index = u.w.tile.y * view_.shape.grid.x + c;
      u.pos = u.w.index;
    }
    return u;
  }

  const View& view_;
  const ScheduleParams& sp_;
  int kIters_;
  uint32_t bands_;
  uint32_t pos_ = 0, end_ = 0;
  bool haveFirst_ = true;
  Unit first_;
};

}  // namespace cusync_gemm::detail
