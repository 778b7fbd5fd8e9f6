// A fused two-stage kernel's grid on the CPU emulator, taking its work as
// the GEMM kernel's fused scheduler does (kernels/gemm/schedule/fused_units.cuh):
// every block takes units from the schedule's counter until its closing
// ticket, each unit decoded into a tile and a part of it (whole tiles, then
// the parts of split tiles); a first-stage part that finishes its tile posts
// it, a second-stage part waits at every k-block of its range. The MLP's and
// the conv pair's emulator tests run their fused plans through it.
#pragma once

#include <cstdint>

#include "cusync/emu/device.h"
#include "cusync/emu/emulator.h"
#include "cusync/emu/fused.h"
#include "cusync/fused.h"
#include "cusync/memory.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/schedule/split_units.h"

namespace cusync_testing {

// How a stage's units map to tiles and parts: the GEMM's split plan.
struct FusedStageUnits {
  uint32_t unsplit = 0, splits = 1, units = 0, kIters = 0;
};

inline FusedStageUnits fusedStageUnits(const cusync_gemm::GemmArgs& g, int sms, uint32_t units) {
  return {cusync_gemm::unsplitTiles(g, g.config, sms), cusync_gemm::splitCount(g, g.config, sms), units,
          static_cast<uint32_t>((g.K + 63) / 64)};
}

// One launch of `blocks` blocks on `stream`; waitAt(w, kb, kb0) waits, for
// second-stage tile work w, at k-block kb of a part that starts at kb0.
template <class V1, class V2, class WaitAt>
void launchFusedPair(cusync::emu::Emulator& emu, uint32_t stream,
                     const cusync::FusedSchedule<cusync::HostMemory>& sched, uint32_t blocks, const V1& v1,
                     const V2& v2, const FusedStageUnits& s1, const FusedStageUnits& s2, WaitAt waitAt) {
  cusync::emu::launchFused(emu, stream, sched, blocks, [=](const cusync::FusedUnit& u, cusync::emu::Block&) {
    const FusedStageUnits& sp = u.stage == 0 ? s1 : s2;
    const cusync_gemm::detail::SplitUnit part =
        cusync_gemm::detail::splitUnitAt(u.unit, sp.unsplit, sp.splits, sp.units);
    cusync::FusedUnit tile = u;
    tile.unit = part.pos;
    if (u.stage == 0) {
      if (part.split + 1 == part.parts) cusync::emu::post(v1, cusync::fusedTileWork(v1, tile));
      return;
    }
    const cusync::TileWork w = cusync::fusedTileWork(v2, tile);
    int32_t kb0 = 0, kb1 = 0;
    cusync_gemm::detail::splitKBlocks(part.split, part.parts, sp.kIters, kb0, kb1);
    for (int32_t kb = kb0; kb < kb1; ++kb) waitAt(w, kb, kb0);
  });
}

}  // namespace cusync_testing
