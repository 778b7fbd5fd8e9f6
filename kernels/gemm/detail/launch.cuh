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

// The kernel of a schedule.
template <class T, int BM, int BN, int TB, Sched Sc, Epilogue E, class In, class Out>
constexpr auto kernelFor() {
  if constexpr (Sc == Sched::SplitK) return gemmKernelSplit<T, BM, BN, TB, E, In, Out>;
  else if constexpr (Sc == Sched::Stream) return gemmKernelStream<T, BN, TB, E, In, Out>;
  else if constexpr (Sc == Sched::Pair) return gemmKernelPair<T, BN, TB, E, In, Out>;
  else return gemmKernel<T, BN, TB, E, In, Out>;
}

// The split-K parameters and per-stage workspace of a launch of `a` (its
// config resolved by dispatchTyped) in `view` with `blocks` blocks.
template <int BM, int BN, class In, class Out>
SplitParams splitParams(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s) {
  const TileConfig c = a.config;
  const int sms = currentDevice().sms;
  const uint32_t S = splitCount(a, c, sms);
  const uint32_t dp = S > 1 ? splitDataParallelTiles(a, c, sms) : view.numTiles;
  const uint32_t split = view.numTiles - dp;
  const SplitBuffers w = splitBuffers(view.tickets, split, S, BM * BN, s);
  SplitParams sp{};
  sp.counter = w.counter;
  sp.flags = w.flags;
  sp.partials = w.partials;
  sp.splits = S;
  sp.dpTiles = dp;
  sp.units = dp + split * S;
  sp.unitsPerRun = sp.units + blocks;
  return sp;
}

// The workspace and group count of a stream launch of `a` in `view`: one
// partial slot and two flags per block (each block writes at most one
// partial, for the first unit of its range).
template <int BN, class In, class Out>
SplitParams streamParams(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s) {
  const uint32_t groups = streamGroups(a, a.config, currentDevice().sms);
  if (groups * view.shape.grid.y != blocks)
    throw cusync::Error(cusync::ErrorCode::GridMismatch, "gemm",
                        "a stream launch needs one block per 128-row band in each group (persistentBlocks)");
  const SplitBuffers w = splitBuffers(view.tickets, blocks, 2, kBM * BN, s);
  SplitParams sp{};
  sp.flags = w.flags;
  sp.partials = w.partials;
  sp.streamGroups = groups;
  return sp;
}

template <class T, int BM, int BN, int TB, Sched Sc, Epilogue E, class In, class Out>
void launchKernel(const GemmArgs& a, const cusync::StageView<In, Out>& view, uint32_t blocks, cudaStream_t s,
                  const LaunchOpts& o = {}) {
  static_assert(BM == 128 || Sc == Sched::SplitK, "BM 64 goes with split K");
  static_assert(Sc != Sched::Pair || TB == 1 || (BN / 2) % 8 == 0, "a multicast half of B is whole 8-row groups");
  constexpr int smem = RingOf<Sc, BN, BM, TB>::kSmemRequest;
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  const CUtensorMap tmA = makeTensorMap2D(a.A, bf, a.K, a.M, kBK, BM);
  // Pair: each block of a cluster loads half of B's rows ([N, K]) or of its
  // 64-column boxes ([K, N]) and multicasts it.
  constexpr int kBRows = Sc == Sched::Pair ? BN / 2 : BN;
  const CUtensorMap tmB = TB == 0 ? makeTensorMap2D(a.B, bf, a.K, a.N, kBK, kBRows) : makeTensorMap2D(a.B, bf, a.N, a.K, 64, kBK);
  // C through TMA stores: boxes of 64 columns x 16 rows (one consumer warp's chunk).
  const CUtensorMap tmC = makeTensorMap2D(a.C, bf, a.epilogue == Epilogue::SwiGLU ? a.N / 2 : a.N, a.M, 64, 16);
  const EpiParams p{a.bias,      a.residual,    a.trace,
                    a.M,         a.N,           a.K,
                    o.waitPrior, o.staticFirst, o.staticAll,
                    o.bEvictFirst && weightsEvictFirst(a.M, a.K)};
  auto* k = kernelFor<T, BM, BN, TB, Sc, E, In, Out>();
  static const int ready = (prepareKernel(k, smem), 1);
  (void)ready;
  T* C = static_cast<T*>(a.C);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = const_cast<cudaLaunchAttribute*>(o.attrs);
  cfg.numAttrs = o.numAttrs;
  cudaError_t e;
  if constexpr (Sc == Sched::Tiles || Sc == Sched::Pair) {
    if (Sc == Sched::Pair && blocks % 2 != 0)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "a pair launch needs an even block count");
    e = cudaLaunchKernelEx(&cfg, k, tmA, tmB, tmC, C, p, view);
  } else {
    SplitParams sp;
    if constexpr (Sc == Sched::Stream) sp = streamParams<BN>(a, view, blocks, s);
    else sp = splitParams<BM, BN>(a, view, blocks, s);
    e = cudaLaunchKernelEx(&cfg, k, tmA, tmB, tmC, C, p, view, sp);
  }
  if (e != cudaSuccess) throwCuda(e, "gemm kernel launch");
  if (cudaError_t l = cudaGetLastError(); l != cudaSuccess) throwCuda(l, "gemm kernel launch");
}

