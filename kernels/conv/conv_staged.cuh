// conv2d as a stage of a cusync pipeline: include this from a CUDA
// translation unit built for sm_90a.
//
//   Conv2dArgs c1 = ..., c2 = ...;   // c2 reads c1's output
//   const GemmArgs g1 = gemmOf(c1), g2 = gemmOf(c2);  // with convConfig(cI, sms, LaunchContext::Stage)
//   cusync::policy::Conv2DTileSync edge{...};         // c2's filter over c1's output
//   cusync::Stage<NoSync, Conv2DTileSync> s1("conv1", stageGrid(g1, g1.config), stageTile(g1, g1.config), {}, edge);
//   cusync::Stage<Conv2DTileSync, NoSync> s2("conv2", stageGrid(g2, g2.config), stageTile(g2, g2.config), edge, {});
//   cusync::pair(s1, s2);
//   cusync::Pipeline pipe(cusync::LaunchMode::Pdl, stream);
//   cusync_conv::conv2d(c1, s1, pipe);
//   cusync_conv::conv2d(c2, s2, pipe);
//   pipe.finish();
//
// The launch is the GEMM's (cusync_gemm::gemm(args, stage, pipeline)) with
// the conv's kernels: the stage's grid and tile must match the conv's
// configuration for a stage (convConfig(.., LaunchContext::Stage)), and a
// call instantiates the conv's kernels (every configuration and epilogue)
// for the stage's policies in the calling translation unit.
#pragma once

#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch.cuh"
#include "kernels/gemm/gemm_staged.cuh"

namespace cusync_conv {

template <class StageT>
void conv2d(const Conv2dArgs& args, const StageT& stage, cusync::Pipeline& pipe) {
  namespace gd = cusync_gemm::detail;
  checkArgs(args);
  if constexpr (!cusync::policy::isNoSync<typename StageT::View::In>) detail::rejectPackedWaits(args);
  const gd::DeviceInfo& d = gd::requireHopper();
  const Conv2dArgs a = resolveLaunch(args, d.sms, cusync_gemm::LaunchContext::Stage);
  const cusync_gemm::GemmArgs g = gemmOf(a);
  gd::launchAsStage(g, stage, pipe, d.sms,
                    [&](const cudaLaunchConfig_t& cfg, const typename StageT::View& view, gd::StageWorkspace& ws,
                        uint32_t blocks, const gd::KernelFlags& flags) {
                      detail::launchConv(a, g, view, ws, blocks, cfg, flags);
                    });
}

}  // namespace cusync_conv
