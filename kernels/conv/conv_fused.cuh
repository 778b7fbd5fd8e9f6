// Two convolutions as one fused kernel (cusync/fused.h): include this from a
// CUDA translation unit built for sm_90a.
//
//   ConvFusedPlan p = planConvFused(N, H, W, first, second, sms);   // chain_plan.h
//   cusync::Stage<NoSync, Conv2DTileSync> s1("conv1", p.pair.first.grid, p.pair.first.tile, {}, p.pair.edge,
//                                             p.pair.first.opts);
//   cusync::Stage<Conv2DTileSync, NoSync> s2("conv2", p.pair.second.grid, p.pair.second.tile, p.pair.edge, {});
//   cusync::pair(s1, s2);
//   cusync::FusedSchedule<> sched("conv-fused", {p.units1, p.units2}, s1, s2);
//   conv2dFused(c1, s1, c2, s2, sched, stream);   // cI: p.pair's args with the run's pointers
//
// One persistent grid takes the first layer's units, then the second's, from
// the schedule's counter; a second-layer tile waits through its stage's input
// policy for the first-layer tiles it reads, so it starts in the first
// layer's last wave with its filter loads already issued. Both layers run one
// configuration (a.config, resolved: planConvFused's), the first with bias +
// ReLU; neither may pack its filter taps (C = 8). Where the first stage is
// flagged WaitsForPriorGrid (planConvFused's plan is), the kernel is a
// programmatic dependent of the kernel before it in the stream.
#pragma once

#include <algorithm>
#include <string>

#include "cusync/fused.h"
#include "kernels/conv/chain_plan.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch.cuh"
#include "kernels/gemm/gemm_staged.cuh"

namespace cusync_conv {

template <class St0, class St1>
void conv2dFused(const Conv2dArgs& first, const St0& stage0, const Conv2dArgs& second, const St1& stage1,
                 const cusync::FusedSchedule<>& schedule, cudaStream_t stream) {
  namespace gd = cusync_gemm::detail;
  checkArgs(first);
  checkArgs(second);
  if (const std::string why = fusedPairRefusal(first, second); !why.empty())
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, schedule.name(), why);
  if (first.config == cusync_gemm::TileConfig::Auto || first.config != second.config)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, schedule.name(),
                        std::string("a fused pair runs both layers on one resolved configuration; got ") +
                            cusync_gemm::toString(first.config) + " and " + cusync_gemm::toString(second.config));
  const gd::DeviceInfo& d = gd::requireHopper();
  const Conv2dArgs a0 = resolveLaunch(first, d.sms, cusync_gemm::LaunchContext::Stage);
  const Conv2dArgs a1 = resolveLaunch(second, d.sms, cusync_gemm::LaunchContext::Stage);
  const cusync_gemm::GemmArgs g0 = gemmOf(a0), g1 = gemmOf(a1);
  gd::checkFusedStage(g0, stage0, schedule, 0, d.sms, "convolution");
  gd::checkFusedStage(g1, stage1, schedule, 1, d.sms, "convolution");
  const uint32_t blocks = std::min<uint32_t>(schedule.units(0) + schedule.units(1), static_cast<uint32_t>(d.sms));
  const gd::FusedLaunchConfig launch(stream, stage0.opts());
  const cusync::FusedScheduleView f = schedule.view(blocks);
  detail::launchConvFused(a0, g0, stage0.view(), stage0.workspace(), a1, g1, stage1.view(), stage1.workspace(), f,
                          blocks, launch.base());
}

}  // namespace cusync_conv
