// The synced variants' stage pairs behind one interface; each policy's pair
// is built in a translation unit of its own (generated from
// synced_instance.cu.in) so that they compile in parallel.
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
  // GEMM1 then GEMM2 on one stream, placed by a cusync::Pipeline of `mode`.
  virtual void launch(const Buffers& b, cudaStream_t s, cusync::LaunchMode mode) = 0;
};

// The pair of policy P; specialized for WholeSync, RowSync and TileSync.
template <class P>
std::unique_ptr<SyncedPair> makeSyncedPair(const PairPlan& p);
template <>
std::unique_ptr<SyncedPair> makeSyncedPair<WholeSync>(const PairPlan& p);
template <>
std::unique_ptr<SyncedPair> makeSyncedPair<cusync::policy::RowSync>(const PairPlan& p);
template <>
std::unique_ptr<SyncedPair> makeSyncedPair<cusync::policy::TileSync>(const PairPlan& p);
// The fused variant (planFused): one kernel for both GEMMs; `mode` is ignored.
std::unique_ptr<SyncedPair> makeFusedPair(const PairPlan& p);

}  // namespace cusync_mlp::detail
