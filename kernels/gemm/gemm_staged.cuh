// GEMM launch through a caller's cusync::Stage, for pipelines: include this
// from a CUDA translation unit built for sm_90a (CUDA_ARCHITECTURES 90a).
//
//   const TileConfig c = resolveConfig(args, numSMs);
//   cusync::Stage<NoSync, RowSync> st("gemm1", stageGrid(args, c), stageTile(c));
//   args.config = c;
//   cusync_gemm::gemm(args, st, stream);
//
// The stage's grid and tile must match the resolved configuration. The
// launch is persistent: view(ticketBlocks(args, c, SMs)) is what the kernel
// receives (min(SMs, tiles), or min(SMs, tiles x splits) for T64x128SplitK).
//
// Compile time: one gemm(args, stage) call instantiates every configuration x
// epilogue of the four families (bf16 / fp16 x B layout) for the stage's
// policies, some 180 kernels per policy pair, in the calling translation unit.
// To spread them over several units, declare them extern where gemm() is
// called and instantiate each family in a unit of its own:
//
//   CUSYNC_GEMM_EXTERN_STAGED(NoSync, RowSync)                     // caller
//   CUSYNC_GEMM_STAGED_FAMILY(__nv_bfloat16, 0, NoSync, RowSync)   // one per unit
//
// (family: element type, 0 for B as [N, K] or 1 for [K, N]; policies as
// written in the caller's scope, e.g. cusync::policy::RowSync).
#pragma once

#include "cusync/stage.h"
#include "kernels/gemm/detail/launch.cuh"

namespace cusync_gemm {

template <class In, class Out, class Memory>
void gemm(const GemmArgs& a, cusync::Stage<In, Out, Memory>& stage, cudaStream_t stream) {
  checkArgs(a);
  if (isStreamConfig(a.config))  // resolveConfig never picks one
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, stage.name(),
                        std::string("tile configuration ") + toString(a.config) +
                            " runs only through gemm(args, stream), without a stage: its blocks take no tickets");
  const detail::DeviceInfo& d = detail::requireHopper();
  const TileConfig c = resolveConfig(a, d.sms);
  if (stage.shape().grid != stageGrid(a, c) || stage.shape().tile != stageTile(c))
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        std::string("stage grid/tile do not match GEMM configuration ") + toString(c));
  const uint32_t blocks = persistentBlocks(a, c, d.sms);
  detail::dispatchAll(a, c, stage.view(ticketBlocks(a, c, d.sms)), blocks, stream);
}

}  // namespace cusync_gemm

#define CUSYNC_GEMM_STAGED_FAMILY_DECL_(T, TB, In, Out)                                                   \
  template void cusync_gemm::detail::dispatchTyped<T, TB, In, Out>(                                     \
      const cusync_gemm::GemmArgs&, cusync_gemm::TileConfig, const cusync::StageView<In, Out>&, uint32_t, \
      cudaStream_t, const cusync_gemm::detail::LaunchOpts&);
// Instantiates one family's kernels for one policy pair (see the top of this file).
#define CUSYNC_GEMM_STAGED_FAMILY(T, TB, In, Out) CUSYNC_GEMM_STAGED_FAMILY_DECL_(T, TB, In, Out)
// Declares all four families of a policy pair extern: instantiated elsewhere.
#define CUSYNC_GEMM_EXTERN_STAGED(In, Out)                        \
  extern CUSYNC_GEMM_STAGED_FAMILY_DECL_(__nv_bfloat16, 0, In, Out) \
  extern CUSYNC_GEMM_STAGED_FAMILY_DECL_(__nv_bfloat16, 1, In, Out) \
  extern CUSYNC_GEMM_STAGED_FAMILY_DECL_(__half, 0, In, Out)        \
  extern CUSYNC_GEMM_STAGED_FAMILY_DECL_(__half, 1, In, Out)
