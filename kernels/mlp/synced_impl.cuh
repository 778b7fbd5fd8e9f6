// Shared body of sync_*.cu: a StagePair with policy P launched in Pdl mode.
#pragma once

#include "kernels/mlp/gemm_launch.cuh"
#include "kernels/mlp/synced.h"

namespace cusync_mlp::detail {

template <class P>
class SyncedPairImpl final : public SyncedPair {
 public:
  explicit SyncedPairImpl(const PairPlan& p) : st_(p) {}
  void launch(const Buffers& b, cudaStream_t s, cusync::LaunchMode mode) override {
    cusync_gemm::GemmArgs a1 = st_.plan.g1.args;
    a1.A = b.X;
    a1.B = b.W1;
    a1.C = b.H;
    a1.trace = b.trace1;
    cusync_gemm::GemmArgs a2 = st_.plan.g2.args;
    a2.A = b.H;
    a2.B = b.W2;
    a2.C = b.Y;
    a2.trace = b.trace2;
    launchStage(a1, st_.prod, st_.plan.g1.blocks, 0, s, mode);
    launchStage(a2, st_.cons, st_.plan.g2.blocks, 1, s, mode);
  }

 private:
  StagePair<P> st_;
};

}  // namespace cusync_mlp::detail
