// The conv pairs (chain.h): stages, policies and the pipeline around two
// conv2d launches.
#include "kernels/conv/chain.h"

#include <memory>
#include <string>

#include "cusync/launch.h"
#include "cusync/optimizations.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"
#include "kernels/conv/conv_staged.cuh"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_conv {

const char* toString(ChainVariant v) {
  switch (v) {
    case ChainVariant::NoSync: return "nosync";
    case ChainVariant::Pdl: return "pdl";
    case ChainVariant::TileSync: return "tilesync";
  }
  return "?";
}

namespace {

using cusync::policy::NoSync;

// The Stage pair of policy P between the layers, and its pipeline.
struct SyncedStages {
  virtual ~SyncedStages() = default;
  virtual void run(const Conv2dArgs& a1, const Conv2dArgs& a2, cudaStream_t s) = 0;
};

template <class P>
struct SyncedStagesOf final : SyncedStages {
  cusync::Stage<NoSync, P> prod;
  cusync::Stage<P, NoSync> cons;
  cusync::LaunchMode mode;
  std::unique_ptr<cusync::Pipeline> pipe;
  cudaStream_t pipeStream = nullptr;

  SyncedStagesOf(const cusync_gemm::GemmArgs& g1, const cusync_gemm::GemmArgs& g2, const P& edge,
                 cusync::LaunchMode m)
      : prod("conv1", cusync_gemm::stageGrid(g1, g1.config), cusync_gemm::stageTile(g1, g1.config), {}, edge,
             cusync::WaitsForPriorGrid | (P::kSingleWriter ? cusync::NoAtomicAdd : 0)),
        cons("conv2", cusync_gemm::stageGrid(g2, g2.config), cusync_gemm::stageTile(g2, g2.config), edge, {},
             cusync::ReorderTileLoads),
        mode(m) {
    prod.setOrder(cusync::RowMajorOrder{});
    cons.setOrder(cusync::RowMajorOrder{});
    cusync::pair(prod, cons);
  }
  void run(const Conv2dArgs& a1, const Conv2dArgs& a2, cudaStream_t s) override {
    if (!pipe || pipeStream != s) pipe = std::make_unique<cusync::Pipeline>(mode, s), pipeStream = s;
    conv2d(a1, prod, *pipe);
    conv2d(a2, cons, *pipe);
    pipe->finish();
  }
};

}  // namespace

struct ConvPair::Impl {
  Conv2dArgs l1, l2;  // shapes, epilogues and configurations; pointers unset
  ChainVariant variant;
  std::unique_ptr<SyncedStages> stages;
};

ConvPair::ConvPair(int64_t N, int64_t H, int64_t W, const ConvLayer& first, const ConvLayer& second, ChainVariant v,
                   cusync::LaunchMode mode)
    : impl_(std::make_unique<Impl>()) {
  auto layer = [&](const ConvLayer& l, int64_t h, int64_t w) {
    Conv2dArgs a;
    a.N = N, a.H = h, a.W = w, a.C = l.C, a.K = l.K;
    a.R = a.S = l.R;
    a.padH = a.padW = l.pad;
    a.strideH = a.strideW = l.stride;
    a.epilogue = l.epilogue;
    // Shape checks only: pointers come with each run.
    alignas(16) static const char probe[16] = {};
    Conv2dArgs c = a;
    c.x = c.w = probe;
    c.y = const_cast<char*>(probe);
    if (a.epilogue == ConvEpilogue::BiasResidualRelu) c.residual = probe;
    checkArgs(c);
    return a;
  };
  Impl& m = *impl_;
  m.variant = v;
  m.l1 = layer(first, H, W);
  if (second.C != first.K)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv pair",
                        "the second layer reads " + std::to_string(second.C) + " channels where the first writes " +
                            std::to_string(first.K));
  m.l2 = layer(second, m.l1.P(), m.l1.Q());
  if (v == ChainVariant::NoSync) return;
  const int sms = cusync_gemm::detail::requireHopper().sms;
  m.l1.config = convConfig(m.l1, sms, cusync_gemm::LaunchContext::Stage);
  m.l2.config = convConfig(m.l2, sms, cusync_gemm::LaunchContext::Stage);
  const cusync_gemm::GemmArgs g1 = gemmOf(m.l1), g2 = gemmOf(m.l2);
  if (v == ChainVariant::Pdl) {
    m.stages = std::make_unique<SyncedStagesOf<cusync::policy::WholeSync>>(g1, g2, cusync::policy::WholeSync{}, mode);
  } else {
    cusync::policy::Conv2DTileSync edge;
    edge.R = static_cast<uint32_t>(m.l2.R), edge.S = static_cast<uint32_t>(m.l2.S);
    edge.C = static_cast<uint32_t>(m.l2.C);
    edge.H = static_cast<uint32_t>(m.l2.H), edge.W = static_cast<uint32_t>(m.l2.W);
    edge.padH = static_cast<uint32_t>(m.l2.padH), edge.padW = static_cast<uint32_t>(m.l2.padW);
    edge.strideH = static_cast<uint32_t>(m.l2.strideH), edge.strideW = static_cast<uint32_t>(m.l2.strideW);
    edge.N = static_cast<uint32_t>(N);
    m.stages = std::make_unique<SyncedStagesOf<cusync::policy::Conv2DTileSync>>(g1, g2, edge, mode);
  }
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
