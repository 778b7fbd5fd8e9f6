// gemm() without synchronization, and the launch set-up it shares with the
// convolution's conv2d() (host/nosync.h).
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cusync/programmatic_launch.h"
#include "cusync/stage.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/host/nosync.h"

namespace cusync_gemm {

namespace detail {

const NoSyncLaunch& noSyncLaunch() {
  static const NoSyncLaunch l = [] {
    NoSyncLaunch r;
    r.usePdl = !envSwitchOff(kEnvPdl);
    r.pdl = cusync::programmaticDependentLaunch();
    r.flags.waitPrior = r.usePdl;
    r.flags.staticFirst = !envSwitchOff(kEnvStaticFirst);
    r.flags.staticAll = !envSwitchOff(kEnvStaticAll);
    r.flags.bEvictFirst = !envSwitchOff(kEnvEvictFirst);
    return r;
  }();
  return l;
}

cudaLaunchConfig_t noSyncBase(cudaStream_t stream) {
  const NoSyncLaunch& l = noSyncLaunch();
  cudaLaunchConfig_t base = {};
  base.stream = stream;
  base.attrs = const_cast<cudaLaunchAttribute*>(&l.pdl);
  base.numAttrs = l.usePdl ? 1 : 0;
  return base;
}

NoSyncStage noSyncStage(const GemmArgs& a, cudaStream_t stream, int sms) {
  using Stage = cusync::Stage<cusync::policy::NoSync, cusync::policy::NoSync>;
  const cusync::Dim3 grid = stageGrid(a, a.config);
  const cusync::Dim3 tile = stageTile(a, a.config);
  const uint32_t takers = ticketBlocks(a, a.config, sms);
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) throwCuda(e, "cudaGetDevice");
  using Key = std::tuple<int, cudaStream_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, int>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Stage>> stages;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = stages[Key{dev, stream, grid.x, grid.y, tile.x, tile.y, takers, static_cast<int>(a.config)}];
  if (!slot) {
    slot = std::make_unique<Stage>("gemm", grid, tile);
    slot->setOrder(cusync::GroupedOrder{orderGroup(a.config)});
  }
  return NoSyncStage{slot->view(takers), &slot->workspace()};
}

}  // namespace detail

void gemm(const GemmArgs& args, cudaStream_t stream) {
  checkArgs(args);
  const detail::DeviceInfo& d = detail::requireHopper();
  GemmArgs a = args;
  a.config = resolveConfig(args, d.sms, LaunchContext::Standalone);
  const uint32_t blocks = persistentBlocks(a, a.config, d.sms);
  const detail::NoSyncStage s = detail::noSyncStage(a, stream, d.sms);
  const cudaLaunchConfig_t base = detail::noSyncBase(stream);
  const detail::KernelFlags& flags = detail::noSyncLaunch().flags;
  switch (detail::familyOf(a)) {
    case detail::Family::Bf16NK: return detail::launchNoSync<detail::Family::Bf16NK>(a, s, blocks, base, flags);
    case detail::Family::Bf16KN: return detail::launchNoSync<detail::Family::Bf16KN>(a, s, blocks, base, flags);
    case detail::Family::F16NK: return detail::launchNoSync<detail::Family::F16NK>(a, s, blocks, base, flags);
    case detail::Family::F16KN: return detail::launchNoSync<detail::Family::F16KN>(a, s, blocks, base, flags);
  }
}

}  // namespace cusync_gemm
