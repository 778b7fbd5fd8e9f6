// SlotCursor: a position in the GEMM kernel's ring of k-block slots, the
// loader's or the consumers', for one ring layout or two (a fused kernel
// whose stages have their own slot size and count). Host-callable, so that
// the CPU tests can walk it against a model of the barriers.
#pragma once

#include <cstdint>

#include "cusync/config.h"

namespace cusync_gemm::detail {

// Slot `slot` of pass parity `phase`. Storage names the layouts
// (SharedStorage, kernel/shared_storage.cuh: kTwoLayouts, Layout0 and
// Layout1 with kSlots and kSlotBytes, kStages, kStageBytes). Where the
// stages lay the ring out differently (kTwoLayouts: a fused kernel of
// StageShapes), the ring starts in the first stage's layout and changes to
// the second's once, at a block's first unit of the second stage: the
// loader puts a layout-switch record (kLayoutSwitch) in the current slot,
// both sides then continue from slot 0 of the new layout, and `flip` keeps
// for each slot the parity its uses carried over, since the passes of the
// two layouts do not line up. With one layout this is the plain ring.
template <class Storage>
struct SlotCursor {
  static constexpr bool kSwitches = Storage::kTwoLayouts;
  int slot = 0;
  uint32_t phase = 0;
  uint32_t flip = 0;  // with kSwitches: per slot, the parity carried over from the first layout
  int layout = 0;     // with kSwitches: the stage whose layout the ring has

  CUSYNC_HD int slots() const {
    if constexpr (kSwitches) return layout == 0 ? Storage::Layout0::kSlots : Storage::Layout1::kSlots;
    else return Storage::kStages;
  }
  // The current layout's slot size.
  CUSYNC_HD int slotBytes() const {
    if constexpr (kSwitches) return layout == 0 ? Storage::Layout0::kSlotBytes : Storage::Layout1::kSlotBytes;
    else return Storage::kStageBytes;
  }
  // The parity of the current slot's next full phase (the consumers wait
  // for it); the loader waits for the one of its empty barrier.
  CUSYNC_HD uint32_t fullParity() const {
    if constexpr (kSwitches) return phase ^ ((flip >> slot) & 1u);
    else return phase;
  }
  CUSYNC_HD uint32_t emptyParity() const { return fullParity() ^ 1u; }
  CUSYNC_HD void advance() {
    if (++slot == slots()) slot = 0, phase ^= 1;
  }
  // After the layout-switch record in the current slot (placed by the
  // loader, or taken by a consumer): the ring continues in stage
  // `newLayout`'s layout from slot 0. Slot j's next use in the old layout
  // would have had parity phase ^ flip_j, one more for the slots already
  // used in this pass, the switch record's included.
  CUSYNC_HD void switchTo(int newLayout) {
    uint32_t f = 0;
    const int n = slots();
    for (int j = 0; j < n; ++j) f |= ((phase ^ ((flip >> j) & 1u) ^ (j <= slot ? 1u : 0u)) & 1u) << j;
    flip = f;
    slot = 0;
    phase = 0;
    layout = newLayout;
  }
  // The parity of slot j's next empty phase in the current pass-0 layout
  // (the loader's wait, after a switch, for the old layout's slots).
  CUSYNC_HD uint32_t emptyParityOf(int j) const { return ((flip >> j) & 1u) ^ 1u; }
};

}  // namespace cusync_gemm::detail
