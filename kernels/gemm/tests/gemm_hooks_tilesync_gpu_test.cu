// GPU tests of the GEMM's cusync hooks with TileSync: a producer GEMM and a
// consumer GEMM paired through the policy, five runs through the launch
// modes, each against the same chain without sync
// (kernels/gemm/tests/pair_runs.cuh).
#include "kernels/gemm/tests/pair_runs.cuh"
#include "kernels/testing/require_hopper.h"

namespace gemm_test {
namespace {

TEST(GemmGpuHooks, TileSyncPairReorderTileLoads) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x128, TileConfig::T128x256, 0, 0, 1, cusync::ReorderTileLoads);
}

TEST(GemmGpuHooks, TileSyncPairSplitK) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T64x128SplitK, TileConfig::T64x128SplitK, 2, 4, 1);
}

TEST(GemmGpuHooks, TileSyncPair192Straddles) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x192, TileConfig::T128x128, 0, 0, 1, cusync::ReorderTileLoads);
}

// Narrow producer tiles (176, 168 wide): a consumer's 64-wide k-blocks
// straddle two of them; narrow consumers, whole and split.
TEST(GemmGpuHooks, TileSyncPairNarrowStraddles) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x176, TileConfig::T128x96TailSplit, 0, 2, 1);
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x168, TileConfig::T128x144, 0, 0, 1, cusync::ReorderTileLoads);
}

TEST(GemmGpuHooks, TileSyncPairClusterConsumer) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x192, TileConfig::T128x256Pair, 0, 0, 1, cusync::ReorderTileLoads);
}

TEST(GemmGpuHooks, TileSyncPairTailSplitProducerOnly) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x256TailSplit, TileConfig::T128x256, 4, 0, 1);
}

TEST(GemmGpuHooks, TileSyncPairSplitKConsumerOnly) {
  REQUIRE_HOPPER();
  pairRunsAcrossModes<cusync::policy::TileSync>(TileConfig::T128x128, TileConfig::T64x128SplitK, 0, 3, 1);
}

}  // namespace
}  // namespace gemm_test
