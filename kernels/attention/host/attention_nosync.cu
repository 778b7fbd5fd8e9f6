// attention(args, stream): the kernel without a stage, as a programmatic
// dependent launch of the kernel before it.
#include "cusync/programmatic_launch.h"
#include "cusync/stage_view.h"
#include "kernels/attention/host/attention_launch.cuh"

namespace cusync_attn {

void attention(const AttentionArgs& a, cudaStream_t stream) {
  checkArgs(a);
  const cusync_gemm::detail::DeviceInfo& d = cusync_gemm::detail::requireHopper();
  const AttentionPlan p = planAttention(a, d.sms);
  cudaLaunchAttribute attr[1] = {cusync::programmaticDependentLaunch()};
  cudaLaunchConfig_t cfg = {};
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  using View = cusync::StageView<cusync::policy::NoSync, cusync::policy::NoSync>;
  // Without a stage nothing waits on the order of tiles: longest first.
  detail::launchAttention(a, p, View{}, cfg, /*waitPrior=*/true, /*heavyFirst=*/true);
}

}  // namespace cusync_attn
