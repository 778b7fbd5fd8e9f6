// The library's NoSync instantiations, one translation unit per (type, B layout).
#pragma once

#include <cuda_runtime_api.h>

#include "cusync/policy/no_sync.h"
#include "cusync/stage_view.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

using NoSyncView = cusync::StageView<cusync::policy::NoSync, cusync::policy::NoSync>;

#define CUSYNC_GEMM_NOSYNC_DECL(name) \
  void name(const GemmArgs& a, TileConfig c, const NoSyncView& v, uint32_t blocks, cudaStream_t s);
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncBf16NK)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncBf16KN)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncF16NK)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncF16KN)
#undef CUSYNC_GEMM_NOSYNC_DECL

}  // namespace cusync_gemm::detail
