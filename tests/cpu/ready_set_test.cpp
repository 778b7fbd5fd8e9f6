// ReadySet and protocol::awaitSpanOnce: a waiter that saw a span satisfied in
// a run waits on it again for free, and only there (same run, same
// semaphores); a new run, another row or another producer is polled. And
// protocol::spanReached: one poll of relaxed loads, no fence, no spinning;
// protocol::awaitSpan: a wait ends only once every semaphore of its span
// reached its target.
#include <gtest/gtest.h>

#include <vector>

#include "cusync/emu/host_backend.h"
#include "cusync/protocol.h"
#include "cusync/stage.h"

using namespace cusync;

namespace {

SemSpan spanOf(uint32_t first, uint32_t n) {
  SemSpan s;
  s.first = first;
  s.n[0] = n;
  s.step[0] = 1;
  return s;
}

uint32_t* gRows = nullptr;  // the semaphores a test's producer (CountingBackend::producerAtSpin) posts

// The host backend, counting the loads and fences a wait costs. A failed poll
// plays the producer: it posts the missing run, so a wait that polls ends.
struct CountingBackend : emu::HostBackend {
  static inline int loads = 0, acquireLoads = 0, fences = 0, spins = 0;
  // Where set, the producer's posts at the n-th spin (1, 2, ...).
  static inline void (*producerAtSpin)(int n) = nullptr;
  static void reset() { loads = acquireLoads = fences = spins = 0; }
  static uint32_t loadRelaxed(const uint32_t* p) {
    ++loads;
    return emu::HostBackend::loadRelaxed(p);
  }
  static uint32_t loadAcquire(const uint32_t* p) {
    ++loads;
    ++acquireLoads;
    return emu::HostBackend::loadAcquire(p);
  }
  static void fenceAcquire() { ++fences; }
  static void fenceProxyAsync() { ++fences; }
  static void onSpin(const StallInfo& info, unsigned long long) {
    ++spins;
    ASSERT_LT(spins, 1000) << "a wait that never ends: semaphore " << info.sem;
    if (producerAtSpin != nullptr) producerAtSpin(spins);
  }
  static void onSpinDone() {}
};

// 4 x `rows` producer tiles (RowSync: a row is ready at 4 posts per run) and
// a consumer of 2 x `rows` tiles reading whole producer rows.
struct RowBands {
  Stage<policy::NoSync, policy::RowSync, HostMemory> prod;
  Stage<policy::RowSync, policy::NoSync, HostMemory> cons;
  uint32_t rows;
  explicit RowBands(uint32_t r)
      : prod("prod", Dim3(4, r), Dim3(8, 8, 1)), cons("cons", Dim3(2, r), Dim3(8, 8, 8)), rows(r) {
    pair(prod, cons);
  }
  // Every row of run 1 posted; the producer's semaphores.
  uint32_t* runOneDone() {
    uint32_t* sems = prod.semaphores();
    for (uint32_t i = 0; i < rows; ++i) sems[i] = 4;
    return sems;
  }
};

}  // namespace

TEST(ReadySet, HoldsWhatWasAddedInTheRun) {
  std::vector<uint32_t> words(ReadySet::kWords, 0xffffffffu);  // garbage until cleared
  ReadySet set(words.data());
  set.clear();
  uint32_t sems[8] = {};
  set.enter(sems, 1);
  EXPECT_FALSE(set.holds(spanOf(2, 1)));
  set.add(spanOf(2, 2));
  EXPECT_TRUE(set.holds(spanOf(2, 1)));
  EXPECT_TRUE(set.holds(spanOf(3, 1)));
  EXPECT_TRUE(set.holds(spanOf(2, 2)));
  EXPECT_FALSE(set.holds(spanOf(2, 3))) << "semaphore 4 was never seen";
  EXPECT_FALSE(set.holds(spanOf(1, 2))) << "semaphore 1 was never seen";
  set.enter(sems, 1);  // the same run and array keep it
  EXPECT_TRUE(set.holds(spanOf(2, 2)));
}

TEST(ReadySet, ANewRunOrOtherSemaphoresEmptyIt) {
  std::vector<uint32_t> words(ReadySet::kWords);
  ReadySet set(words.data());
  set.clear();
  uint32_t semsA[8] = {}, semsB[8] = {};
  set.enter(semsA, 1);
  set.add(spanOf(0, 8));
  set.enter(semsA, 2);
  EXPECT_FALSE(set.holds(spanOf(0, 1))) << "seen in run 1, not in run 2";
  set.add(spanOf(0, 8));
  set.enter(semsB, 2);
  EXPECT_FALSE(set.holds(spanOf(0, 1))) << "seen on another producer's semaphores";
}

TEST(ReadySet, SemaphoresPastItsCapacityAreAlwaysPolled) {
  std::vector<uint32_t> words(ReadySet::kWords);
  ReadySet set(words.data());
  set.clear();
  uint32_t sems[1] = {};
  set.enter(sems, 1);
  set.add(spanOf(ReadySet::kCapacity - 1, 2));
  EXPECT_TRUE(set.holds(spanOf(ReadySet::kCapacity - 1, 1)));
  EXPECT_FALSE(set.holds(spanOf(ReadySet::kCapacity, 1)));
  EXPECT_FALSE(set.holds(spanOf(ReadySet::kCapacity - 1, 2)));
}

