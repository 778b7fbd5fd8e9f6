// A build with CUSYNC_SEM_STRIDE=32 (this test's own executable; config.h):
// posts and waits use semaphore i at word 32 i of the stage's semaphores,
// the words between stay untouched, and the stage zeroes all of them.
#include <gtest/gtest.h>

#include "cusync/emu/host_backend.h"
#include "cusync/protocol.h"
#include "cusync/stage.h"

using namespace cusync;

static_assert(kSemStride == 32, "this test is built with -DCUSYNC_SEM_STRIDE=32");

TEST(SemStride, PostsAndWaitsUseEveryThirtySecondWord) {
  // 4 x 3 producer tiles; RowSync: row r is ready once its 4 tiles posted.
  Stage<policy::NoSync, policy::RowSync, HostMemory> prod("prod", Dim3(4, 3), Dim3(8, 8, 1));
  Stage<policy::RowSync, policy::NoSync, HostMemory> cons("cons", Dim3(2, 3), Dim3(8, 8, 8));
  pair(prod, cons);
  ASSERT_EQ(prod.semaphoreCount(), 3u);
  const auto pv = prod.view();
  TileWork w;
  w.run = 1;
  w.valid = true;
  for (uint32_t x = 0; x < 4; ++x) {
    w.tile = Dim3(x, 1, 0);
    protocol::postElected<emu::HostBackend>(pv, w);
  }
  const uint32_t* sems = prod.semaphores();
  for (uint32_t word = 0; word < 3 * kSemStride; ++word)
    EXPECT_EQ(sems[word], word == 1 * kSemStride ? 4u : 0u) << "word " << word;
  // Row 1 is ready: the consumer's wait on it returns (a wait on row 0 would spin).
  const auto cv = cons.view();
  TileWork c;
  c.run = 1;
  c.valid = true;
  c.tile = Dim3(0, 1, 0);
  const SemSpan span = protocol::waitSpanOf(cv, Read{0, 8, 0, 0});
  ASSERT_EQ(span.count(), 1u);
  EXPECT_EQ(span.at(0), 1u);
  EXPECT_TRUE(protocol::spanReached<emu::HostBackend>(cv, c, span));
  protocol::awaitSpan<emu::HostBackend>(cv, c, span);
  EXPECT_FALSE(protocol::spanReached<emu::HostBackend>(cv, c, protocol::waitSpanOf(cv, Read{0, 0, 0, 0})));
  // A reset zeroes every word, the strided ones included.
  prod.reset();
  for (uint32_t word = 0; word < 3 * kSemStride; ++word) EXPECT_EQ(sems[word], 0u) << "word " << word;
}
