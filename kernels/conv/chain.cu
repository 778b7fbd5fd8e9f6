// The conv pairs (chain.h): stages, policies and the pipeline around two
// conv2d launches.
#include "kernels/conv/chain.h"
#include "kernels/conv/chain_plan.h"
#include "kernels/conv/chain_runner.h"

#include <memory>
#include <string>

#include "cusync/launch.h"
#include "cusync/policies.h"
#include "kernels/conv/conv_staged.cuh"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_conv {

const char* toString(ChainVariant v) {
  switch (v) {
    case ChainVariant::NoSync: return "nosync";
    case ChainVariant::Pdl: return "pdl";
    case ChainVariant::TileSync: return "tilesync";
    case ChainVariant::Fused: return "fused";
  }
  return "?";
}

namespace {

// The Stage pair of policy P between the layers, and its pipeline.
template <class P>
struct SyncedStagesOf final : detail::PairRunner {
  ConvStages<P> st;
  cusync::LaunchMode mode;
  std::unique_ptr<cusync::Pipeline> pipe;
  cudaStream_t pipeStream = nullptr;

  SyncedStagesOf(const ConvPairPlan& p, const P& edge, cusync::LaunchMode m) : st(p, edge), mode(m) {}
  void run(const Conv2dArgs& a1, const Conv2dArgs& a2, cudaStream_t s) override {
    if (!pipe || pipeStream != s) pipe = std::make_unique<cusync::Pipeline>(mode, s), pipeStream = s;
    conv2d(a1, st.prod, *pipe);
    conv2d(a2, st.cons, *pipe);
    pipe->finish();
  }
};

}  // namespace

struct ConvPair::Impl {
  Conv2dArgs l1, l2;  // shapes, epilogues and configurations; pointers unset
  std::unique_ptr<detail::PairRunner> stages;
};

ConvPair::ConvPair(int64_t N, int64_t H, int64_t W, const ConvLayer& first, const ConvLayer& second, ChainVariant v,
                   cusync::LaunchMode mode)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (v == ChainVariant::NoSync) {
    // conv2d()'s own configurations; the plan's checks.
    m.l1 = layerArgs(N, H, W, first);
    checkChained(first, second);
    m.l2 = layerArgs(N, m.l1.P(), m.l1.Q(), second);
    return;
  }
  const int sms = cusync_gemm::detail::requireHopper().sms;
  if (v == ChainVariant::Fused) {
    const ConvFusedPlan f = planConvFused(N, H, W, first, second, sms);
    m.l1 = f.pair.first.args;
    m.l2 = f.pair.second.args;
    m.stages = detail::makeFusedRunner(f);
    return;
  }
  const ConvPairPlan p = planConvPair(N, H, W, first, second, sms);
  detail::rejectPackedWaits(p.second.args);  // the second layer waits on the first
  m.l1 = p.first.args;
  m.l2 = p.second.args;
  if (v == ChainVariant::Pdl)
    m.stages = std::make_unique<SyncedStagesOf<cusync::policy::WholeSync>>(p, cusync::policy::WholeSync{}, mode);
  else
    m.stages = std::make_unique<SyncedStagesOf<cusync::policy::Conv2DTileSync>>(p, p.edge, mode);
}

ConvPair::~ConvPair() = default;

Conv2dArgs ConvPair::firstArgs(const PairBuffers& b) const {
  Conv2dArgs a = impl_->l1;
  a.x = b.x, a.w = b.w1, a.bias = b.bias1, a.y = b.y1, a.trace = b.trace1;
  return a;
}
Conv2dArgs ConvPair::secondArgs(const PairBuffers& b) const {
  Conv2dArgs a = impl_->l2;
  a.x = b.y1, a.w = b.w2, a.bias = b.bias2, a.residual = b.residual2, a.y = b.y2, a.trace = b.trace2;
  return a;
}

void ConvPair::run(const PairBuffers& b, cudaStream_t stream) {
  const Conv2dArgs a1 = firstArgs(b), a2 = secondArgs(b);
  if (!impl_->stages) {
    conv2d(a1, stream);
    conv2d(a2, stream);
    return;
  }
  impl_->stages->run(a1, a2, stream);
}

}  // namespace cusync_conv
