// The fused launch (cusync/fused.h) on the CPU emulator: the unit decode, the
// host checks, deadlock freedom at any number of resident blocks, and a
// planted scheduling bug that the emulator reports instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "cusync/cusync.h"
#include "cusync/emu/emulator.h"
#include "cusync/emu/fused.h"

using namespace cusync;
using namespace std::chrono_literals;

namespace {

using HostStage0 = Stage<policy::NoSync, policy::RowSync, HostMemory>;
using HostStage1 = Stage<policy::RowSync, policy::NoSync, HostMemory>;

TEST(FusedSchedule, DecodesUnitsInPipelineOrder) {
  FusedScheduleView f;
  f.numStages = 2;
  f.unitsEnd[0] = 3;
  f.unitsEnd[1] = 8;
  f.ticketsPerRun = 8 + 4;  // four blocks' closing tickets
  const uint32_t stages[] = {0, 0, 0, 1, 1, 1, 1, 1};
  for (unsigned long long run = 0; run < 3; ++run)
    for (uint32_t t = 0; t < f.ticketsPerRun; ++t) {
      const FusedUnit u = fusedUnit(f, run * f.ticketsPerRun + t);
      EXPECT_EQ(u.run, run + 1);
      EXPECT_EQ(u.valid, t < 8) << t;
      if (!u.valid) continue;
      EXPECT_EQ(u.stage, stages[t]);
      EXPECT_EQ(u.unit, t < 3 ? t : t - 3);
    }
}

TEST(FusedSchedule, RejectsAConsumerBeforeItsProducer) {
  HostStage0 a("gemm1", Dim3(4, 2), Dim3(64, 64, 32));
  HostStage1 b("gemm2", Dim3(2, 2), Dim3(64, 64, 32));
  pair(a, b);
  EXPECT_NO_THROW(FusedSchedule<HostMemory>("mlp", {8, 4}, a, b));
  try {
    FusedSchedule<HostMemory> bad("mlp", {4, 8}, b, a);
    ADD_FAILURE() << "a consumer before its producer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::UnpairedStage);
    EXPECT_NE(std::string(e.what()).find("'gemm2' waits on a producer that does not come before it"), std::string::npos)
        << e.what();
  }
  // Fewer units than tiles, or counts that do not match the stages.
  EXPECT_THROW(FusedSchedule<HostMemory>("mlp", {7, 4}, a, b), Error);
  EXPECT_THROW(FusedSchedule<HostMemory>("mlp", {8}, a, b), Error);
  // A block count that changes between runs breaks run counting.
  FusedSchedule<HostMemory> f("mlp", {8, 4}, a, b);
  (void)f.view(3);
  EXPECT_THROW((void)f.view(5), Error);
  f.reset();
  EXPECT_NO_THROW((void)f.view(5));
}

// A two-stage chain: stage 0 posts its tiles, stage 1 waits at every k-step
// (RowSync waits at the first). Runs `runs` times through one schedule.
struct Chain {
  HostStage0 prod;
  HostStage1 cons;
  HostStage0::View v0;
  HostStage1::View v1;
  Chain(Dim3 g0, Dim3 g1)
      : prod("gemm1", g0, Dim3(64, 64, 32)), cons("gemm2", g1, Dim3(64, 64, 32)) {
    pair(prod, cons);
    prod.setOrder(GroupedOrder{2});
    cons.setOrder(GroupedOrder{2});
    v0 = prod.view();
    v1 = cons.view();
  }
  // The tile program of unit u; `swapped` hands the consumer's units out
  // first (the planted bug).
  void run(const FusedUnit& u, bool swapped) const {
    const uint32_t stage = swapped ? 1 - u.stage : u.stage;
    if (stage == 0) {
      FusedUnit w = u;
      w.unit = u.unit % prod.numTiles();
      emu::post(v0, fusedTileWork(v0, w));
      return;
    }
    FusedUnit w = u;
    w.unit = u.unit % cons.numTiles();
    const TileWork t = fusedTileWork(v1, w);
    for (uint32_t k = 0; k < prod.shape().cols(); k += cons.shape().tile.z)
      emu::wait(v1, t, Read{k, t.tile.y * cons.shape().tile.y, 0, 0});
  }
};

emu::Report runChain(uint32_t sms, uint32_t blocks, uint32_t runs, bool swapped = false) {
  Chain c(Dim3(6, 5), Dim3(4, 5));
  FusedSchedule<HostMemory> f("chain", {c.prod.numTiles(), c.cons.numTiles()}, c.prod, c.cons);
  emu::Emulator emu({sms, 1});
  const uint32_t s = emu.createStream();
  for (uint32_t r = 0; r < runs; ++r)
    emu::launchFused(emu, s, f, blocks, [&c, swapped](const FusedUnit& u, emu::Block&) { c.run(u, swapped); });
  return emu.run(30s);
}

TEST(FusedEmulator, DeadlockFreeAtAnyResidency) {
  // One slot, a few, as many as units, more blocks than slots.
  for (uint32_t sms : {1u, 2u, 3u, 7u, 50u})
    for (uint32_t blocks : {1u, 4u, 50u}) {
      SCOPED_TRACE(std::to_string(sms) + " SMs, " + std::to_string(blocks) + " blocks");
      const emu::Report rep = runChain(sms, blocks, 3);
      ASSERT_TRUE(rep.ok) << rep.message;
      EXPECT_EQ(rep.blocksRun, 3u * blocks);
    }
}

TEST(FusedEmulator, RandomMachines) {
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    const uint32_t sms = 1 + rng() % 40, blocks = 1 + rng() % 60;
    SCOPED_TRACE(std::to_string(sms) + " SMs, " + std::to_string(blocks) + " blocks");
    const emu::Report rep = runChain(sms, blocks, 2);
    ASSERT_TRUE(rep.ok) << rep.message;
  }
}

// A scheduler that hands the consumer's units out first: with fewer slots
// than consumer units, every resident block waits on a producer tile nobody
// will run. The emulator must stop and name the waiters, not hang.
TEST(FusedEmulator, ReportsAPlantedOrderBug) {
  const emu::Report rep = runChain(4, 4, 1, /*swapped=*/true);
  ASSERT_FALSE(rep.ok);
  EXPECT_TRUE(rep.deadlock) << rep.message;
  EXPECT_NE(rep.message.find("gemm2"), std::string::npos) << rep.message;
  EXPECT_FALSE(rep.waiters.empty());
}

}  // namespace
