// conv2d() without synchronization: the GEMM's launch set-up without a
// pipeline (kernels/gemm/host/nosync.h) with the conv's kernels.
#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch.cuh"
#include "kernels/gemm/host/nosync.h"

namespace cusync_conv {

void conv2d(const Conv2dArgs& args, cudaStream_t stream) {
  namespace gd = cusync_gemm::detail;
  checkArgs(args);
  const gd::DeviceInfo& d = gd::requireHopper();
  const Conv2dArgs a = resolveLaunch(args, d.sms, cusync_gemm::LaunchContext::Standalone);
  const cusync_gemm::GemmArgs g = gemmOf(a);
  const uint32_t blocks = cusync_gemm::persistentBlocks(g, g.config, d.sms);
  const gd::NoSyncStage s = gd::noSyncStage(g, stream, d.sms);
  detail::launchConv(a, g, s.view, *s.workspace, blocks, gd::noSyncBase(stream), gd::noSyncLaunch().flags);
}

}  // namespace cusync_conv
