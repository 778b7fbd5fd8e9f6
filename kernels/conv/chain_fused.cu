// The conv pair's fused variant (chain.h): both layers' stages, the fused
// schedule over their units, and the one-kernel launch (conv_fused.cuh).
#include <memory>

#include "cusync/fused.h"
#include "cusync/policies.h"
#include "kernels/conv/chain_runner.h"
#include "kernels/conv/conv_fused.cuh"

namespace cusync_conv::detail {
namespace {

using cusync::policy::Conv2DTileSync;

class FusedRunner final : public PairRunner {
 public:
  explicit FusedRunner(const ConvFusedPlan& p)
      : st_(p.pair, p.pair.edge), sched_("conv-fused", {p.units1, p.units2}, st_.prod, st_.cons) {}
  void run(const Conv2dArgs& a1, const Conv2dArgs& a2, cudaStream_t s) override {
    conv2dFused(a1, st_.prod, a2, st_.cons, sched_, s);
  }

 private:
  ConvStages<Conv2DTileSync> st_;
  cusync::FusedSchedule<> sched_;
};

}  // namespace

std::unique_ptr<PairRunner> makeFusedRunner(const ConvFusedPlan& p) { return std::make_unique<FusedRunner>(p); }

}  // namespace cusync_conv::detail
