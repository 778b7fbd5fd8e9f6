// Launch of the Hopper GEMM through a cusync stage with an optional
// programmatic-dependent-launch attribute, for the MLP pipelines.
//
// Why this exists: cusync::Pipeline::launch needs the stage View as the
// kernel's first parameter, and cusync_gemm::gemm(args, stage, stream)
// launches with <<<>>>, which cannot carry the PDL attribute. This mirrors
// kernels/gemm/detail/launch.cuh::launchKernel but uses cudaLaunchKernelEx
// with the placement cusync::place() gives (LaunchMode::Pdl: the consumer is
// programmatic). Wanted instead (reported to the GEMM owner): a public
//   cusync_gemm::gemm(args, stage, stream, const cudaLaunchAttribute*, n)
// in gemm_staged.cuh, after which this file shrinks to that call.
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

template <int BN, Epilogue E, class In, class Out>
void launchEx(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s,
              bool programmatic) {
  namespace gd = cusync_gemm::detail;
  using T = __nv_bfloat16;
  auto* k = gd::gemmKernel<T, BN, 0, E, In, Out>;
  constexpr int smem = gd::Ring<BN>::kSmemRequest;
  static const int ready = [&] {
    cudaFuncAttributes attr{};
    if (cudaError_t e = cudaFuncGetAttributes(&attr, k); e != cudaSuccess) gd::throwCuda(e, "cudaFuncGetAttributes");
    if (attr.binaryVersion != 90)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "mlp",
                          "the Hopper GEMM needs an sm_90a GPU binary; this one is sm_" +
                              std::to_string(attr.binaryVersion));
    if (cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem); e != cudaSuccess)
      gd::throwCuda(e, "cudaFuncSetAttribute(max dynamic shared memory)");
    return 1;
  }();
  (void)ready;
  const CUtensorMap tmA = gd::makeTensorMap2D(a.A, true, a.K, a.M, gd::kBK, gd::kBM);
  const CUtensorMap tmB = gd::makeTensorMap2D(a.B, true, a.K, a.N, gd::kBK, BN);
  gd::EpiParams p{a.bias, a.residual, a.M, a.N, a.K};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(gd::kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  T* C = static_cast<T*>(a.C);
  if (cudaError_t e = cudaLaunchKernelEx(&cfg, k, tmA, tmB, C, p, view); e != cudaSuccess)
    gd::throwCuda(e, "mlp gemm launch");
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
  const bool is256 = a.config == TileConfig::T128x256;
  if (a.config != TileConfig::T128x256 && a.config != TileConfig::T128x128)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, st.name(),
                        std::string("tile configuration ") + cusync_gemm::toString(a.config) + " is not implemented");
  if constexpr (cusync::policy::isNoSync<In>) {
    // Producer: GEMM1 with its activation.
    if (a.epilogue == Epilogue::Gelu) {
      if (is256) return launchEx<256, Epilogue::Gelu>(a, view, blocks, s, pl.programmatic);
      return launchEx<128, Epilogue::Gelu>(a, view, blocks, s, pl.programmatic);
    }
    if (a.epilogue == Epilogue::SwiGLU) {
      if (is256) return launchEx<256, Epilogue::SwiGLU>(a, view, blocks, s, pl.programmatic);
      return launchEx<128, Epilogue::SwiGLU>(a, view, blocks, s, pl.programmatic);
    }
  } else {
    static_assert(cusync::policy::isNoSync<Out>, "the MLP's GEMM2 posts nothing");
    if (a.epilogue == Epilogue::Identity) {
      if (is256) return launchEx<256, Epilogue::Identity>(a, view, blocks, s, pl.programmatic);
      return launchEx<128, Epilogue::Identity>(a, view, blocks, s, pl.programmatic);
    }
  }
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, st.name(), "epilogue not built for this MLP stage");
}

}  // namespace cusync_mlp::detail