TEST(AwaitSpanOnce, ASatisfiedSpanSeenBeforeCostsNoLoadAndNoFence) {
  RowBands bands(3);
  const auto v = bands.cons.view();
  uint32_t* sems = bands.runOneDone();
  std::vector<uint32_t> words(ReadySet::kWords);
  ReadySet ready(words.data());
  ready.clear();
  auto waitRow = [&](uint32_t row, uint32_t run, uint32_t col) {
    TileWork w;
    w.run = run;
    w.valid = true;
    w.tile = Dim3(col, row);
    const SemSpan span = protocol::waitSpanOf(v, Read{0, row * 8, 0, 0});
    ASSERT_FALSE(span.empty());
    CountingBackend::reset();
    protocol::awaitSpanOnce<CountingBackend>(v, w, span, ready, 0, Reader::AsyncProxy);
  };

  waitRow(1, 1, 0);
  EXPECT_GE(CountingBackend::loads, 1);
  EXPECT_EQ(CountingBackend::fences, 2) << "acquire and proxy fence after the first wait";
  waitRow(1, 1, 1);  // another tile of the same row band, same run
  EXPECT_EQ(CountingBackend::loads, 0);
  EXPECT_EQ(CountingBackend::fences, 0);
  waitRow(2, 1, 0);  // another row: polled
  EXPECT_GE(CountingBackend::loads, 1);
  EXPECT_EQ(CountingBackend::fences, 2);

  // Run 2 has not posted row 1 yet: the wait must poll and spin until the
  // producer (played by the backend) posts, though run 1 saw row 1 ready.
  gRows = sems;
  CountingBackend::producerAtSpin = [](int) { gRows[1] = 8; };
  waitRow(1, 2, 0);
  CountingBackend::producerAtSpin = nullptr;
  EXPECT_GE(CountingBackend::spins, 1) << "a wait of a new run was skipped";
  EXPECT_EQ(sems[1], 8u);
  waitRow(1, 2, 1);
  EXPECT_EQ(CountingBackend::loads, 0);
}

TEST(SpanReached, PollsOnceWithoutFencesAndNeverSpins) {
  RowBands bands(10);  // a span over all 10 rows is more than one batch of relaxed loads
  const auto v = bands.cons.view();
  uint32_t* sems = bands.runOneDone();
  TileWork w;
  w.run = 1;
  w.valid = true;
  auto reached = [&](const SemSpan& span) {
    CountingBackend::reset();
    const bool r = protocol::spanReached<CountingBackend>(v, w, span);
    EXPECT_EQ(CountingBackend::fences, 0) << "the caller fences";
    EXPECT_EQ(CountingBackend::spins, 0) << "a poll never spins";
    return r;
  };
  EXPECT_TRUE(reached(spanOf(0, 10)));
  EXPECT_EQ(CountingBackend::loads, 10);
  EXPECT_TRUE(reached(SemSpan{}));
  EXPECT_EQ(CountingBackend::loads, 0);
  sems[9] = 3;  // the last row, in the second batch, one post short
  EXPECT_FALSE(reached(spanOf(0, 10)));
  EXPECT_TRUE(reached(spanOf(0, 9)));
  sems[9] = 4;
  w.run = 2;  // nothing of run 2 posted
  EXPECT_FALSE(reached(spanOf(0, 10)));
  EXPECT_LE(CountingBackend::loads, 8) << "the first batch already fails";
  for (uint32_t r = 0; r < 10; ++r) sems[r] = 8;
  EXPECT_TRUE(reached(spanOf(0, 10)));
}


// Posted one at a time, last to first: the wait ends only once every
// semaphore reached its target, spinning on whichever is short.
TEST(AwaitSpan, WaitsForEverySemaphorePostedOneByOne) {
  RowBands bands(10);  // two batches: 8 and 2
  const auto v = bands.cons.view();
  gRows = bands.prod.semaphores();
  TileWork w;
  w.run = 1;
  w.valid = true;
  CountingBackend::reset();
  CountingBackend::producerAtSpin = [](int n) {
    if (n <= 10) gRows[10 - n] = 4;
  };
  protocol::awaitSpan<CountingBackend>(v, w, spanOf(0, 10), 0, Reader::AsyncProxy);
  CountingBackend::producerAtSpin = nullptr;
  for (int r = 0; r < 10; ++r) EXPECT_EQ(gRows[r], 4u) << "the wait ended before row " << r << " was posted";
  EXPECT_EQ(CountingBackend::spins, 10) << "it spun until the last post (row 0)";
  EXPECT_EQ(CountingBackend::fences, 2) << "the reached second batch's acquire fence, then the proxy fence";
  // A span already reached: one batch of relaxed loads per 8 and a fence each, no spin.
  CountingBackend::reset();
  protocol::awaitSpan<CountingBackend>(v, w, spanOf(0, 10), 0, Reader::Generic);
  EXPECT_EQ(CountingBackend::spins, 0);
  EXPECT_EQ(CountingBackend::acquireLoads, 0);
  EXPECT_EQ(CountingBackend::loads, 10);
  EXPECT_EQ(CountingBackend::fences, 2);
}
