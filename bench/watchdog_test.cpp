// The benchmarks' hang detection: a wait that never completes gives up at
// its limit, one that completes is reported done, and the run named as the
// hung one is the first whose end marker was not reached.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "watchdog.h"

namespace {

using std::chrono::milliseconds;

TEST(Watchdog, GivesUpOnWorkThatNeverFinishes) {
  int polls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(bench::pollUntil([&] { return ++polls, false; }, milliseconds(30)));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, milliseconds(30));
  EXPECT_LT(waited, milliseconds(3000));
  EXPECT_GT(polls, 1);
}

TEST(Watchdog, ReportsWorkThatFinishes) {
  int polls = 0;
  EXPECT_TRUE(bench::pollUntil([&] { return ++polls == 4; }, milliseconds(10000)));
  EXPECT_EQ(polls, 4);
  // Work already done passes even with no time allowed.
  EXPECT_TRUE(bench::pollUntil([] { return true; }, milliseconds(0)));
}

TEST(Watchdog, NamesTheFirstRunThatDidNotEnd) {
  // Markers 0..3 reached: runs 0, 1 and 2 ended, run 3 hangs.
  EXPECT_EQ(bench::firstUnfinishedRun(6, [](size_t m) { return m <= 3; }), 3u);
  EXPECT_EQ(bench::firstUnfinishedRun(6, [](size_t) { return false; }), 0u);
  EXPECT_EQ(bench::firstUnfinishedRun(6, [](size_t) { return true; }), 6u);
  EXPECT_EQ(bench::firstUnfinishedRun(0, [](size_t) { return false; }), 0u);
}

}  // namespace
