// Host-only plan of a conv pair's synchronized variants: each layer's
// configuration for a stage, grid, tile, persistent blocks and flags, the
// Conv2DTileSync edge between them, and the stages built from it
// (ConvStages). The GPU library (chain.cu, chain_fused.cu) and the CPU
// emulator test (tests/conv_emu_test.cpp) build their stages with it, so
// the emulator checks the very plan and stages the GPU runs; tests/conv_spec_test.cpp
// checks the specs' stages (specs/resnet38.cusync, specs/vgg19.cusync)
// against it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "cusync/error.h"
#include "cusync/memory.h"
#include "cusync/optimizations.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"
#include "kernels/conv/chain.h"
#include "kernels/conv/conv.h"

namespace cusync_conv {

struct ConvStagePlan {
  Conv2dArgs args;            // shape, epilogue and resolved configuration (pointers unset)
  cusync::Dim3 grid, tile;    // stage grid (x over channel tiles, y over pixel tiles) and tile
  uint32_t blocks = 0;        // persistent blocks
  uint32_t ticketBlocks = 0;  // of those, the blocks that take tickets
  int opts = cusync::NoOptimization;
};

struct ConvPairPlan {
  ConvStagePlan first, second;
  cusync::policy::Conv2DTileSync edge;  // the second layer's filter over the first's output
};

// The arguments of one layer of a chain (pointers unset), checked.
inline Conv2dArgs layerArgs(int64_t N, int64_t H, int64_t W, const ConvLayer& l) {
  Conv2dArgs a;
  a.N = N, a.H = H, a.W = W, a.C = l.C, a.K = l.K;
  a.R = a.S = l.R;
  a.padH = a.padW = l.pad;
  a.strideH = a.strideW = l.stride;
  a.epilogue = l.epilogue;
  // Shape checks only: the pointers come with each run.
  alignas(16) static char probe[16] = {};
  Conv2dArgs c = a;
  c.x = c.w = c.y = probe;
  if (a.epilogue == ConvEpilogue::BiasResidualRelu) c.residual = probe;
  checkArgs(c);
  return a;
}

// Throws unless `second` reads the channels `first` writes.
inline void checkChained(const ConvLayer& first, const ConvLayer& second) {
  if (second.C != first.K)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv pair",
                        "the second layer reads " + std::to_string(second.C) + " channels where the first writes " +
                            std::to_string(first.K));
}

// One layer as a stage: its configuration, grid, tile, persistent and
// ticket blocks (the flags are a pair's). planConvPair plans each of its
// layers with it; a layer that no pair runs (ResNet's 1x1 shortcut) gets the
// plan it would have in one.
inline ConvStagePlan planConvStage(int64_t N, int64_t H, int64_t W, const ConvLayer& layer, int sms) {
  ConvStagePlan s;
  s.args = resolveLaunch(layerArgs(N, H, W, layer), sms, cusync_gemm::LaunchContext::Stage);
  const cusync_gemm::GemmArgs g = gemmOf(s.args);
  s.grid = cusync_gemm::stageGrid(g, g.config);
  s.tile = cusync_gemm::stageTile(g, g.config);
  s.blocks = cusync_gemm::persistentBlocks(g, g.config, sms);
  s.ticketBlocks = cusync_gemm::ticketBlocks(g, g.config, sms);
  return s;
}

inline ConvPairPlan planConvPair(int64_t N, int64_t H, int64_t W, const ConvLayer& first, const ConvLayer& second,
                                 int sms) {
  ConvPairPlan p;
  p.first = planConvStage(N, H, W, first, sms);
  checkChained(first, second);
  p.second = planConvStage(N, p.first.args.P(), p.first.args.Q(), second, sms);
  // The first layer waits for the kernel before the pair (as conv2d()
  // launches do), so a Pdl pipeline places its blocks during that kernel's
  // tail; the second loads its filter before it waits for its input.
  p.first.opts = cusync::WaitsForPriorGrid;
  p.second.opts = cusync::ReorderTileLoads;
  const Conv2dArgs& c = p.second.args;
  p.edge.R = static_cast<uint32_t>(c.R), p.edge.S = static_cast<uint32_t>(c.S);
  p.edge.C = static_cast<uint32_t>(c.C);
  p.edge.H = static_cast<uint32_t>(c.H), p.edge.W = static_cast<uint32_t>(c.W);
  p.edge.padH = static_cast<uint32_t>(c.padH), p.edge.padW = static_cast<uint32_t>(c.padW);
  p.edge.strideH = static_cast<uint32_t>(c.strideH), p.edge.strideW = static_cast<uint32_t>(c.strideW);
  p.edge.N = static_cast<uint32_t>(N);
  return p;
}

