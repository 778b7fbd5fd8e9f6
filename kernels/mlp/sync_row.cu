// The RowSync stage pair of the MLP (see synced.h).
#include "kernels/mlp/synced_impl.cuh"

namespace cusync_mlp::detail {
std::unique_ptr<SyncedPair> makeRowSyncPair(const PairPlan& p) {
  return std::make_unique<SyncedPairImpl<cusync::policy::RowSync>>(p);
}
}  // namespace cusync_mlp::detail
