// CPU emulator runs of the attention block's RowSync pipeline exactly as
// planBlock plans it and block.cu builds it (emulated_block.h), for both
// models at the benchmark's decode (M = 1 ... 256 after 1024 or 4096
// cached tokens) and prefill (M = 512 ... 4096) shapes, on 132, 114 and 78
// SM slots of one block each and on random counts, in Pdl and Streams mode:
// three runs each, no deadlock, every read after its waits sees its run's
// data, and every tile stored, posted and ticketed once per run. Planted
// bugs are reported, not hung on.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "cusync/emu/emulator.h"
#include "cusync/emu/emulator_impl.h"
#include "kernels/attention/tests/block_shapes.h"
#include "kernels/attention/tests/emulated_block.h"

using namespace cusync;
using namespace cusync_attn;
using namespace std::chrono_literals;

namespace {

using cusync_attn::test_shapes::benchmarkShapes;
using cusync_attn::test_shapes::Shape;

BlockPlan plan(const BlockModel& m, const Shape& s, int sms) {
  auto fake = [](uintptr_t slot) { return reinterpret_cast<void*>(slot << 24); };  // planning reads no memory
  BlockBuffers b;
  b.x = fake(1), b.wqkv = fake(2), b.wo = fake(3), b.q = fake(4), b.kv = fake(5), b.attn = fake(6), b.out = fake(7);
  b.capacity = s.L + s.M;
  return planBlock(m, s.M, s.L, sms, b);
}

std::string describe(const BlockModel& m, const Shape& s, int sms, LaunchMode mode, const BlockPlan& p) {
  return std::string(m.name) + " M=" + std::to_string(s.M) + " L=" + std::to_string(s.L) + " on " +
         std::to_string(sms) + " SMs, " + toString(mode) + ": qkv " + cusync_gemm::toString(p.qkv.config) + " " +
         std::to_string(p.qkvGrid.x) + "x" + std::to_string(p.qkvGrid.y) + ", attention " +
         std::to_string(p.attentionPlan.stageGrid.x) + "x" + std::to_string(p.attentionPlan.stageGrid.y) + " x " +
         std::to_string(p.attentionPlan.splits) + " splits, wo " + cusync_gemm::toString(p.wo.config) + " " +
         std::to_string(p.woGrid.x) + "x" + std::to_string(p.woGrid.y);
}

// Every tile of `stage` stored and posted `runs` times (each semaphore at
// what its tiles post in that many runs), and the stage's tickets those of
// `runs` runs.
template <class StageT>
void expectRuns(const StageT& stage, const emulated::Stamps* stamps, uint32_t blocks, uint32_t runs) {
  SCOPED_TRACE(stage.name());
  const typename StageT::View v = stage.view(blocks);
  const Dim3 g = stage.shape().grid;
  std::vector<uint64_t> posts(stage.semaphoreCount(), 0);
  for (uint32_t y = 0; y < g.y; ++y)
    for (uint32_t x = 0; x < g.x; ++x) {
      const Dim3 t(x, y, 0);
      if (stamps) {
        ASSERT_EQ(stamps->load(t), runs) << "tile " << tileName(t);
      }
      if (stage.isProducer()) posts[v.out.tileIndex(t, v.shape)] += uint64_t(runs) * v.out.postValue(t, v.shape);
    }
  for (size_t s = 0; s < posts.size(); ++s) ASSERT_EQ(stage.semaphores()[s], posts[s]) << "semaphore " << s;
  EXPECT_EQ(*v.tickets, uint64_t(runs) * (stage.numTiles() + blocks));
}

// Streams mode runs each run alone: cusync::Pipeline::finish() joins the
// stages' streams into the caller's, so the next run's producer starts after
// this run's consumers end (the emulator's Pipeline does not join). Pdl
// mode has one stream, whose order the emulator keeps across runs.
void emulateBlock(const BlockModel& m, const Shape& s, int sms, LaunchMode mode, uint32_t runs = 3) {
  const BlockPlan p = plan(m, s, sms);
  SCOPED_TRACE(describe(m, s, sms, mode, p));
  emulated::BlockEmulation block(p, sms);
  emu::Emulator emu({static_cast<uint32_t>(sms), 1});
  emu::Pipeline pipe(emu, mode);
  const uint32_t batch = mode == LaunchMode::Streams ? 1 : runs;
  // Streams mode puts a wait kernel of one block in front of each consumer.
  const uint64_t gates = mode == LaunchMode::Streams ? 2 : 0;
  for (uint32_t done = 0; done < runs; done += batch) {
    for (uint32_t r = 0; r < batch; ++r) {
      block.launch(pipe, mode);
      pipe.finish();
    }
    const emu::Report rep = emu.run(60s);
    ASSERT_TRUE(rep.ok) << rep.message;
    // blocksRun counts every run() of the emulator.
    EXPECT_EQ(rep.blocksRun, (done + batch) * (block.qkvBlocks() + block.attentionBlocks() + block.woBlocks() + gates));
  }
  expectRuns(block.qkv, &block.qkvStamps, block.qkvBlocks(), runs);
  expectRuns(block.attention, &block.attentionStamps, block.attentionBlocks(), runs);
  expectRuns(block.wo, nullptr, block.woBlocks(), runs);
}

void everyShape(const BlockModel& m, int sms, LaunchMode mode) {
  for (const Shape& s : benchmarkShapes()) {
    if (::testing::Test::HasFailure()) return;  // the first failure says enough
    emulateBlock(m, s, sms, mode);
  }
}

TEST(BlockEmulator, Gpt3PdlAt132Sms) { everyShape(kGpt3Block, 132, LaunchMode::Pdl); }
TEST(BlockEmulator, LlamaPdlAt132Sms) { everyShape(kLlamaBlock, 132, LaunchMode::Pdl); }
TEST(BlockEmulator, PdlAt114And78Sms) {
  for (int sms : {114, 78}) {
    everyShape(kGpt3Block, sms, LaunchMode::Pdl);
    everyShape(kLlamaBlock, sms, LaunchMode::Pdl);
  }
}
TEST(BlockEmulator, PdlAtRandomSmCounts) {
  std::mt19937 g(std::random_device{}());
  for (int i = 0; i < 3; ++i) {
    const int sms = std::uniform_int_distribution<int>(8, 160)(g);
    SCOPED_TRACE("random SM count " + std::to_string(sms));
    everyShape(kGpt3Block, sms, LaunchMode::Pdl);
    everyShape(kLlamaBlock, sms, LaunchMode::Pdl);
  }
}
TEST(BlockEmulator, StreamsAt132Sms) {
  everyShape(kGpt3Block, 132, LaunchMode::Streams);
  everyShape(kLlamaBlock, 132, LaunchMode::Streams);
}
TEST(BlockEmulator, StreamsAt114And78Sms) {
  for (int sms : {114, 78}) {
    everyShape(kGpt3Block, sms, LaunchMode::Streams);
    everyShape(kLlamaBlock, sms, LaunchMode::Streams);
  }
}

// A QKV tile that is never posted: the attention tiles that read its row
// wait for it, and the deadlock is reported with who waits on which
// semaphore for what.
TEST(BlockEmulator, UnpostedQkvTileIsReported) {
  const Shape s{256, 1024};
  const BlockPlan p = plan(kGpt3Block, s, 132);
  ASSERT_EQ(p.qkvGrid.y, 2u);
  emulated::Plant plant;
  plant.dropQkvTile = true;
  // Head 0's first keys of new tokens 128..255, which only query blocks 2 and 3 (64 rows each) read.
  plant.droppedTile = Dim3(static_cast<uint32_t>(kGpt3Block.width() / p.qkvTile.x), 1, 0);
  emulated::BlockEmulation block(p, 132, plant);
  emu::Emulator emu({132, 1});
  emu::Pipeline pipe(emu, LaunchMode::Pdl);
  block.launch(pipe, LaunchMode::Pdl);
  pipe.finish();
  const emu::Report rep = emu.run(60s);
  ASSERT_FALSE(rep.ok);
  EXPECT_TRUE(rep.deadlock) << rep.message;
  int waiting = 0;
  for (const emu::Waiter& w : rep.waiters)
    if (w.stage == "attention") {
      // RowSync: the semaphore of QKV row 1, one post short of a whole row.
      EXPECT_EQ(w.info.sem, 1u) << rep.message;
      EXPECT_EQ(w.info.expected, p.qkvGrid.x);
      EXPECT_EQ(w.info.seen, p.qkvGrid.x - 1);
      EXPECT_GE(w.info.tile.y, 2u);
      ++waiting;
    }
  EXPECT_GT(waiting, 0) << rep.message;
  EXPECT_NE(rep.message.find("stage 'attention'"), std::string::npos) << rep.message;
}

// An attention block that stores a tile but takes no ticket: the next run's
// blocks decode the previous run number, so they stop waiting too early,
// and the output projection reads their tiles as stored in the wrong run.
TEST(BlockEmulator, FinisherWithoutTicketReadsEarly) {
  const Shape s{2048, 0};  // 192 tiles: no split
  const BlockPlan p = plan(kGpt3Block, s, 132);
  ASSERT_EQ(p.attentionPlan.splits, 1);
  emulated::Plant plant;
  plant.finisherSkipsTicket = true;
  emulated::BlockEmulation block(p, 132, plant);
  emu::Emulator emu({132, 1});
  emu::Pipeline pipe(emu, LaunchMode::Pdl);
  for (int r = 0; r < 2; ++r) {
    block.launch(pipe, LaunchMode::Pdl);
    pipe.finish();
  }
  const emu::Report rep = emu.run(60s);
  ASSERT_FALSE(rep.ok);
  EXPECT_FALSE(rep.deadlock) << rep.message;
  // Whichever read comes first: the output projection's (run 2) of a tile
  // stored as run 1, or a confused attention block's (run 1) of a QKV tile
  // already stored in run 2.
  EXPECT_NE(rep.message.find(" as stored in run "), std::string::npos) << rep.message;
}

}  // namespace
