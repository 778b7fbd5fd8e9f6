// Host launch templates: tensor maps, shared-memory limits, dispatch over
// configuration and epilogue. Included by the library's sm_90a translation
// units and by gemm_staged.cuh.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "cusync/error.h"
#include "cusync/stage_view.h"
#include "kernels/gemm/detail/host.h"
#include "kernels/gemm/detail/kernel.cuh"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

template <class K>
void prepareKernel(K* k, int smem) {
  cudaFuncAttributes attr{};
  if (cudaError_t e = cudaFuncGetAttributes(&attr, k); e != cudaSuccess) throwCuda(e, "cudaFuncGetAttributes");
  if (attr.binaryVersion != 90)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        "the Hopper GEMM needs an sm_90a GPU binary; this one is sm_" + std::to_string(attr.binaryVersion));
  if (cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem); e != cudaSuccess)
    throwCuda(e, "cudaFuncSetAttribute(max dynamic shared memory)");
}

template <class T, int BM, int BN, int TB, bool Split, Epilogue E, class In, class Out>
void launchKernel(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s) {
  static_assert(Split ? BM == 64 : BM == 128, "BM 64 goes with split K");
  constexpr int smem = Ring<BN, BM>::kSmemRequest;
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  const CUtensorMap tmA = makeTensorMap2D(a.A, bf, a.K, a.M, kBK, BM);
  const CUtensorMap tmB = TB == 0 ? makeTensorMap2D(a.B, bf, a.K, a.N, kBK, BN) : makeTensorMap2D(a.B, bf, a.N, a.K, 64, kBK);
  EpiParams p{a.bias, a.residual, a.M, a.N, a.K};
  if constexpr (Split) {
    auto* k = gemmKernelSplit<T, BN, TB, E, In, Out>;
    static const int ready = (prepareKernel(k, smem), 1);
    (void)ready;
    SplitParams sp{};
    const uint32_t S = splitCount(a, BN == 256 ? TileConfig::T64x256SplitK : TileConfig::T64x128SplitK, currentDevice().sms);
    const SplitBuffers w = splitBuffers(view.tickets, view.numTiles, S, BM * BN, s);
    sp.counter = w.counter;
    sp.flags = w.flags;
    sp.partials = w.partials;
    sp.splits = S;
    sp.units = view.numTiles * S;
    sp.unitsPerRun = sp.units + blocks;
    k<<<blocks, kThreads, smem, s>>>(tmA, tmB, static_cast<T*>(a.C), p, view, sp);
  } else {
    auto* k = gemmKernel<T, BN, TB, E, In, Out>;
    static const int ready = (prepareKernel(k, smem), 1);
    (void)ready;
    k<<<blocks, kThreads, smem, s>>>(tmA, tmB, static_cast<T*>(a.C), p, view);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) throwCuda(e, "gemm kernel launch");
}

template <class T, int BM, int BN, int TB, bool Split, class In, class Out>
void dispatchEpilogue(const GemmArgs& a, const cusync::StageView<In, Out>& v, uint32_t blocks, cudaStream_t s) {
  switch (a.epilogue) {
    case Epilogue::Identity: return launchKernel<T, BM, BN, TB, Split, Epilogue::Identity>(a, v, blocks, s);
    case Epilogue::Bias: return launchKernel<T, BM, BN, TB, Split, Epilogue::Bias>(a, v, blocks, s);
    case Epilogue::Gelu: return launchKernel<T, BM, BN, TB, Split, Epilogue::Gelu>(a, v, blocks, s);
    case Epilogue::SwiGLU: return launchKernel<T, BM, BN, TB, Split, Epilogue::SwiGLU>(a, v, blocks, s);
    case Epilogue::Residual: return launchKernel<T, BM, BN, TB, Split, Epilogue::Residual>(a, v, blocks, s);
  }
}

// One (type, B layout) family: every configuration and epilogue.
template <class T, int TB, class In, class Out>
void dispatchTyped(const GemmArgs& a, TileConfig c, const cusync::StageView<In, Out>& v, uint32_t blocks,
                   cudaStream_t s) {
  switch (c) {
    case TileConfig::T128x128: return dispatchEpilogue<T, 128, 128, TB, false>(a, v, blocks, s);
    case TileConfig::T128x256: return dispatchEpilogue<T, 128, 256, TB, false>(a, v, blocks, s);
    case TileConfig::T64x128SplitK: return dispatchEpilogue<T, 64, 128, TB, true>(a, v, blocks, s);
    case TileConfig::T64x256SplitK: return dispatchEpilogue<T, 64, 256, TB, true>(a, v, blocks, s);
    default:
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                          std::string("tile configuration ") + toString(c) + " is not implemented");
  }
}

template <class In, class Out>
void dispatchAll(const GemmArgs& a, TileConfig c, const cusync::StageView<In, Out>& v, uint32_t blocks,
                 cudaStream_t s) {
  const bool nk = a.bLayout == BLayout::NK;
  if (a.dtype == DType::BF16)
    return nk ? dispatchTyped<__nv_bfloat16, 0>(a, c, v, blocks, s) : dispatchTyped<__nv_bfloat16, 1>(a, c, v, blocks, s);
  return nk ? dispatchTyped<__half, 0>(a, c, v, blocks, s) : dispatchTyped<__half, 1>(a, c, v, blocks, s);
}

// Checks that a device of compute capability 9.0 is current.
inline const DeviceInfo& requireHopper() {
  const DeviceInfo& d = currentDevice();
  if (d.major != 9)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        "the Hopper GEMM needs compute capability 9.0; device " + std::to_string(d.device) + " is " +
                            std::to_string(d.major) + "." + std::to_string(d.minor));
  return d;
}

}  // namespace cusync_gemm::detail
