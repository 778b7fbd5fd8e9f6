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

template <Family F>
void launchNoSync(const GemmArgs& a, const NoSyncView& v, uint32_t blocks, const cudaLaunchConfig_t& base,
                  const KernelFlags& flags);
#define CUSYNC_GEMM_NOSYNC_DECL(F)                                                                        \
  template <>                                                                                             \
  void launchNoSync<Family::F>(const GemmArgs&, const NoSyncView&, uint32_t, const cudaLaunchConfig_t&, \
                               const KernelFlags&);
CUSYNC_GEMM_NOSYNC_DECL(Bf16NK)
CUSYNC_GEMM_NOSYNC_DECL(Bf16KN)
CUSYNC_GEMM_NOSYNC_DECL(F16NK)
CUSYNC_GEMM_NOSYNC_DECL(F16KN)
#undef CUSYNC_GEMM_NOSYNC_DECL

}  // namespace cusync_gemm::detail
