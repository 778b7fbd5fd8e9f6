// gemm()'s kernels: the NoSync instantiations of every family, one
// translation unit each (generated from nosync_instance.cu.in).
#pragma once

#include <cuda_runtime_api.h>

#include "cusync/policy/no_sync.h"
#include "cusync/stage_view.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/kernel/params.cuh"

namespace cusync_gemm::detail {

using NoSyncView = cusync::StageView<cusync::policy::NoSync, cusync::policy::NoSync>;

// How a launch without synchronization runs (gemm(), and conv2d() of
// kernels/conv): as a programmatic dependent (PDL) of the kernel before it
// in the stream that waits for it before touching global memory
// (KernelFlags::waitPrior), so that its blocks may be placed and set up
// their barriers while that kernel's last blocks finish; after a kernel that
// does not trigger dependents this is an ordinary launch. Blocks take their
// tiles statically, and B's loads may carry the evict-first hint
// (KernelFlags). Each choice can be switched off for A/B runs (env.h).
struct NoSyncLaunch {
  cudaLaunchAttribute pdl{};
  bool usePdl = false;
  KernelFlags flags;
};
const NoSyncLaunch& noSyncLaunch();
// The launch configuration's stream and attributes for such a launch on `stream`.
cudaLaunchConfig_t noSyncBase(cudaStream_t stream);
// The view and workspace of a NoSync stage for a launch of `a` (config
// resolved) on `stream`: one stage per (device, stream, grid, ticket blocks,
// configuration), so that concurrent launches never share a ticket counter
// or split-K buffers, and every launch on a counter decodes its tickets alike
// (tile and split schedules count tickets differently). These stages are
// held until the program exits.
struct NoSyncStage {
  NoSyncView view;
  StageWorkspace* workspace = nullptr;
};
NoSyncStage noSyncStage(const GemmArgs& a, cudaStream_t stream, int sms);

template <Family F>
void launchNoSync(const GemmArgs& a, const NoSyncStage& s, uint32_t blocks, const cudaLaunchConfig_t& base,
                  const KernelFlags& flags);
#define CUSYNC_GEMM_NOSYNC_DECL(F)                                                                         \
  template <>                                                                                              \
  void launchNoSync<Family::F>(const GemmArgs&, const NoSyncStage&, uint32_t, const cudaLaunchConfig_t&, \
                               const KernelFlags&);
CUSYNC_GEMM_NOSYNC_DECL(Bf16NK)
CUSYNC_GEMM_NOSYNC_DECL(Bf16KN)
CUSYNC_GEMM_NOSYNC_DECL(F16NK)
CUSYNC_GEMM_NOSYNC_DECL(F16KN)
#undef CUSYNC_GEMM_NOSYNC_DECL

}  // namespace cusync_gemm::detail
