// The WholeSync stage pair of the MLP (see synced.h).
#include "kernels/mlp/synced_impl.cuh"

namespace cusync_mlp::detail {
std::unique_ptr<SyncedPair> makeWholeSyncPair(const PairPlan& p) {
  return std::make_unique<SyncedPairImpl<cusync_mlp::WholeSync>>(p);
}
}  // namespace cusync_mlp::detail
