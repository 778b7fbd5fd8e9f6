// A GEMM stage's blocks on the emulator, taking their work as the Hopper
// GEMM kernel does in a pipeline (kernels/gemm/schedule, gemm_staged.cuh):
//
//   static tiles  WholeTiles and ClusterPair with KernelFlags::staticRuns (a
//                 stage without inputs under Pdl or Serial): taker b of G
//                 computes tiles b, b + G, ... of the stage order and adds its
//                 tile count plus one to the stage's tickets for its run
//   tickets       the other WholeTiles and ClusterPair stages: a ticket per
//                 tile until the block's closing ticket
//   split units   SplitK and TailSplit: every block takes a stage ticket for
//                 its run, then units from a counter (whole tiles, then the
//                 parts of the split tiles in phases); the part that finishes
//                 a tile takes one more stage ticket and posts it
//
// Only the blocks that take tickets run (ticketBlocks): a cluster pair's
// second block waits for nothing its first does not. A split tile's
// finisher waits for its sibling parts' partials outside cusync; that wait
// is left out (siblings come earlier in the unit order, so it never holds
// up a block that a cusync wait needs).
#pragma once

#include <cuda/atomic>

#include <atomic>
#include <cstdint>

#include "cusync/emu/device.h"
#include "cusync/launch_mode.h"
#include "cusync/protocol.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/schedule/split_units.h"
#include "kernels/gemm/schedule/static_tiles.h"

namespace cusync_attn::emulated {

struct GemmWork {
  uint32_t blocks = 0;  // blocks that take tickets
  bool staticTiles = false;
  bool splitUnits = false;
  uint32_t splits = 1, unsplit = 0, units = 0;  // split units: parts per split tile, whole tiles, all units
  int32_t kIters = 0;                           // 64-column k-blocks
};

// How a launch of `a` (configuration resolved) as a stage of `numTiles`
// tiles under `mode` hands out its work on `sms` SMs.
inline GemmWork gemmWork(const cusync_gemm::GemmArgs& a, uint32_t numTiles, int sms, cusync::LaunchMode mode,
                         bool consumer) {
  using namespace cusync_gemm;
  GemmWork g;
  g.blocks = ticketBlocks(a, a.config, sms);
  const Schedule s = scheduleOf(a.config);
  g.splitUnits = s == Schedule::SplitK || s == Schedule::TailSplit;
  g.staticTiles =
      !g.splitUnits && (mode == cusync::LaunchMode::Serial || (mode == cusync::LaunchMode::Pdl && !consumer));
  g.kIters = static_cast<int32_t>((a.K + 63) / 64);
  if (g.splitUnits) {
    g.splits = splitCount(a, a.config, sms);
    g.unsplit = g.splits > 1 ? unsplitTiles(a, a.config, sms) : numTiles;
    g.units = g.unsplit + (numTiles - g.unsplit) * g.splits;
  }
  return g;
}

// One block of a GEMM stage: read(w, kb0, kb1) runs the waits of a unit's
// k-blocks [kb0, kb1), store(w) stores a finished tile and returns whether
// to post it. `units` is the run's unit counter (split units only).
template <class View, class ReadFn, class StoreFn>
void gemmBlock(const View& v, cusync::emu::Block& b, const GemmWork& g, std::atomic<uint32_t>& units, ReadFn&& read,
               StoreFn&& store) {
  using cusync::TileWork;
  using cusync::emu::HostBackend;
  auto tileAt = [&](uint32_t index, uint32_t run) {
    TileWork w;
    w.index = index;
    w.run = run;
    w.valid = true;
    w.tile = cusync::protocol::persistentTile(v, index);
    return w;
  };
  if (g.staticTiles) {
    HostBackend::triggerDependents();
    const uint32_t n = cusync_gemm::detail::staticTileCount(b.linear, g.blocks, v.numTiles);
    const unsigned long long before =
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>(*v.tickets).fetch_add(n + 1);
    const uint32_t run = cusync_gemm::detail::staticRunOf(before, v.ticketsPerRun);
    if (b.linear == 0 && v.started != nullptr) HostBackend::storeRelease(v.started, run);
    for (uint32_t i = 0; i < n; ++i) {
      const TileWork w = tileAt(b.linear + i * g.blocks, run);
      read(w, 0, g.kIters);
      if (store(w)) cusync::emu::post(v, w);
    }
    return;
  }
  if (!g.splitUnits) {
    for (;;) {
      const TileWork w = cusync::emu::tile(v, b);
      if (!w.valid) return;
      read(w, 0, g.kIters);
      if (store(w)) cusync::emu::post(v, w);
    }
  }
  uint32_t t = units.fetch_add(1);
  const uint32_t run = cusync::emu::tile(v, b).run;
  for (; t < g.units; t = units.fetch_add(1)) {
    const cusync_gemm::detail::SplitUnit u = cusync_gemm::detail::splitUnitAt(t, g.unsplit, g.splits, g.units);
    int32_t kb0 = 0, kb1 = 0;
    cusync_gemm::detail::splitKBlocks(u.split, u.parts, static_cast<uint32_t>(g.kIters), kb0, kb1);
    const TileWork w = tileAt(u.pos, run);
    read(w, kb0, kb1);
    if (u.split + 1 < u.parts) continue;  // an earlier part hands its partial to the finisher
    const bool posts = store(w);
    (void)cusync::emu::tile(v, b);  // the finisher's stage ticket
    if (posts) cusync::emu::post(v, w);
  }
}

}  // namespace cusync_attn::emulated
