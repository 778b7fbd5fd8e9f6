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
#pragma once

#include "cusync/stage.h"
#include "kernels/gemm/detail/launch.cuh"

namespace cusync_gemm {

template <class In, class Out, class Memory>
void gemm(const GemmArgs& a, cusync::Stage<In, Out, Memory>& stage, cudaStream_t stream) {
  checkArgs(a);
  const detail::DeviceInfo& d = detail::requireHopper();
  const TileConfig c = resolveConfig(a, d.sms);
  if (stage.shape().grid != stageGrid(a, c) || stage.shape().tile != stageTile(c))
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        std::string("stage grid/tile do not match GEMM configuration ") + toString(c));
  const uint32_t blocks = persistentBlocks(a, c, d.sms);
  detail::dispatchAll(a, c, stage.view(ticketBlocks(a, c, d.sms)), blocks, stream);
}

}  // namespace cusync_gemm
