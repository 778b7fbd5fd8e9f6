// GPU tests of the GEMM's cusync hooks with RowSync: a producer GEMM and a
// consumer GEMM paired through the policy, three runs in a row, against the
// same chain without sync (kernels/gemm/tests/pair_runs.cuh).
#include "kernels/gemm/tests/pair_runs.cuh"
#include "kernels/testing/require_hopper.h"

namespace gemm_test {
namespace {

TEST(GemmGpuHooks, RowSyncPairThreeRuns) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x128, TileConfig::T128x128, 0, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x128));
}

TEST(GemmGpuHooks, RowSyncPairSplitK) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 3, 5,
                                         rowSyncPostsPerTile(TileConfig::T64x128SplitK));
}

TEST(GemmGpuHooks, RowSyncPairSplitK256) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T64x256SplitK, TileConfig::T64x256SplitK, 4, 3,
                                         rowSyncPostsPerTile(TileConfig::T64x256SplitK));
}

TEST(GemmGpuHooks, RowSyncPairSplitTail) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256SplitTail, TileConfig::T128x256SplitTail, 3, 2,
                                         rowSyncPostsPerTile(TileConfig::T128x256SplitTail));
}

TEST(GemmGpuHooks, RowSyncPairSplitTail192) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x192SplitTail, TileConfig::T128x192, 2, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x192SplitTail));
}

TEST(GemmGpuHooks, RowSyncPairClusters) {
  REQUIRE_HOPPER();
  pairThreeRuns<cusync::policy::RowSync>(TileConfig::T128x256Pair, TileConfig::T128x192Pair, 0, 0,
                                         rowSyncPostsPerTile(TileConfig::T128x256Pair));
}

}  // namespace
}  // namespace gemm_test
