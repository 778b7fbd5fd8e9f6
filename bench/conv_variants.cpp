// The variants of `cusync-bench conv` (conv_variants.h). What this binary has
// depends on what CMake found: the conv kernels (target cusync_conv,
// CUSYNC_HAVE_CONV) and cuDNN (CUSYNC_HAVE_CUDNN).
#include "conv_variants.h"

#include <string>
#include <vector>

#include "cusync/error.h"

#ifdef CUSYNC_HAVE_CUDNN
#include "kernels/baseline/cudnn_conv.h"
#endif
#ifdef CUSYNC_HAVE_CONV
#include <map>
#include <tuple>

#include "kernels/conv/chain.h"
#include "kernels/conv/chain_plan.h"
#endif

#ifdef CUSYNC_HAVE_CONV
struct ConvPairStages {
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>;
  std::map<Key, std::unique_ptr<cusync_conv::ConvPair>> pairs;
};
#else
struct ConvPairStages {};
#endif

namespace {

// Our convolution: cusync_conv::conv2d.
void oursLayer(const cusync_conv::Conv2dArgs& a, ConvRunEnv&, cudaStream_t s) {
#ifdef CUSYNC_HAVE_CONV
  cusync_conv::conv2d(a, s);
#else
  (void)a, (void)s;
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv", "built without the conv kernels");
#endif
}

#ifdef CUSYNC_HAVE_CUDNN
cusync_baseline::ConvShape shapeOf(const cusync_conv::Conv2dArgs& a) {
  cusync_baseline::ConvShape s;
  s.N = a.N, s.H = a.H, s.W = a.W, s.C = a.C, s.K = a.K;
  s.R = a.R, s.S = a.S, s.padH = a.padH, s.padW = a.padW, s.strideH = a.strideH, s.strideW = a.strideW;
  return s;
}

cusync_baseline::CudnnConvBuffers buffersOf(const cusync_conv::Conv2dArgs& a) {
  cusync_baseline::CudnnConvBuffers b;
  b.x = a.x, b.w = a.w, b.y = a.y, b.bias = a.bias, b.residual = a.residual;
  return b;
}

cusync_baseline::CudnnEpilogue epilogueOf(const cusync_conv::Conv2dArgs& a) {
  switch (a.epilogue) {
    case cusync_conv::ConvEpilogue::BiasRelu: return cusync_baseline::CudnnEpilogue::BiasRelu;
    case cusync_conv::ConvEpilogue::BiasResidualRelu: return cusync_baseline::CudnnEpilogue::BiasResidualRelu;
    case cusync_conv::ConvEpilogue::Bias: break;
  }
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv", "the cuDNN baseline has no Bias-only epilogue");
}

cusync_baseline::CudnnConv& cudnnOf(ConvRunEnv& env) {
  if (!env.cudnn) throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv", "no cuDNN in this run");
  return *env.cudnn;
}
#endif

// cuDNN's convolution, with the layer's epilogue or without any.
void cudnnLayer(const cusync_conv::Conv2dArgs& a, ConvRunEnv& env, cudaStream_t s, bool epilogue) {
#ifdef CUSYNC_HAVE_CUDNN
  cudnnOf(env).run(shapeOf(a), epilogue ? epilogueOf(a) : cusync_baseline::CudnnEpilogue::None, buffersOf(a), s);
#else
  (void)a, (void)env, (void)s, (void)epilogue;
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv", "built without cuDNN");
#endif
}

#ifdef CUSYNC_HAVE_CONV
cusync_conv::ConvLayer layerOf(const cusync_conv::Conv2dArgs& a) {
  return cusync_conv::ConvLayer{a.C, a.K, a.R, a.padH, a.strideH, a.epilogue};
}

// The pair of variant v for p's shapes: made on first use (prepareConvPair
// makes them before any capture), kept for the run.
cusync_conv::ConvPair& pairOf(const ConvPairArgs& p, ConvRunEnv& env, cusync_conv::ChainVariant v) {
  if (!env.stages) env.stages = std::make_shared<ConvPairStages>();
  const cusync_conv::Conv2dArgs &a = p.first, &b = p.second;
  const ConvPairStages::Key key{int(v), a.N, a.H, a.W, a.C, a.K, b.K, a.R, a.strideH, b.R, int(b.epilogue)};
  std::unique_ptr<cusync_conv::ConvPair>& slot = env.stages->pairs[key];
  if (!slot) slot = std::make_unique<cusync_conv::ConvPair>(a.N, a.H, a.W, layerOf(a), layerOf(b), v);
  return *slot;
}

void syncedPair(const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s, cusync_conv::ChainVariant v) {
  cusync_conv::PairBuffers b;
  b.x = p.first.x, b.w1 = p.first.w, b.bias1 = p.first.bias, b.y1 = p.first.y;
  b.w2 = p.second.w, b.bias2 = p.second.bias, b.residual2 = p.second.residual, b.y2 = p.second.y;
  b.trace1 = p.first.trace, b.trace2 = p.second.trace;
  pairOf(p, env, v).run(b, s);
}
#else
enum class NoChain { Pdl, TileSync, Fused };
void syncedPair(const ConvPairArgs&, ConvRunEnv&, cudaStream_t, NoChain) {
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv", "built without the conv kernels");
}
#endif

#ifdef CUSYNC_HAVE_CONV
using Chain = cusync_conv::ChainVariant;
#else
using Chain = NoChain;
#endif

}  // namespace

