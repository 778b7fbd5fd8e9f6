// The convolution's kernel launch: the GEMM kernel with the im2col A loader,
// dispatched from a configuration (kConvConfigs) and epilogue to an
// instantiation. Included by the translation units that instantiate conv
// kernels, built for sm_90a.
#pragma once

#include <cuda_bf16.h>

#include <string>

#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch_host.h"
#include "kernels/conv/kernel/im2col_loader.cuh"
#include "kernels/gemm/host/launch.cuh"

namespace cusync_conv::detail {

namespace gd = cusync_gemm::detail;
using gd::KernelFlags;
using gd::StageParams;
using bf16 = __nv_bfloat16;

// The epilogues the convolution's kernels are built for (conv.h's three).
using ConvEpilogues = gd::Epilogues<cusync_gemm::Epilogue::Bias, cusync_gemm::Epilogue::Relu,
                                    cusync_gemm::Epilogue::ResidualRelu>;

template <class Shape>
constexpr bool kBuiltForConv = [] {
  for (cusync_gemm::TileConfig c : kConvConfigs) {
    const cusync_gemm::TileConfigRow* r = cusync_gemm::findTileConfig(c);
    if (r->bm == Shape::BM && r->bn == Shape::BN && r->schedule == Shape::kSchedule &&
        r->ringSlots == Shape::kRingSlots && r->residentKBlocks == Shape::kResidentKBlocks)
      return true;
  }
  return false;
}();

// One conv stage's kernel parameters: the GEMM's (g = gemmOf(a), config
// resolved) with A through the im2col map and B the KRSC filter as [K, R S C].
template <class Shape, class View>
StageParams<bf16, View> buildConvStageParams(const Conv2dArgs& a, const cusync_gemm::GemmArgs& g, const View& view,
                                             gd::StageWorkspace& ws, uint32_t blocks, bool evictFirstAllowed) {
  StageParams<bf16, View> sp = gd::buildStageCommon<Shape, bf16>(g, view, ws, blocks, evictFirstAllowed);
  sp.tmA = makeIm2colMap(a, Shape::BM);
  sp.tmB = gd::makeTensorMap2D(a.w, true, static_cast<uint64_t>(a.R) * a.S * a.C, a.K, gd::kBK,
                               gd::kBRowsPerBlock<Shape>);
  sp.im2col = im2colGeometry(a);
  return sp;
}

// Launches the conv of `a` as one kernel of configuration g.config, of the
// stage of `view` and workspace `ws`.
template <class View>
void launchConv(const Conv2dArgs& a, const cusync_gemm::GemmArgs& g, const View& view, gd::StageWorkspace& ws,
                uint32_t blocks, const cudaLaunchConfig_t& base, const KernelFlags& flags) {
  gd::forTableRow(
      g.config,
      [&](auto row) {
        using Shape = gd::KernelShapeOf<decltype(row)::value>;
        if constexpr (!kBuiltForConv<Shape>) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv2d",
                              std::string("tile configuration ") + cusync_gemm::toString(g.config) +
                                  " is not built for the convolution");
        } else {
          gd::dispatchEpilogueFn<Shape>(ConvEpilogues{}, g, [&](auto e) {
            auto launchWith = [&](auto loader) {
              gd::launchStageKernel<Shape, bf16, 0, decltype(e)::value, decltype(loader)>(
                  buildConvStageParams<Shape>(a, g, view, ws, blocks, flags.bEvictFirst), blocks, base, flags);
            };
            if (!packsFilterTaps(a)) return launchWith(Im2colA{});
            // A packed k-block spans eight filter positions, which a policy's
            // read of the k-block's first column does not describe.
            if constexpr (cusync::policy::isNoSync<typename View::In>)
              launchWith(Im2colPackedTapsA<Shape::BM>{});
            else
              rejectPackedWaits(a);
          });
        }
      },
      std::make_index_sequence<cusync_gemm::kNumTileConfigs>{});
}

// Launches a fused pair (conv_fused.cuh): both convolutions of configuration
// g0.config (== g1.config) in one persistent kernel, the first with bias +
// ReLU, the second with any of the convolution's epilogues.
template <class V0, class V1>
void launchConvFused(const Conv2dArgs& a0, const cusync_gemm::GemmArgs& g0, const V0& v0, gd::StageWorkspace& ws0,
                     const Conv2dArgs& a1, const cusync_gemm::GemmArgs& g1, const V1& v1, gd::StageWorkspace& ws1,
                     const cusync::FusedScheduleView& f, uint32_t blocks, const cudaLaunchConfig_t& base) {
  gd::forTableRow(
      g0.config,
      [&](auto row) {
        using Shape = gd::KernelShapeOf<decltype(row)::value>;
        if constexpr (!kBuiltForConv<Shape> || Shape::kResidentKBlocks > 0 ||
                      (Shape::kSchedule != cusync_gemm::Schedule::WholeTiles &&
                       Shape::kSchedule != cusync_gemm::Schedule::SplitK)) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv pair",
                              std::string("tile configuration ") + cusync_gemm::toString(g0.config) +
                                  " cannot run a fused pair: it runs whole tiles or 64-row split tiles, the filter "
                                  "through the ring");
        } else {
          gd::dispatchEpilogueFn<Shape>(gd::Epilogues<cusync_gemm::Epilogue::Relu>{}, g0, [&](auto e0) {
            gd::dispatchEpilogueFn<Shape>(ConvEpilogues{}, g1, [&](auto e1) {
              gd::launchFusedStageKernel<Shape, bf16, 0, decltype(e0)::value, decltype(e1)::value, Im2colA>(
                  buildConvStageParams<Shape>(a0, g0, v0, ws0, blocks, true),
                  buildConvStageParams<Shape>(a1, g1, v1, ws1, blocks, true), f, blocks, base);
            });
          });
        }
      },
      std::make_index_sequence<cusync_gemm::kNumTileConfigs>{});
}

}  // namespace cusync_conv::detail
