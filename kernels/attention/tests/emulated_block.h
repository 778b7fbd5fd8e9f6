// The attention block's RowSync pipeline (block.cu) on the CPU emulator:
// its three stages with the plan's grids and tiles, policies and tile
// orders (block_stages.h, on host memory), launched as the GPU launches
// them, with tile programs that take work, wait and post the way the
// kernels do.
//
//   qkv        the GEMM's blocks (emulated_gemm.h); RowSync out
//   attention  one block per work item (tile position p = block / splits in
//              the stage order, split s = block % splits), a persistent
//              launch: each block takes one ticket for its run, and the
//              block that stores a tile one more before it posts. An item
//              issues its split's key blocks wholly in the cache first (at
//              most a ring of them, no wait), then waits once for every QKV
//              row it reads (from its first new key, or its queries, to its
//              last query row) and loads Q, then the remaining key blocks
//              (keyBlocksBeforeQ, attention_kernel.cuh). With several splits
//              the last one to count itself in stores. RowSync out.
//   wo         the GEMM's blocks; RowSync in, over 64-column k-blocks
//
// Data is replaced by run stamps (run_stamps.h): every load checks, after
// its waits, that the tiles it reads were stored in its run. A producer
// tile takes kTileWork of host time before it stores, as a kernel's tile
// takes GPU time, so that consumers start while their producers still run
// and a read that does not wait long enough meets an old stamp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "cusync/emu/device.h"
#include "cusync/emu/pipeline.h"
#include "cusync/memory.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "kernels/attention/block_plan.h"
#include "kernels/attention/block_stages.h"
#include "kernels/attention/tests/emulated_gemm.h"
#include "kernels/attention/tests/run_stamps.h"

namespace cusync_attn::emulated {

constexpr std::chrono::microseconds kTileWork{80};

using QkvStage = detail::QkvStageOn<cusync::HostMemory>;
using AttnStage = detail::AttnStageOn<cusync::HostMemory>;
using WoStage = detail::WoStageOn<cusync::HostMemory>;

// Deliberate bugs, which the emulator must report rather than hang on.
struct Plant {
  bool dropQkvTile = false;  // the QKV projection never stores or posts droppedTile
  cusync::Dim3 droppedTile;
  bool finisherSkipsTicket = false;  // the block that stores an attention tile takes no ticket
};

// One attention block (see the top of this file).
template <class View>
void attentionBlock(const View& v, cusync::emu::Block& b, const BlockPlan& plan, std::atomic<uint32_t>* arrived,
                    const Stamps& qkv, Stamps& out, const Plant& plant) {
  using cusync::emu::HostBackend;
  const AttentionArgs& a = plan.attention;
  const AttentionPlan& p = plan.attentionPlan;
  const int64_t R = p.rowsPerTile, W = int64_t(a.heads) * kHeadDim;
  const uint32_t run = cusync::emu::tile(v, b).run;
  const uint32_t position = b.linear / static_cast<uint32_t>(p.splits);
  const int64_t split = b.linear % static_cast<uint32_t>(p.splits);
  cusync::TileWork work;
  work.tile = cusync::protocol::persistentTile(v, position);
  work.run = run;
  work.valid = true;
  const uint32_t column = work.tile.x * kHeadDim;
  const int64_t q0 = work.tile.y * R;
  const int64_t blocks = (keysOfQueryBlock(a.L, a.M, p.rowsPerTile, work.tile.y) + kKeyBlock - 1) / kKeyBlock;
  const int64_t kb0 = split * blocks / p.splits, kb1 = (split + 1) * blocks / p.splits;
  const std::string who = "attention tile " + cusync::tileName(work.tile) + " split " + std::to_string(split);

  // Waits once for the QKV row tiles holding every row it reads.
  const int64_t prodRows = v.in[0].prod.tile.y;
  auto waitRows = [&](int64_t r0, int64_t r1) {
    for (int64_t t = r0 / prodRows; r1 > r0 && t <= (r1 - 1) / prodRows; ++t) {
      const cusync::Read rd{column, static_cast<uint32_t>(t * prodRows), 0, column};
      cusync::protocol::awaitSpan<HostBackend>(v, work, cusync::protocol::waitSpanOf(v, rd), 0,
                                               cusync::Reader::Generic);
    }
  };
  auto loadQ = [&]() {
    const int64_t r1 = std::min(q0 + R, a.M);
    const int64_t firstNew = std::max<int64_t>(kb0 * kKeyBlock - a.L, 0);
    const bool readsNewKeys = kb1 * kKeyBlock > a.L;
    waitRows(readsNewKeys ? std::min(firstNew, q0) : q0, r1);
    qkv.expectStored(q0, r1, column, column + kHeadDim, run, who + " loading Q");
  };
  const int64_t qAt = keyBlocksBeforeQ(!cusync::policy::isNoSync<typename View::In>, a.L, kb0, kb1, p.ringSlots);
  const int64_t n = kb1 - kb0;
  for (int64_t i = 0; i < n; ++i) {
    if (i == qAt) loadQ();
    const int64_t key0 = (kb0 + i) * kKeyBlock;
    if (key0 + kKeyBlock <= a.L) continue;  // cached keys: written before this step
    const int64_t r0 = std::max(key0, a.L) - a.L, r1 = std::min(key0 + kKeyBlock, a.L + a.M) - a.L;
    const std::string keys = " loading keys " + std::to_string(key0) + "..";
    qkv.expectStored(r0, r1, W + column, W + column + kHeadDim, run, who + keys);
    qkv.expectStored(r0, r1, 2 * W + column, 2 * W + column + kHeadDim, run, who + keys + " (values)");
  }
  if (n > 0 && qAt == n) loadQ();

  if (p.splits > 1) {  // count in; the last split of the tile combines and stores
    const uint32_t before = arrived[position].fetch_add(1, std::memory_order_acq_rel);
    if (before + 1 != static_cast<uint32_t>(p.splits)) return;
    arrived[position].store(0, std::memory_order_relaxed);
  }
  std::this_thread::sleep_for(kTileWork);
  out.store(work.tile, run);
  if (!plant.finisherSkipsTicket) HostBackend::takeTicket(v.tickets);
  cusync::protocol::postElected<HostBackend>(v, work);
}

// The block's stages, built as block.cu builds them, and runs of them.
class BlockEmulation {
  BlockPlan plan_;
  int sms_;
  Plant plant_;

