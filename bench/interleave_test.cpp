// The order of the benchmarks' interleaved timing: every candidate runs once
// per iteration, each comes first about equally often, no candidate follows
// the same neighbour in most iterations, and the order repeats exactly.
#include <gtest/gtest.h>

#include <vector>

#include "interleave.h"

namespace {

TEST(InterleavedOrder, EachIterationRunsEveryCandidateOnce) {
  const size_t n = 7;
  const int iterations = 50;
  const std::vector<size_t> order = bench::interleavedOrder(n, iterations);
  ASSERT_EQ(order.size(), n * iterations);
  for (int i = 0; i < iterations; ++i) {
    std::vector<int> seen(n);
    for (size_t k = 0; k < n; ++k) {
      ASSERT_LT(order[i * n + k], n);
      ++seen[order[i * n + k]];
    }
    for (size_t c = 0; c < n; ++c) EXPECT_EQ(seen[c], 1) << "iteration " << i << ", candidate " << c;
  }
}

TEST(InterleavedOrder, FirstPlacesAndNeighboursSpreadOverTheCandidates) {
  const size_t n = 8;
  const int iterations = 800;
  const std::vector<size_t> order = bench::interleavedOrder(n, iterations);
  std::vector<int> firsts(n);
  std::vector<std::vector<int>> after(n, std::vector<int>(n));  // after[c][p]: runs of c right after p
  for (size_t j = 0; j < order.size(); ++j) {
    if (j % n == 0) ++firsts[order[j]];
    if (j > 0) ++after[order[j]][order[j - 1]];
  }
  for (size_t c = 0; c < n; ++c) {
    EXPECT_GT(firsts[c], iterations / static_cast<int>(n) / 2) << "candidate " << c;
    EXPECT_LT(firsts[c], 2 * iterations / static_cast<int>(n)) << "candidate " << c;
    for (size_t p = 0; p < n; ++p)
      EXPECT_LT(after[c][p], iterations / 4) << "candidate " << c << " follows " << p << " too often";
  }
}

TEST(InterleavedOrder, RepeatsExactlyAndHandlesEdgeCases) {
  EXPECT_EQ(bench::interleavedOrder(5, 9), bench::interleavedOrder(5, 9));
  EXPECT_NE(bench::interleavedOrder(5, 9, 1), bench::interleavedOrder(5, 9, 2));
  EXPECT_EQ(bench::interleavedOrder(1, 3), (std::vector<size_t>{0, 0, 0}));
  EXPECT_TRUE(bench::interleavedOrder(0, 3).empty());
  EXPECT_TRUE(bench::interleavedOrder(4, 0).empty());
}

}  // namespace