template <class T, int BM, int BN, int TB, Sched Sc, class In, class Out>
void dispatchEpilogue(const GemmArgs& a, const cusync::StageView<In, Out>& v, uint32_t blocks, cudaStream_t s,
                      const LaunchOpts& o) {
  switch (a.epilogue) {
    case Epilogue::Identity: return launchKernel<T, BM, BN, TB, Sc, Epilogue::Identity>(a, v, blocks, s, o);
    case Epilogue::Bias: return launchKernel<T, BM, BN, TB, Sc, Epilogue::Bias>(a, v, blocks, s, o);
    case Epilogue::Gelu: return launchKernel<T, BM, BN, TB, Sc, Epilogue::Gelu>(a, v, blocks, s, o);
    case Epilogue::SwiGLU:
      // Widths of odd 8-column blocks split gate/up pairs (checkArgs refuses them).
      if constexpr (BN % 16 == 0) return launchKernel<T, BM, BN, TB, Sc, Epilogue::SwiGLU>(a, v, blocks, s, o);
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "SwiGLU needs a tile width that is a multiple of 16");
    case Epilogue::Residual: return launchKernel<T, BM, BN, TB, Sc, Epilogue::Residual>(a, v, blocks, s, o);
  }
}

// One (type, B layout) family: every configuration and epilogue. The
// launch sees `args` with its config set to c (the split and stream
// parameters are planned for it).
template <class T, int TB, class In, class Out>
void dispatchTyped(const GemmArgs& args, TileConfig c, const cusync::StageView<In, Out>& v, uint32_t blocks,
                   cudaStream_t s, const LaunchOpts& o = {}) {
  GemmArgs a = args;
  a.config = c;
  switch (c) {
    case TileConfig::T128x128: return dispatchEpilogue<T, 128, 128, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x192: return dispatchEpilogue<T, 128, 192, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x256: return dispatchEpilogue<T, 128, 256, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x176: return dispatchEpilogue<T, 128, 176, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x176SplitTail:
      return dispatchEpilogue<T, 128, 176, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T128x144: return dispatchEpilogue<T, 128, 144, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x144SplitTail:
      return dispatchEpilogue<T, 128, 144, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T128x96: return dispatchEpilogue<T, 128, 96, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x96SplitTail: return dispatchEpilogue<T, 128, 96, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T128x168: return dispatchEpilogue<T, 128, 168, TB, Sched::Tiles>(a, v, blocks, s, o);
    case TileConfig::T128x192Pair: return dispatchEpilogue<T, 128, 192, TB, Sched::Pair>(a, v, blocks, s, o);
    case TileConfig::T128x256Pair: return dispatchEpilogue<T, 128, 256, TB, Sched::Pair>(a, v, blocks, s, o);
    case TileConfig::T128x192SplitTail:
      return dispatchEpilogue<T, 128, 192, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T128x256SplitTail:
      return dispatchEpilogue<T, 128, 256, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T64x128SplitK: return dispatchEpilogue<T, 64, 128, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T64x256SplitK: return dispatchEpilogue<T, 64, 256, TB, Sched::SplitK>(a, v, blocks, s, o);
    case TileConfig::T128x192Stream:
    case TileConfig::T128x256Stream:
      // Stream blocks take no tickets: only gemm()'s own NoSync stages run them.
      if constexpr (cusync::policy::isNoSync<In> && cusync::policy::isNoSync<Out>) {
        if (c == TileConfig::T128x192Stream) return dispatchEpilogue<T, 128, 192, TB, Sched::Stream>(a, v, blocks, s, o);
        return dispatchEpilogue<T, 128, 256, TB, Sched::Stream>(a, v, blocks, s, o);
      }
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                          std::string("tile configuration ") + toString(c) + " runs only without a stage");
    default:
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                          std::string("tile configuration ") + toString(c) + " is not implemented");
  }
}

template <class In, class Out>
void dispatchAll(const GemmArgs& a, TileConfig c, const cusync::StageView<In, Out>& v, uint32_t blocks,
                 cudaStream_t s, const LaunchOpts& o = {}) {
  const bool nk = a.bLayout == BLayout::NK;
  if (a.dtype == DType::BF16)
    return nk ? dispatchTyped<__nv_bfloat16, 0>(a, c, v, blocks, s, o)
              : dispatchTyped<__nv_bfloat16, 1>(a, c, v, blocks, s, o);
  return nk ? dispatchTyped<__half, 0>(a, c, v, blocks, s, o)
            : dispatchTyped<__half, 1>(a, c, v, blocks, s, o);
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