 public:
  BlockEmulation(const BlockPlan& plan, int sms, Plant plant = {})
      : plan_(plan),
        sms_(sms),
        plant_(plant),
        qkv("qkv", plan.qkvGrid, plan.qkvTile, {}, {}),
        attention("attention", plan.attentionPlan.stageGrid, plan.attentionPlan.stageTile, {}, {}),
        wo("wo", plan.woGrid, plan.woTile, {}, {}),
        qkvStamps(plan.qkvGrid, plan.qkvTile),
        attentionStamps(plan.attentionPlan.stageGrid, plan.attentionPlan.stageTile),
        arrived_(new std::atomic<uint32_t>[plan.attentionPlan.tiles]()) {
    detail::orderAndPair(qkv, attention, wo, plan_);
  }

  // Blocks of one run of each stage.
  uint32_t qkvBlocks() const { return cusync_gemm::ticketBlocks(plan_.qkv, plan_.qkv.config, sms_); }
  uint32_t attentionBlocks() const {
    return plan_.attentionPlan.tiles * static_cast<uint32_t>(plan_.attentionPlan.splits);
  }
  uint32_t woBlocks() const { return cusync_gemm::ticketBlocks(plan_.wo, plan_.wo.config, sms_); }

  // Launches one run of the three stages at positions 0, 1, 2 of `pipe`.
  void launch(cusync::emu::Pipeline& pipe, cusync::LaunchMode mode) {
    using cusync::TileWork;
    const GemmWork gq = gemmWork(plan_.qkv, qkv.numTiles(), sms_, mode, false);
    auto qkvUnits = std::make_shared<std::atomic<uint32_t>>(0);
    pipe.launch(
        qkv,
        [this, gq, qkvUnits](const QkvStage::View& v, cusync::emu::Block& b) {
          gemmBlock(
              v, b, gq, *qkvUnits, [](const TileWork&, int32_t, int32_t) {},
              [this](const TileWork& w) {
                if (plant_.dropQkvTile && w.tile == plant_.droppedTile) return false;
                std::this_thread::sleep_for(kTileWork);
                qkvStamps.store(w.tile, w.run);
                return true;
              });
        },
        cusync::Dim3(qkvBlocks()), true);

    pipe.launch(
        attention,
        [this](const AttnStage::View& v, cusync::emu::Block& b) {
          attentionBlock(v, b, plan_, arrived_.get(), qkvStamps, attentionStamps, plant_);
        },
        cusync::Dim3(attentionBlocks()), true);

    const GemmWork gw = gemmWork(plan_.wo, wo.numTiles(), sms_, mode, true);
    auto woUnits = std::make_shared<std::atomic<uint32_t>>(0);
    const int64_t M = plan_.wo.M;
    const uint32_t bm = plan_.woTile.y, bk = plan_.woTile.z;
    pipe.launch(
        wo,
        [this, gw, woUnits, M, bm, bk](const WoStage::View& v, cusync::emu::Block& b) {
          gemmBlock(
              v, b, gw, *woUnits,
              [&](const TileWork& w, int32_t kb0, int32_t kb1) {
                const int64_t r0 = int64_t(w.tile.y) * bm, r1 = std::min<int64_t>(r0 + bm, M);
                for (int32_t kb = kb0; kb < kb1; ++kb) {
                  const uint32_t col = static_cast<uint32_t>(kb) * bk;
                  cusync::emu::wait(v, w, cusync::Read{col, static_cast<uint32_t>(r0), 0, uint32_t(kb0) * bk});
                  const std::string who = "wo tile " + cusync::tileName(w.tile) + " k-block " + std::to_string(kb);
                  attentionStamps.expectStored(r0, r1, col, col + bk, w.run, who);
                }
              },
              [](const TileWork&) { return true; });
        },
        cusync::Dim3(woBlocks()), true);
  }

  QkvStage qkv;
  AttnStage attention;
  WoStage wo;
  Stamps qkvStamps, attentionStamps;

 private:
  std::unique_ptr<std::atomic<uint32_t>[]> arrived_;  // splits of each tile counted in this run
};

}  // namespace cusync_attn::emulated
