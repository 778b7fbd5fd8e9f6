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
    const cusync_gemm::GemmArgs a1 = st_.gemm1Args(b), a2 = st_.gemm2Args(b);
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
