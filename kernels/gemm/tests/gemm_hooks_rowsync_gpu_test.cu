// GPU tests of the GEMM's cusync hooks with RowSync: a producer GEMM and a
// consumer GEMM paired through the policy, three runs in a row, against the
// same chain without sync (kernels/gemm/tests/pair_runs.cuh).
#include "kernels/gemm/tests/pair_runs.cuh"
#include "kernels/testing/require_hopper.h"

namespace gemm_test {
namespace {

TEST(GemmGpuHooks, RowSyncPairThreeRuns) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x128, TileConfig::T128x128, 0, 0,
                                         stageGrid(probe, TileConfig::T128x128).x);
}

TEST(GemmGpuHooks, RowSyncPairSplitK) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 3, 5,
                                         stageGrid(probe, TileConfig::T64x128SplitK).x);
}

TEST(GemmGpuHooks, RowSyncPairSplitK256) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x256SplitK, TileConfig::T64x256SplitK, 4, 3,
                                         stageGrid(probe, TileConfig::T64x256SplitK).x);
}

TEST(GemmGpuHooks, RowSyncPairSplitTail) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256SplitTail, TileConfig::T128x256SplitTail, 3, 2,
                                         stageGrid(probe, TileConfig::T128x256SplitTail).x);
}

TEST(GemmGpuHooks, RowSyncPairSplitTail192) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x192SplitTail, TileConfig::T128x192, 2, 0,
                                         stageGrid(probe, TileConfig::T128x192SplitTail).x);
}

TEST(GemmGpuHooks, RowSyncPairClusters) {
  REQUIRE_HOPPER();
  const GemmArgs probe = [] { GemmArgs g; g.M = 300, g.N = 512; return g; }();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256Pair, TileConfig::T128x192Pair, 0, 0,
                                         stageGrid(probe, TileConfig::T128x256Pair).x);
}

}  // namespace
}  // namespace gemm_test
