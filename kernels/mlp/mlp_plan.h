// Host-only plan of the MLP pipelines: model dimensions, and for each synced
// variant the two GEMM stages' configurations (the GEMM's own choice for a
// stage), grids, tiles, persistent block counts, tile orders and flags. The GPU library (mlp.cu) and the CPU emulator test
// (tests/mlp_emu_test.cpp) build their stages from the same plan, so the
// emulator checks the very configuration the GPU runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "cusync/optimizations.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp.h"
#include "kernels/mlp/whole_sync.h"

namespace cusync_mlp {

struct GemmPlan {
  cusync_gemm::GemmArgs args;  // shapes, epilogue and resolved config (pointers unset)
  cusync::Dim3 grid;           // stage grid (x over output column tiles, y over row tiles)
  cusync::Dim3 tile;           // stage tile {output columns, rows, BK}
  uint32_t blocks = 0;         // persistent blocks (cusync_gemm::persistentBlocks)
  uint32_t ticketBlocks = 0;   // of those, the blocks that take tickets (one per cluster pair)
  uint32_t units = 0;          // work units (tiles, or tile parts where the configuration splits K)
  Order order = Order::Grouped;
  int opts = cusync::NoOptimization;
};

struct PairPlan {
  GemmPlan g1, g2;
};

// The tile order a variant uses when the caller asks for Order::Auto: the
// GEMM's own grouped order (bands of 8 row tiles walked by column), which
// keeps the weights in L2. Row-major (Order::RowMajor) finishes whole
// producer rows in the first waves, which a RowSync consumer could start on,
// but re-streams the weights per row: on the H100 (2026-11-27, timed
// interleaved) `rowsync` ran 1-30% slower row-major than grouped at 28 of the
// 32 MLP points (GPT-3 and LLaMA, M = 64-4096, launches and graphs), tied
// at 3 and won at one (LLaMA M = 2048 as graphs).
inline Order resolveOrder(Variant, Order o) { return o != Order::Auto ? o : Order::Grouped; }

inline PairPlan planPair(Model model, int64_t M, Variant v, Order order, int sms) {
  const Dims d = dims(model);
  PairPlan p;
  const Order o = resolveOrder(v, order);
  cusync_gemm::GemmArgs& a1 = p.g1.args;
  a1.M = M;
  a1.N = d.N1;
  a1.K = d.K1;
  a1.epilogue = model == Model::GPT3 ? cusync_gemm::Epilogue::Gelu : cusync_gemm::Epilogue::SwiGLU;
  cusync_gemm::GemmArgs& a2 = p.g2.args;
  a2.M = M;
  a2.N = d.N2;
  a2.K = d.K2;
  a2.epilogue = cusync_gemm::Epilogue::Identity;
  // The GEMM's own choice for a stage, as every launch of it makes it.
  for (GemmPlan* g : {&p.g1, &p.g2}) {
    g->args.config = cusync_gemm::resolveConfig(g->args, sms, cusync_gemm::LaunchContext::Stage);
    g->grid = cusync_gemm::stageGrid(g->args, g->args.config);
    g->tile = cusync_gemm::stageTile(g->args, g->args.config);
    g->blocks = cusync_gemm::persistentBlocks(g->args, g->args.config, sms);
    g->ticketBlocks = cusync_gemm::ticketBlocks(g->args, g->args.config, sms);
    g->units = cusync_gemm::workUnits(g->args, g->args.config, sms);
    g->order = o;
  }
  // TileSync: one writer per semaphore, so the post is a plain store.
  if (v == Variant::TileSync) p.g1.opts |= cusync::NoAtomicAdd;
  // ReorderTileLoads: GEMM2 loads B (weights) before waiting for A; waiting
  // first measured slower on the H100.
  p.g2.opts |= cusync::ReorderTileLoads;
  // GEMM1 waits for the kernel before the block (gemm() launches do the
  // same), so a Pdl pipeline places its blocks during that kernel's tail.
  p.g1.opts |= cusync::WaitsForPriorGrid;
  return p;
}

// The fused variant: both GEMMs in one persistent kernel, each stage of the
// configuration resolveFusedConfigs picks for it (the stage's own choice in
// its whole-tile form where the kernel runs that pair of widths), RowSync
// between them, grouped orders; its grid runs min(SMs, all units) blocks.
inline PairPlan planFused(Model model, int64_t M, int sms) {
  PairPlan p = planPair(model, M, Variant::RowSync, Order::Grouped, sms);
  p.g1.args.config = p.g2.args.config = cusync_gemm::TileConfig::Auto;
  const cusync_gemm::FusedConfigs c = cusync_gemm::resolveFusedConfigs(p.g1.args, p.g2.args, sms);
  p.g1.args.config = c.first;
  p.g2.args.config = c.second;
  for (GemmPlan* g : {&p.g1, &p.g2}) {
    g->grid = cusync_gemm::stageGrid(g->args, g->args.config);
    g->tile = cusync_gemm::stageTile(g->args, g->args.config);
    g->units = cusync_gemm::workUnits(g->args, g->args.config, sms);
  }
  const uint32_t blocks = std::min<uint32_t>(p.g1.units + p.g2.units, static_cast<uint32_t>(sms));
  p.g1.blocks = p.g2.blocks = p.g1.ticketBlocks = p.g2.ticketBlocks = blocks;
  return p;
}

template <class StageT>
void applyOrder(StageT& s, Order o) {
  if (o == Order::RowMajor)
    s.setOrder(cusync::RowMajorOrder{});
  else
    s.setOrder(cusync::GroupedOrder{8});
}

// The stage pair of a synced variant, with policy P on the edge.
template <class P, class Memory = cusync::DeviceMemory>
struct StagePair {
  cusync::Stage<cusync::policy::NoSync, P, Memory> prod;
  cusync::Stage<P, cusync::policy::NoSync, Memory> cons;
  PairPlan plan;
  explicit StagePair(const PairPlan& pl)
      : prod("mlp-gemm1", pl.g1.grid, pl.g1.tile, {}, P{}, pl.g1.opts),
        cons("mlp-gemm2", pl.g2.grid, pl.g2.tile, P{}, {}, pl.g2.opts),
        plan(pl) {
    applyOrder(prod, pl.g1.order);
    applyOrder(cons, pl.g2.order);
    cusync::pair(prod, cons);
  }
  // The two GEMMs' arguments on the buffers of one run.
  cusync_gemm::GemmArgs gemm1Args(const Buffers& b) const {
    cusync_gemm::GemmArgs a = plan.g1.args;
    a.A = b.X, a.B = b.W1, a.C = b.H, a.trace = b.trace1;
    return a;
  }
  cusync_gemm::GemmArgs gemm2Args(const Buffers& b) const {
    cusync_gemm::GemmArgs a = plan.g2.args;
    a.A = b.H, a.B = b.W2, a.C = b.Y, a.trace = b.trace2;
    return a;
  }
};

}  // namespace cusync_mlp