// A pair's two stages with policy P on the edge, in row-major tile order
// (the first layer finishes its pixel rows in order, the second reads them
// in that order), paired; a producer of single-writer semaphores posts by
// store, not atomic add.
template <class P, class Memory = cusync::DeviceMemory>
struct ConvStages {
  cusync::Stage<cusync::policy::NoSync, P, Memory> prod;
  cusync::Stage<P, cusync::policy::NoSync, Memory> cons;
  ConvStages(const ConvPairPlan& p, const P& edge)
      : prod("conv1", p.first.grid, p.first.tile, {}, edge,
             p.first.opts | (P::kSingleWriter ? cusync::NoAtomicAdd : 0)),
        cons("conv2", p.second.grid, p.second.tile, edge, {}, p.second.opts) {
    prod.setOrder(cusync::RowMajorOrder{});
    cons.setOrder(cusync::RowMajorOrder{});
    cusync::pair(prod, cons);
  }
};

// Configuration c in the form a fused pair's kernel runs: whole tiles or
// 64-row split tiles, the filter through the ring (a resident filter serves
// one layer's units only, so 128x64-resident becomes 128x64; a tail split
// becomes its whole tiles).
inline cusync_gemm::TileConfig fusedConvConfig(cusync_gemm::TileConfig c) {
  if (cusync_gemm::residentKBlocksOf(c) > 0) return cusync_gemm::TileConfig::T128x64;
  if (cusync_gemm::scheduleOf(c) == cusync_gemm::Schedule::TailSplit) return cusync_gemm::TileConfig::T128x256;
  return c;
}

// Why a fused pair's kernel does not run layers `first` and `second`, or
// empty where it does: it builds a first layer with bias + ReLU only, and it
// loads both layers' input through one A loader, the plain im2col walk, so
// neither may pack its filter taps (C = 8).
inline std::string fusedPairRefusal(const Conv2dArgs& first, const Conv2dArgs& second) {
  if (first.epilogue != ConvEpilogue::BiasRelu)
    return "a fused pair is built for a first layer with bias + ReLU, not " + std::string(toString(first.epilogue));
  if (packsFilterTaps(first) || packsFilterTaps(second))
    return "a layer with C = 8 input channels packs eight filter positions into each k-block, which a fused pair's "
           "shared im2col walk does not: run the pair unfused, or pad C to 16";
  return {};
}

// The fused variant's plan: the pair's plan with both layers on one
// configuration (of the two layers' own, in their fused form, the one the
// time model prices lower for both together), each layer's work units (its
// tiles, or their split parts) and the grid's blocks, as many as the units
// up to one per SM. Every stage's blocks and ticket blocks are the grid's.
struct ConvFusedPlan {
  ConvPairPlan pair;
  uint32_t units1 = 0, units2 = 0;
  uint32_t blocks = 0;
};

inline ConvFusedPlan planConvFused(int64_t N, int64_t H, int64_t W, const ConvLayer& first, const ConvLayer& second,
                                   int sms) {
  ConvFusedPlan f;
  f.pair = planConvPair(N, H, W, first, second, sms);
  if (const std::string why = fusedPairRefusal(f.pair.first.args, f.pair.second.args); !why.empty())
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv pair", why);
  cusync_gemm::TileConfig c = fusedConvConfig(f.pair.first.args.config);
  const cusync_gemm::TileConfig other = fusedConvConfig(f.pair.second.args.config);
  auto pairUs = [&](cusync_gemm::TileConfig t) {
    return convModelUs(f.pair.first.args, t, sms) + convModelUs(f.pair.second.args, t, sms);
  };
  if (other != c && pairUs(other) < pairUs(c)) c = other;
  uint32_t* units[] = {&f.units1, &f.units2};
  int i = 0;
  for (ConvStagePlan* s : {&f.pair.first, &f.pair.second}) {
    Conv2dArgs a = s->args;
    a.config = c;
    a.splitK = 0;  // the parts of c's tiles, not of the layer's own configuration
    s->args = resolveLaunch(a, sms, cusync_gemm::LaunchContext::Stage);
    const cusync_gemm::GemmArgs g = gemmOf(s->args);
    s->grid = cusync_gemm::stageGrid(g, c);
    s->tile = cusync_gemm::stageTile(g, c);
    *units[i++] = cusync_gemm::workUnits(g, c, sms);
  }
  f.blocks = std::min<uint32_t>(f.units1 + f.units2, static_cast<uint32_t>(std::max(sms, 1)));
  for (ConvStagePlan* s : {&f.pair.first, &f.pair.second}) s->blocks = s->ticketBlocks = f.blocks;
  // One kernel, a programmatic dependent of the kernel before the pair (the
  // previous layer or run), as a Pdl pair's first layer is: its blocks are
  // placed and set up during that kernel's tail.
  f.pair.first.opts = cusync::WaitsForPriorGrid;
  return f;
}

}  // namespace cusync_conv
