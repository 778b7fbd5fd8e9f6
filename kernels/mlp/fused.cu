// The MLP's fused variant (synced.h): both GEMMs as one persistent kernel
// through cusync_gemm::gemmFused, RowSync between them.
#include <memory>

#include "cusync/fused.h"
#include "kernels/gemm/gemm_staged.cuh"
#include "kernels/mlp/synced.h"

namespace cusync_mlp::detail {
namespace {

class FusedPair final : public SyncedPair {
 public:
  explicit FusedPair(const PairPlan& p)
      : st_(p), sched_("mlp-fused", {p.g1.units, p.g2.units}, st_.prod, st_.cons) {}
  void launch(const Buffers& b, cudaStream_t s, cusync::LaunchMode) override {
    using cusync_gemm::Epilogue;
    using Fams = cusync_gemm::Families<cusync_gemm::Family::Bf16NK>;
    cusync_gemm::GemmArgs a1 = st_.plan.g1.args;
    a1.A = b.X, a1.B = b.W1, a1.C = b.H, a1.trace = b.trace1;
    cusync_gemm::GemmArgs a2 = st_.plan.g2.args;
    a2.A = b.H, a2.B = b.W2, a2.C = b.Y, a2.trace = b.trace2;
    cusync_gemm::gemmFused<Fams, cusync_gemm::Epilogues<Epilogue::Gelu, Epilogue::SwiGLU>,
                           cusync_gemm::Epilogues<Epilogue::Identity>>(a1, st_.prod, a2, st_.cons, sched_, s);
  }

 private:
  StagePair<cusync::policy::RowSync> st_;
  cusync::FusedSchedule<> sched_;
};

}  // namespace

std::unique_ptr<SyncedPair> makeFusedPair(const PairPlan& p) { return std::make_unique<FusedPair>(p); }

}  // namespace cusync_mlp::detail
