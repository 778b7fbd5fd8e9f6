// GPU tests of the GEMM's cusync hooks with RowSync: a producer GEMM and a
// consumer GEMM paired through the policy, five runs through the launch
// modes, each against the same chain without sync
// (kernels/gemm/tests/pair_runs.cuh).
#include "kernels/gemm/tests/pair_runs.cuh"
#include "kernels/testing/require_hopper.h"

namespace gemm_test {
namespace {

TEST(GemmGpuHooks, RowSyncPairRunsAcrossModes) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x128, TileConfig::T128x128, 0, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x128));
}

TEST(GemmGpuHooks, RowSyncPairSplitK) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 3, 5,
                                         rowSyncPostsPerTile(TileConfig::T64x128SplitK));
}

TEST(GemmGpuHooks, RowSyncPairTailSplit) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x256TailSplit, TileConfig::T128x256TailSplit, 3, 2,
                                         rowSyncPostsPerTile(TileConfig::T128x256TailSplit));
}

TEST(GemmGpuHooks, RowSyncPairTailSplit192) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x192TailSplit, TileConfig::T128x192, 2, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x192TailSplit));
}

TEST(GemmGpuHooks, RowSyncPairNarrow) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x144TailSplit, TileConfig::T128x176, 3, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x144TailSplit));
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x96, TileConfig::T128x168, 0, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x96));
}

TEST(GemmGpuHooks, RowSyncPairClusters) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T128x256Pair, TileConfig::T128x256Pair, 0, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x256Pair));
  pairRunsAcrossModes<cusync::policy::RowSync>(TileConfig::T64x128SplitK, TileConfig::T128x256Pair, 2, 0,
                                         rowSyncPostsPerTile(TileConfig::T64x128SplitK));
}

// KCut configurations take no tickets, so a stage with a policy cannot run
// them: a clear error before any launch.
TEST(GemmGpuHooks, KCutConfigNeedsNoStage) {
  REQUIRE_HOPPER();
  GemmArgs g;
  Dev d(1 << 20);
  g.M = 256, g.N = 256, g.K = 256, g.A = d.p, g.B = d.p, g.C = d.p, g.config = TileConfig::T128x192KCut;
  cusync::Stage<cusync::policy::NoSync, cusync::policy::RowSync> st("gemm", stageGrid(g, g.config),
                                                                    stageTile(g, g.config));
  try {
    gemm(g, st, nullptr);
    ADD_FAILURE() << "a KCut configuration ran through a stage";
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("without a stage"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gemm_test
