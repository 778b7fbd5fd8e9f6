// CPU emulator runs of the conv pairs' synchronized plans, exactly as
// chain.cu builds them (planConvPair: each layer's configuration, grid,
// tile, ticket blocks, flags and the Conv2DTileSync edge; ConvStages: the
// stages, their orders and pairing) for every pair of
// the benchmark's models and every batch of its sweep (1, 4, 8, 16, 32), on
// 132, 114 and 78 SM slots and a random count. Tile programs dispense, wait
// at every k-block of the second layer (with the reduction column the im2col
// loader reports) and post, so this shows the plans deadlock-free and every
// wait satisfied.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "cusync/emu/device.h"
#include "cusync/emu/emulator.h"
#include "cusync/emu/emulator_impl.h"
#include "cusync/emu/pipeline.h"
#include "cusync/fused.h"
#include "cusync/memory.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"
#include "kernels/conv/chain_plan.h"
#include "kernels/conv/model_pairs.h"
#include "kernels/testing/emulated_fused_pair.h"

using namespace cusync;
using namespace cusync_conv;
using namespace std::chrono_literals;

namespace {

template <class P>
void runPlan(const ConvPairPlan& plan, const P& edge, int sms, LaunchMode mode, uint32_t runs = 2) {
  ConvStages<P, HostMemory> st(plan, edge);
  auto& prod = st.prod;
  auto& cons = st.cons;
  emu::Emulator emu({static_cast<uint32_t>(sms), 1});
  emu::Pipeline pipe(emu, mode);
  const Conv2dArgs& c = plan.second.args;
  const int64_t cBlocks = (c.C + 63) / 64, kBlocks = c.R * c.S * cBlocks;
  const uint32_t bm = plan.second.tile.y;
  for (uint32_t r = 0; r < runs; ++r) {
    pipe.launch(
        prod,
        [](const auto& view, emu::Block& b) {
          for (;;) {
            const TileWork w = emu::tile(view, b);
            if (!w.valid) break;
            emu::post(view, w);
          }
        },
        Dim3(plan.first.ticketBlocks), true);
    pipe.launch(
        cons,
        [=](const auto& view, emu::Block& b) {
          for (;;) {
            const TileWork w = emu::tile(view, b);
            if (!w.valid) break;
            for (int64_t kb = 0; kb < kBlocks; ++kb) {
              const int64_t rs = kb / cBlocks;  // Im2colA::kColumn
              const uint32_t col = static_cast<uint32_t>(rs * c.C + (kb - rs * cBlocks) * 64);
              emu::wait(view, w, Read{col, w.tile.y * bm, 0, 0});
            }
          }
        },
        Dim3(plan.second.ticketBlocks), true);
    pipe.finish();
  }
  const emu::Report rep = emu.run(60s);
  ASSERT_TRUE(rep.ok) << rep.message;
  // Streams mode adds one wait-kernel block per run in front of the second layer.
  const uint64_t gates = mode == LaunchMode::Streams ? runs : 0;
  EXPECT_EQ(rep.blocksRun, uint64_t(runs) * (plan.first.ticketBlocks + plan.second.ticketBlocks) + gates);
}

// The fused variant's plan (planConvFused): one persistent grid takes the
// first layer's units, then the second's, from the schedule's counter, each
// decoded as the kernel decodes it (split parts included); the first layer's
// finishing parts post, the second's parts wait at every k-block of their
// range.
void runFusedPlan(const ConvFusedPlan& f, int sms, uint32_t runs = 2) {
  const ConvPairPlan& plan = f.pair;
  ConvStages<policy::Conv2DTileSync, HostMemory> st(plan, plan.edge);
  FusedSchedule<HostMemory> sched("conv-fused", {f.units1, f.units2}, st.prod, st.cons);
  const auto v1 = st.prod.view();
  const auto v2 = st.cons.view();
  const cusync_testing::FusedStageUnits s1 = cusync_testing::fusedStageUnits(gemmOf(plan.first.args), sms, f.units1);
  const cusync_testing::FusedStageUnits s2 = cusync_testing::fusedStageUnits(gemmOf(plan.second.args), sms, f.units2);
  const Conv2dArgs& c = plan.second.args;
  const int64_t cBlocks = (c.C + 63) / 64;
  auto column = [cBlocks, C = c.C](int64_t kb) {  // Im2colA::kColumn
    const int64_t rs = kb / cBlocks;
    return static_cast<uint32_t>(rs * C + (kb - rs * cBlocks) * 64);
  };
  const uint32_t bm = plan.second.tile.y;
  emu::Emulator emu({static_cast<uint32_t>(sms), 1});
  const uint32_t stream = emu.createStream();
  for (uint32_t r = 0; r < runs; ++r)
    cusync_testing::launchFusedPair(emu, stream, sched, f.blocks, v1, v2, s1, s2,
                                    [v2, column, bm](const TileWork& w, int32_t kb, int32_t kb0) {
                                      emu::wait(v2, w, Read{column(kb), w.tile.y * bm, 0, column(kb0)});
                                    });
  const emu::Report rep = emu.run(60s);
  ASSERT_TRUE(rep.ok) << rep.message;
  EXPECT_EQ(rep.blocksRun, uint64_t(runs) * f.blocks);
}

void everyPair(const std::vector<ModelPair>& pairs, int sms) {
  for (const ModelPair& mp : pairs)
    for (int64_t batch : {1, 4, 8, 16, 32}) {  // the benchmark's sweep
      const ConvPairPlan plan = planConvPair(batch, mp.H, mp.H, mp.first, mp.second, sms);
      SCOPED_TRACE(mp.name + " batch " + std::to_string(batch) + " on " + std::to_string(sms) + " SMs: " +
                   cusync_gemm::toString(plan.first.args.config) + " " + std::to_string(plan.first.grid.x) + "x" +
                   std::to_string(plan.first.grid.y) + " -> " + cusync_gemm::toString(plan.second.args.config) + " " +
                   std::to_string(plan.second.grid.x) + "x" + std::to_string(plan.second.grid.y));
      runPlan(plan, plan.edge, sms, LaunchMode::Pdl);
      runPlan(plan, policy::WholeSync{}, sms, LaunchMode::Pdl, 1);
      if (mp.first.C != 8) {  // a packed first layer runs unfused
        const ConvFusedPlan f = planConvFused(batch, mp.H, mp.H, mp.first, mp.second, sms);
        SCOPED_TRACE("fused on " + std::string(cusync_gemm::toString(f.pair.first.args.config)) + ", units " +
                     std::to_string(f.units1) + " + " + std::to_string(f.units2) + ", blocks " + std::to_string(f.blocks));
        runFusedPlan(f, sms);
      }
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(ConvPairEmulator, ResnetAt132Sms) { everyPair(resnetPairs(), 132); }
TEST(ConvPairEmulator, VggAt132Sms) { everyPair(vggPairs(), 132); }
TEST(ConvPairEmulator, ResnetAt114And78Sms) {
  everyPair(resnetPairs(), 114);
  everyPair(resnetPairs(), 78);
}
TEST(ConvPairEmulator, VggAt114And78Sms) {
  everyPair(vggPairs(), 114);
  everyPair(vggPairs(), 78);
}
TEST(ConvPairEmulator, RandomSmCount) {
  std::mt19937 g(std::random_device{}());
  const int sms = std::uniform_int_distribution<int>(8, 160)(g);
  SCOPED_TRACE("SMs " + std::to_string(sms));
  everyPair(resnetPairs(), sms);
}

TEST(ConvPairEmulator, StreamsMode) {
  const ModelPair mp = resnetPairs()[0];
  const ConvPairPlan plan = planConvPair(4, mp.H, mp.H, mp.first, mp.second, 132);
  runPlan(plan, plan.edge, 132, LaunchMode::Streams);
}

TEST(ConvFusedPlan, BothLayersRunOneFusableConfiguration) {
  for (const ModelPair& mp : resnetPairs())
    for (int64_t batch : {1, 8, 32}) {
      const ConvPairPlan p = planConvPair(batch, mp.H, mp.H, mp.first, mp.second, 132);
      const ConvFusedPlan f = planConvFused(batch, mp.H, mp.H, mp.first, mp.second, 132);
      SCOPED_TRACE(mp.name + " batch " + std::to_string(batch));
      EXPECT_EQ(f.pair.first.args.config, f.pair.second.args.config);
      // One of the layers' own configurations, the one the model prices lower for both.
      const cusync_gemm::TileConfig c1 = fusedConvConfig(p.first.args.config), c2 = fusedConvConfig(p.second.args.config);
      const cusync_gemm::TileConfig c = f.pair.first.args.config;
      EXPECT_TRUE(c == c1 || c == c2) << cusync_gemm::toString(c);
      auto pairUs = [&](cusync_gemm::TileConfig t) {
        return convModelUs(p.first.args, t, 132) + convModelUs(p.second.args, t, 132);
      };
      EXPECT_LE(pairUs(c), std::min(pairUs(c1), pairUs(c2)));
      EXPECT_EQ(cusync_gemm::residentKBlocksOf(f.pair.first.args.config), 0);
      EXPECT_EQ(f.blocks, std::min<uint32_t>(132, f.units1 + f.units2));
      EXPECT_GE(f.units1, f.pair.first.grid.x * f.pair.first.grid.y);
      // The fused kernel is a programmatic dependent of the kernel before the pair, as a Pdl pair's first layer is.
      EXPECT_EQ(f.pair.first.opts, int(cusync::WaitsForPriorGrid));
      EXPECT_EQ(f.pair.first.opts, p.first.opts);
    }
  // ResNet's 56 x 56 x 64 layers keep their filter resident alone; fused, they run 128x64.
  const ModelPair mp = resnetPairs()[0];
  ASSERT_EQ(planConvPair(8, mp.H, mp.H, mp.first, mp.second, 132).first.args.config,
            cusync_gemm::TileConfig::T128x64Resident);
  EXPECT_EQ(planConvFused(8, mp.H, mp.H, mp.first, mp.second, 132).pair.first.args.config,
            cusync_gemm::TileConfig::T128x64);
}

TEST(ConvFusedPlan, RefusesWhatItsKernelDoesNotBuild) {
  const ConvLayer relu{64, 64, 3, 1, 1, ConvEpilogue::BiasRelu};
  auto refused = [](const ConvLayer& a, const ConvLayer& b, const char* why) {
    try {
      planConvFused(1, 14, 14, a, b, 132);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({64, 64, 3, 1, 1, ConvEpilogue::Bias}, relu, "bias + ReLU");
  refused({8, 64, 3, 1, 1, ConvEpilogue::BiasRelu}, relu, "C = 8");
  refused({64, 8, 3, 1, 1, ConvEpilogue::BiasRelu}, {8, 64, 3, 1, 1, ConvEpilogue::BiasRelu}, "C = 8");
}

TEST(ConvPairPlan, MismatchedChannelsAreRefused) {
  try {
    planConvPair(1, 14, 14, {64, 64, 3, 1, 1, ConvEpilogue::BiasRelu}, {128, 128, 3, 1, 1, ConvEpilogue::BiasRelu}, 132);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads 128 channels where the first writes 64"), std::string::npos)
        << e.what();
  }
}

}  // namespace
