// Launch of the Hopper GEMM through a cusync stage with an optional
// programmatic-dependent-launch attribute, for the MLP pipelines: the GEMM's
// own launchKernel (kernels/gemm/detail/launch.cuh) with cusync::place()'s
// placement, instantiated only for what the MLP runs (bf16, B as [N, K], the
// 128-row configurations, GELU / SwiGLU on GEMM1 and identity on GEMM2), so
// that each policy pair compiles a handful of kernels rather than all of them.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "cusync/error.h"
#include "cusync/launch_mode.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "kernels/gemm/detail/launch.cuh"
#include "kernels/gemm/gemm.h"

namespace cusync_mlp::detail {

using cusync_gemm::Epilogue;
using cusync_gemm::GemmArgs;
using cusync_gemm::TileConfig;

template <Epilogue E, class In, class Out>
void launchEx(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s,
              bool programmatic) {
  namespace gd = cusync_gemm::detail;
  using T = __nv_bfloat16;
  // PDL without the grid wait: the cusync stages order GEMM2 after GEMM1 themselves.
  const gd::LaunchOpts o = programmatic ? gd::LaunchOpts{gd::programmaticLaunchAttr(), 1, false} : gd::LaunchOpts{};
  switch (a.config) {
    case TileConfig::T128x128: return gd::launchKernel<T, 128, 128, 0, gd::Sched::Tiles, E>(a, view, blocks, s, o);
    case TileConfig::T128x192: return gd::launchKernel<T, 128, 192, 0, gd::Sched::Tiles, E>(a, view, blocks, s, o);
    case TileConfig::T128x256: return gd::launchKernel<T, 128, 256, 0, gd::Sched::Tiles, E>(a, view, blocks, s, o);
    case TileConfig::T128x192SplitTail:
      return gd::launchKernel<T, 128, 192, 0, gd::Sched::SplitK, E>(a, view, blocks, s, o);
    case TileConfig::T128x256SplitTail:
      return gd::launchKernel<T, 128, 256, 0, gd::Sched::SplitK, E>(a, view, blocks, s, o);
    default:
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp",
                          std::string("tile configuration ") + cusync_gemm::toString(a.config) +
                              " is not built for the MLP pipelines");
  }
}

// Launches stage `st` (bf16, B as [N, K]) with configuration a.config
// (resolved) at the given position of a LaunchMode::Pdl pipeline.
template <class StageT>
void launchStage(const GemmArgs& a, const StageT& st, uint32_t blocks, unsigned position, cudaStream_t s,
                 cusync::LaunchMode mode = cusync::LaunchMode::Pdl) {
  if (mode != cusync::LaunchMode::Pdl && mode != cusync::LaunchMode::Serial)
    throw cusync::Error(cusync::ErrorCode::LaunchModeUnsupported, st.name(), "the MLP launches in pdl or serial mode");
  using In = typename StageT::In;
  using Out = typename StageT::Out;
  cusync_gemm::checkArgs(a);
  const cusync::Placement pl = cusync::place(mode, position, st.isConsumer(), st.opts());
  const auto view = st.view(blocks);
  if constexpr (cusync::policy::isNoSync<In>) {
    // Producer: GEMM1 with its activation.
    if (a.epilogue == Epilogue::Gelu) return launchEx<Epilogue::Gelu>(a, view, blocks, s, pl.programmatic);
    if (a.epilogue == Epilogue::SwiGLU) return launchEx<Epilogue::SwiGLU>(a, view, blocks, s, pl.programmatic);
  } else {
    static_assert(cusync::policy::isNoSync<Out>, "the MLP's GEMM2 posts nothing");
    if (a.epilogue == Epilogue::Identity) return launchEx<Epilogue::Identity>(a, view, blocks, s, pl.programmatic);
  }
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, st.name(), "epilogue not built for this MLP stage");
}

}  // namespace cusync_mlp::detail