const std::vector<ConvVariant>& convVariants() {
  static const std::vector<ConvVariant> table = {
      {"cudnn", false, kHaveCudnn, "both layers by cuDNN, its fastest algorithm per layer, bias + ReLU fused or not",
       [](const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s) {
         cudnnLayer(p.first, env, s, true);
         cudnnLayer(p.second, env, s, true);
       }},
      {"nosync", false, kHaveConv, "our two convolutions (cusync_conv::conv2d) in stream order, no cusync",
       [](const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s) {
         oursLayer(p.first, env, s);
         oursLayer(p.second, env, s);
       }},
      {"pdl", true, kHaveConv,
       "layer 2 launched early (programmatic dependent launch), waiting for all of layer 1 (WholeSync)",
       [](const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s) { syncedPair(p, env, s, Chain::Pdl); }},
      {"tilesync", true, kHaveConv,
       "layer 2's tiles wait for the layer-1 tiles under their filter window, halo included (Conv2DTileSync), PDL "
       "launch",
       [](const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s) { syncedPair(p, env, s, Chain::TileSync); }},
      {"fused", true, kHaveConv,
       "both layers in one persistent kernel on one tile configuration (of the two layers', the cheaper for the "
       "pair), layer 2's tiles waiting as in tilesync",
       [](const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t s) { syncedPair(p, env, s, Chain::Fused); },
#ifdef CUSYNC_HAVE_CONV
       [](const ConvPairArgs& p) { return cusync_conv::fusedPairRefusal(p.first, p.second); }},
#else
       nullptr},
#endif
  };
  return table;
}

const std::vector<ConvSingle>& convSingles() {
  static const std::vector<ConvSingle> table = {
      {"ours", kHaveConv, oursLayer},
      {"cudnn", kHaveCudnn,
       [](const cusync_conv::Conv2dArgs& a, ConvRunEnv& env, cudaStream_t s) { cudnnLayer(a, env, s, true); }},
      {"cudnn-conv", kHaveCudnn,
       [](const cusync_conv::Conv2dArgs& a, ConvRunEnv& env, cudaStream_t s) { cudnnLayer(a, env, s, false); }},
  };
  return table;
}

void prepareConvPair(const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t stream) {
#ifdef CUSYNC_HAVE_CONV
  // Every pair variant the table runs on p (its row bears the variant's name).
  for (cusync_conv::ChainVariant c :
       {cusync_conv::ChainVariant::Pdl, cusync_conv::ChainVariant::TileSync, cusync_conv::ChainVariant::Fused})
    for (const ConvVariant& v : convVariants())
      if (v.name == cusync_conv::toString(c) && v.built && !(v.notFor && !v.notFor(p).empty())) pairOf(p, env, c);
#endif
#ifdef CUSYNC_HAVE_CUDNN
  if (!env.cudnn) return;
  for (const cusync_conv::Conv2dArgs* a : {&p.first, &p.second}) {
    env.cudnn->plan(shapeOf(*a), epilogueOf(*a), buffersOf(*a), stream);
    env.cudnn->plan(shapeOf(*a), cusync_baseline::CudnnEpilogue::None, buffersOf(*a), stream);
  }
#else
  (void)p, (void)env, (void)stream;
#endif
}

std::string cudnnPlanOf(const cusync_conv::Conv2dArgs& a, bool epilogue, ConvRunEnv& env) {
#ifdef CUSYNC_HAVE_CUDNN
  if (!env.cudnn) return "";
  return env.cudnn->describe(shapeOf(a), epilogue ? epilogueOf(a) : cusync_baseline::CudnnEpilogue::None);
#else
  (void)a, (void)epilogue, (void)env;
  return "";
#endif
}
