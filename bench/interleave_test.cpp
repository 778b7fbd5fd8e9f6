// The order of the benchmarks' interleaved timing: every candidate runs once
// per iteration, each comes first in turn, and nothing runs for no candidate.
#include <gtest/gtest.h>

#include <vector>

#include "interleave.h"

namespace {

TEST(InterleavedOrder, EachIterationRunsEveryCandidateOnceStartingInTurn) {
  const std::vector<size_t> want = {0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2};
  EXPECT_EQ(bench::interleavedOrder(3, 4), want);
}

TEST(InterleavedOrder, EveryCandidateComesFirstEquallyOften) {
  const size_t n = 5;
  const int iterations = 20;
  const std::vector<size_t> order = bench::interleavedOrder(n, iterations);
  ASSERT_EQ(order.size(), n * iterations);
  std::vector<int> runs(n), firsts(n);
  for (size_t j = 0; j < order.size(); ++j) {
    ASSERT_LT(order[j], n);
    ++runs[order[j]];
    if (j % n == 0) ++firsts[order[j]];
  }
  for (size_t c = 0; c < n; ++c) {
    EXPECT_EQ(runs[c], iterations) << "candidate " << c;
    EXPECT_EQ(firsts[c], iterations / static_cast<int>(n)) << "candidate " << c;
  }
}

TEST(InterleavedOrder, OneCandidateRunsBackToBackAndNoneRunsNothing) {
  EXPECT_EQ(bench::interleavedOrder(1, 3), (std::vector<size_t>{0, 0, 0}));
  EXPECT_TRUE(bench::interleavedOrder(0, 3).empty());
  EXPECT_TRUE(bench::interleavedOrder(4, 0).empty());
}

}  // namespace
