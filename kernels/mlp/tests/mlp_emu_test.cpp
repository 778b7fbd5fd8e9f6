// CPU emulator runs of the MLP's synced stage configurations, exactly as
// mlp.cu builds them (planPair: real grids, tiles, policies, orders, flags,
// the blocks that take tickets) on 132 SM slots of one block each (the GEMM
// takes a whole SM; a cluster pair's second block takes no tickets and waits
// for nothing its first does not). Tile programs only dispense, wait (at every
// k-block of GEMM2, as the GEMM's producer warp does) and post, so this shows
// the pipelines deadlock-free and every wait satisfied, fast.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "cusync/emu/device.h"
#include "cusync/emu/emulator.h"
#include "cusync/emu/emulator_impl.h"
#include "cusync/emu/fused.h"
#include "cusync/emu/pipeline.h"
#include "cusync/memory.h"
#include "kernels/gemm/schedule/split_units.h"
#include "kernels/mlp/mlp_plan.h"
#include "kernels/testing/emulated_fused_pair.h"

#include <random>

using namespace cusync;
using namespace cusync_mlp;
using namespace std::chrono_literals;

namespace {

constexpr int kSms = 132;

template <class P>
void runPair(Model model, int64_t M, Variant v, Order o, LaunchMode mode, uint32_t runs = 2) {
  const PairPlan plan = planPair(model, M, v, o, kSms);
  SCOPED_TRACE(std::string(toString(model)) + " M=" + std::to_string(M) + " " + toString(v) + " order " +
               toString(resolveOrder(v, o)) + " mode " + toString(mode) + " grids " + std::to_string(plan.g1.grid.x) +
               "x" + std::to_string(plan.g1.grid.y) + " / " + std::to_string(plan.g2.grid.x) + "x" +
               std::to_string(plan.g2.grid.y));
  StagePair<P, HostMemory> st(plan);
  // GEMM2 reads all of H: the producer's output columns must cover its K.
  ASSERT_GE(int64_t(plan.g1.grid.x) * plan.g1.tile.x, plan.g2.args.K);
  // Both cover every row; their row tiles may differ (a cluster pair's are 256 rows).
  ASSERT_GE(int64_t(plan.g1.grid.y) * plan.g1.tile.y, M);
  ASSERT_GE(int64_t(plan.g2.grid.y) * plan.g2.tile.y, M);
  emu::Emulator emu({kSms, 1});
  emu::Pipeline pipe(emu, mode);
  const uint32_t K2 = static_cast<uint32_t>(plan.g2.args.K);
  const uint32_t bk = plan.g2.tile.z, bm = plan.g2.tile.y;
  for (uint32_t r = 0; r < runs; ++r) {
    pipe.launch(
        st.prod,
        [](const auto& view, emu::Block& b) {
          for (;;) {
            const TileWork w = emu::tile(view, b);
            if (!w.valid) break;
            emu::post(view, w);
          }
        },
        Dim3(plan.g1.ticketBlocks), true);
    pipe.launch(
        st.cons,
        [=](const auto& view, emu::Block& b) {
          for (;;) {
            const TileWork w = emu::tile(view, b);
            if (!w.valid) break;
            for (uint32_t k0 = 0; k0 < K2; k0 += bk) emu::wait(view, w, Read{k0, w.tile.y * bm, 0, 0});
          }
        },
        Dim3(plan.g2.ticketBlocks), true);
    pipe.finish();
  }
  const emu::Report rep = emu.run(60s);
  ASSERT_TRUE(rep.ok) << rep.message;
  // Streams mode adds one wait-kernel block per run in front of GEMM2.
  const uint64_t gates = mode == LaunchMode::Streams ? runs : 0;
  EXPECT_EQ(rep.blocksRun, uint64_t(runs) * (plan.g1.ticketBlocks + plan.g2.ticketBlocks) + gates);
}

const int64_t kMs[] = {1, 100, 512, 1000, 2048, 4096};

void everyConfig(Model model, LaunchMode mode) {
  for (int64_t M : kMs) {
    runPair<WholeSync>(model, M, Variant::Pdl, Order::Auto, mode);
    for (Order o : {Order::RowMajor, Order::Grouped}) {
      runPair<policy::RowSync>(model, M, Variant::RowSync, o, mode);
      runPair<policy::TileSync>(model, M, Variant::TileSync, o, mode);
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(MlpEmulator, Gpt3Pdl) { everyConfig(Model::GPT3, LaunchMode::Pdl); }
TEST(MlpEmulator, LlamaPdl) { everyConfig(Model::LLaMA, LaunchMode::Pdl); }
TEST(MlpEmulator, Gpt3Streams) { everyConfig(Model::GPT3, LaunchMode::Streams); }
TEST(MlpEmulator, LlamaStreams) { everyConfig(Model::LLaMA, LaunchMode::Streams); }

// The fused variant (planFused) on `sms` SM slots: one persistent grid takes
// GEMM1's units, then GEMM2's, from the pipeline's counter, each unit decoded
// as the kernel decodes it (split parts included); GEMM1's finishing parts
// post, GEMM2's parts wait at every k-block of their range.
void runFused(Model model, int64_t M, int sms, uint32_t runs = 2) {
  const PairPlan plan = planFused(model, M, sms);
  SCOPED_TRACE(std::string(toString(model)) + " M=" + std::to_string(M) + " fused on " + std::to_string(sms) +
               " SMs, " + cusync_gemm::toString(plan.g1.args.config) + ", units " + std::to_string(plan.g1.units) +
               " + " + std::to_string(plan.g2.units));
  StagePair<policy::RowSync, HostMemory> st(plan);
  FusedSchedule<HostMemory> sched("mlp-fused", {plan.g1.units, plan.g2.units}, st.prod, st.cons);
  const auto v1 = st.prod.view();
  const auto v2 = st.cons.view();
  const cusync_testing::FusedStageUnits s1 = cusync_testing::fusedStageUnits(plan.g1.args, sms, plan.g1.units);
  const cusync_testing::FusedStageUnits s2 = cusync_testing::fusedStageUnits(plan.g2.args, sms, plan.g2.units);
  const uint32_t bk = plan.g2.tile.z, bm = plan.g2.tile.y;
  emu::Emulator emu({static_cast<uint32_t>(sms), 1});
  const uint32_t stream = emu.createStream();
  for (uint32_t r = 0; r < runs; ++r)
    cusync_testing::launchFusedPair(emu, stream, sched, plan.g1.blocks, v1, v2, s1, s2,
                                    [v2, bk, bm](const TileWork& w, int32_t kb, int32_t kb0) {
                                      emu::wait(v2, w, Read{uint32_t(kb) * bk, w.tile.y * bm, 0, uint32_t(kb0) * bk});
                                    });
  const emu::Report rep = emu.run(120s);
  ASSERT_TRUE(rep.ok) << rep.message;
  EXPECT_EQ(rep.blocksRun, uint64_t(runs) * plan.g1.blocks);
}

const int64_t kFusedMs[] = {1, 64, 100, 256, 512, 1000, 2048, 4096};

TEST(MlpEmulator, FusedAtH100AndSmallerGpus) {
  for (Model model : {Model::GPT3, Model::LLaMA})
    for (int sms : {132, 114, 78})
      for (int64_t M : kFusedMs) {
        runFused(model, M, sms);
        if (HasFailure()) return;
      }
}

TEST(MlpEmulator, FusedAtRandomSmCounts) {
  std::mt19937 rng(11);
  for (int i = 0; i < 12; ++i) {
    const Model model = i % 2 ? Model::LLaMA : Model::GPT3;
    const int sms = 1 + static_cast<int>(rng() % 200);
    runFused(model, kFusedMs[rng() % 8], sms);
    if (HasFailure()) return;
  }
}

TEST(MlpPlan, FusedConfiguration) {
  // The stages run one configuration or a pair of widths the fused kernel
  // builds, fused-capable (whole tiles or 64-row split tiles); GEMM1's holds
  // LLaMA's gate/up pairs. Where the pair is built, each stage runs the
  // width the other variants' stage runs (in its whole-tile form).
  int widthPairs = 0;
  for (Model model : {Model::GPT3, Model::LLaMA})
    for (int64_t M : kFusedMs) {
      const PairPlan p = planFused(model, M, kSms);
      SCOPED_TRACE(std::string(toString(model)) + " M=" + std::to_string(M));
      EXPECT_TRUE(cusync_gemm::runsFusedPair(p.g1.args.config, p.g2.args.config));
      const cusync_gemm::Schedule s = cusync_gemm::scheduleOf(p.g1.args.config);
      EXPECT_TRUE(s == cusync_gemm::Schedule::WholeTiles || s == cusync_gemm::Schedule::SplitK);
      EXPECT_TRUE(cusync_gemm::supportsSwiGLU(p.g1.args.config));
      EXPECT_EQ(p.g1.blocks, std::min<uint32_t>(kSms, p.g1.units + p.g2.units));
      EXPECT_EQ(p.g1.units, cusync_gemm::workUnits(p.g1.args, p.g1.args.config, kSms));
      EXPECT_EQ(p.g2.units, cusync_gemm::workUnits(p.g2.args, p.g2.args.config, kSms));
      if (p.g1.args.config != p.g2.args.config) {
        ++widthPairs;
        const PairPlan own = planPair(model, M, Variant::RowSync, Order::Auto, kSms);
        EXPECT_EQ(cusync_gemm::tileShape(p.g1.args.config).bn, cusync_gemm::tileShape(own.g1.args.config).bn);
        EXPECT_EQ(cusync_gemm::tileShape(p.g2.args.config).bn, cusync_gemm::tileShape(own.g2.args.config).bn);
      }
    }
  EXPECT_GE(widthPairs, 4) << "GPT-3 and LLaMA at M = 256 and 512 / 1000 run a width per stage";
}

TEST(MlpPlan, Geometry) {
  // LLaMA: SwiGLU producer tiles cover BN / 2 output columns.
  const PairPlan l = planPair(Model::LLaMA, 1000, Variant::TileSync, Order::Auto, kSms);
  EXPECT_EQ(l.g1.tile.x * 2, cusync_gemm::tileShape(l.g1.args.config).bn);
  // Every variant runs the GEMM's own choice for a stage (one GEMM path).
  cusync_gemm::GemmArgs a1 = l.g1.args;
  a1.config = cusync_gemm::TileConfig::Auto;
  EXPECT_EQ(l.g1.args.config, cusync_gemm::resolveConfig(a1, kSms, cusync_gemm::LaunchContext::Stage));
  EXPECT_TRUE(l.g1.opts & NoAtomicAdd);
  const PairPlan g = planPair(Model::GPT3, 4096, Variant::RowSync, Order::Auto, kSms);
  EXPECT_EQ(g.g1.order, Order::Grouped) << "every variant's default order is the GEMM's grouped one";
  EXPECT_EQ(planPair(Model::GPT3, 4096, Variant::RowSync, Order::RowMajor, kSms).g1.order, Order::RowMajor);
  EXPECT_EQ(g.g1.blocks, uint32_t(kSms));
  EXPECT_EQ(g.g1.ticketBlocks, cusync_gemm::ticketBlocks(g.g1.args, g.g1.args.config, kSms));
  const PairPlan one = planPair(Model::GPT3, 1, Variant::Pdl, Order::Auto, kSms);
  EXPECT_EQ(one.g1.grid.y, 1u);
  EXPECT_EQ(one.g1.blocks, cusync_gemm::persistentBlocks(one.g1.args, one.g1.args.config, kSms));
}

}  // namespace
