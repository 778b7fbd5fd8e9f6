// gemm() without synchronization: a NoSync stage per (device, stream, grid,
// persistent block count, configuration), so that concurrent launches never
// share a ticket counter, and every launch on a counter decodes its tickets
// alike (tile and split schedules count tickets differently).
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cusync/stage.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/host/nosync.h"

namespace cusync_gemm {

namespace {

// gemm() launches each GEMM as a programmatic dependent of the previous
// kernel in its stream (PDL) that waits for it before touching global memory
// (KernelFlags::waitPrior): its blocks may be placed and set up their
// barriers while that kernel's last blocks finish. After a kernel that does
// not trigger dependents this is an ordinary launch. Blocks take their tiles
// statically, and B's loads may carry the evict-first hint (KernelFlags).
// Each choice can be switched off for A/B runs (env.h).
struct NoSyncLaunch {
  cudaLaunchAttribute pdl{};
  bool usePdl = false;
  detail::KernelFlags flags;
};

const NoSyncLaunch& noSyncLaunch() {
  static const NoSyncLaunch l = [] {
    NoSyncLaunch r;
    r.usePdl = !envSwitchOff(kEnvPdl);
    r.pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    r.pdl.val.programmaticStreamSerializationAllowed = 1;
    r.flags.waitPrior = r.usePdl;
    r.flags.staticFirst = !envSwitchOff(kEnvStaticFirst);
    r.flags.staticAll = !envSwitchOff(kEnvStaticAll);
    r.flags.bEvictFirst = !envSwitchOff(kEnvEvictFirst);
    return r;
  }();
  return l;
}

}  // namespace

void gemm(const GemmArgs& args, cudaStream_t stream) {
  using NoSyncStage = cusync::Stage<cusync::policy::NoSync, cusync::policy::NoSync>;
  checkArgs(args);
  const detail::DeviceInfo& d = detail::requireHopper();
  GemmArgs a = args;
  a.config = resolveConfig(args, d.sms, LaunchContext::Standalone);
  const cusync::Dim3 grid = stageGrid(a, a.config);
  const cusync::Dim3 tile = stageTile(a, a.config);
  const uint32_t blocks = persistentBlocks(a, a.config, d.sms);
  const uint32_t takers = ticketBlocks(a, a.config, d.sms);

  using Key = std::tuple<int, cudaStream_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, int>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<NoSyncStage>> stages;
  NoSyncStage* st = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = stages[Key{d.device, stream, grid.x, grid.y, tile.x, tile.y, takers, static_cast<int>(a.config)}];
    if (!slot) {
      slot = std::make_unique<NoSyncStage>("gemm", grid, tile);
      slot->setOrder(cusync::GroupedOrder{orderGroup(a.config)});
    }
    st = slot.get();
  }
  const detail::NoSyncView v = st->view(takers);
  const NoSyncLaunch& l = noSyncLaunch();
  cudaLaunchConfig_t base = {};
  base.stream = stream;
  base.attrs = const_cast<cudaLaunchAttribute*>(&l.pdl);
  base.numAttrs = l.usePdl ? 1 : 0;
  switch (detail::familyOf(a)) {
    case detail::Family::Bf16NK: return detail::launchNoSync<detail::Family::Bf16NK>(a, v, blocks, base, l.flags);
    case detail::Family::Bf16KN: return detail::launchNoSync<detail::Family::Bf16KN>(a, v, blocks, base, l.flags);
    case detail::Family::F16NK: return detail::launchNoSync<detail::Family::F16NK>(a, v, blocks, base, l.flags);
    case detail::Family::F16KN: return detail::launchNoSync<detail::Family::F16KN>(a, v, blocks, base, l.flags);
  }
}

}  // namespace cusync_gemm
