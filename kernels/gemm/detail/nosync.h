// The library's NoSync instantiations, one translation unit per (type, B layout).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "cusync/policy/no_sync.h"
#include "cusync/stage_view.h"
#include "kernels/gemm/detail/host.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

using NoSyncView = cusync::StageView<cusync::policy::NoSync, cusync::policy::NoSync>;

// gemm() launches each GEMM as a programmatic dependent of the previous
// kernel in its stream (PDL), with EpiParams::waitPrior: its blocks may be
// placed and set up their barriers while that kernel's last blocks finish,
// and wait for it (griddepcontrol.wait) before any global memory access.
// After a kernel that does not trigger dependents this is an ordinary launch.
// CUSYNC_GEMM_PDL=0 in the environment turns it off (ordinary launches).
// Each block also starts with the tile at its own index, without a ticket
// (EpiParams::staticFirst); CUSYNC_GEMM_STATIC_FIRST=0 turns that off.
// Where weightsEvictFirst() says so, B's loads ask L2 to evict them first
// (EpiParams::bEvictFirst); CUSYNC_GEMM_B_EVICT_FIRST=0 turns that off.
// Tiles launches take every later tile statically too (EpiParams::staticAll:
// block b computes tiles b, b + blocks, ...; NOTES.md v14e);
// CUSYNC_GEMM_STATIC_ALL=0 turns that off.
inline LaunchOpts noSyncLaunchOpts() {
  static const LaunchOpts o = [] {
    auto off = [](const char* name) {
      const char* e = std::getenv(name);
      return e != nullptr && e[0] == '0';
    };
    LaunchOpts r{};
    if (!off("CUSYNC_GEMM_PDL")) r = LaunchOpts{programmaticLaunchAttr(), 1, true};
    r.staticFirst = !off("CUSYNC_GEMM_STATIC_FIRST");
    r.bEvictFirst = !off("CUSYNC_GEMM_B_EVICT_FIRST");
    r.staticAll = !off("CUSYNC_GEMM_STATIC_ALL");
    return r;
  }();
  return o;
}

#define CUSYNC_GEMM_NOSYNC_DECL(name) \
  void name(const GemmArgs& a, TileConfig c, const NoSyncView& v, uint32_t blocks, cudaStream_t s);
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncBf16NK)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncBf16KN)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncF16NK)
CUSYNC_GEMM_NOSYNC_DECL(runNoSyncF16KN)
#undef CUSYNC_GEMM_NOSYNC_DECL

}  // namespace cusync_gemm::detail
