// The synced variants' stage pairs behind one interface; each policy's pair
// is built in its own translation unit (sync_*.cu) to compile in parallel.
#pragma once

#include <memory>

#include <cuda_runtime_api.h>

#include "cusync/launch_mode.h"
#include "kernels/mlp/mlp.h"
#include "kernels/mlp/mlp_plan.h"

namespace cusync_mlp::detail {

class SyncedPair {
 public:
  virtual ~SyncedPair() = default;
  // GEMM1 then GEMM2 on one stream, LaunchMode::Pdl placement.
  virtual void launch(const Buffers& b, cudaStream_t s, cusync::LaunchMode mode) = 0;
};

std::unique_ptr<SyncedPair> makeWholeSyncPair(const PairPlan& p);
std::unique_ptr<SyncedPair> makeRowSyncPair(const PairPlan& p);
std::unique_ptr<SyncedPair> makeTileSyncPair(const PairPlan& p);

}  // namespace cusync_mlp::detail
