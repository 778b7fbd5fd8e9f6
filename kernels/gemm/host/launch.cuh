// Host launch of the GEMM kernel: kernel parameters (tensor maps, the split
// and KCut workspaces), shared-memory limits, and the dispatch from a
// configuration's table row (tile_config.h) and epilogue to a kernel
// instantiation. Included by the translation units that instantiate kernels
// (host/instances/*.cu, gemm_staged.cuh users) for sm_90a.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <type_traits>
#include <utility>

#include "cusync/error.h"
#include "cusync/stage_view.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/kernel/gemm_kernel.cuh"

namespace cusync_gemm::detail {

template <Family F>
using FamilyType = std::conditional_t<F == Family::Bf16NK || F == Family::Bf16KN, __nv_bfloat16, __half>;
template <Family F>
constexpr int kFamilyTransB = F == Family::Bf16KN || F == Family::F16KN ? 1 : 0;
// Raises kernel k's dynamic shared-memory limit, once per device (`prepared`
// holds a bit per device; the attribute belongs to the device's context).
// Each kernel instantiation keeps its own bits: kernels of one signature share
// a function-pointer type.
template <class K>
void prepareKernel(K* k, int smem, std::atomic<uint64_t>& prepared) {
  const int dev = currentDevice().device;
  const uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
  if (bit != 0 && (prepared.load(std::memory_order_acquire) & bit)) return;
  cudaFuncAttributes attr{};
  if (cudaError_t e = cudaFuncGetAttributes(&attr, k); e != cudaSuccess) throwCuda(e, "cudaFuncGetAttributes");
  if (attr.binaryVersion != 90)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        "the Hopper GEMM needs an sm_90a GPU binary; this one is sm_" + std::to_string(attr.binaryVersion));
  if (cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem); e != cudaSuccess)
    throwCuda(e, "cudaFuncSetAttribute(max dynamic shared memory)");
  prepared.fetch_or(bit, std::memory_order_acq_rel);
}

// Split K: the parts per split tile, the leading whole tiles, and the
// stage's workspace for a launch of `a` (config resolved) with `blocks` blocks.
template <class Shape, class View>
ScheduleParams splitParams(const GemmArgs& a, const View& view, uint32_t blocks, cudaStream_t s) {
  const int sms = currentDevice().sms;
  const uint32_t S = splitCount(a, a.config, sms);
  const uint32_t whole = S > 1 ? unsplitTiles(a, a.config, sms) : view.numTiles;
  const uint32_t split = view.numTiles - whole;
  const SplitBuffers w = splitBuffers(view.tickets, split, S, Shape::BM * Shape::BN, s);
  ScheduleParams sp{};
  sp.counter = w.counter;
  sp.flags = w.flags;
  sp.partials = w.partials;
  sp.splits = S;
  sp.unsplitTiles = whole;
  sp.units = whole + split * S;
  sp.unitsPerRun = sp.units + blocks;
  return sp;
}

// KCut: the group count and one partial slot and two flags per block (each
// block writes at most one partial, for the first unit of its range).
template <class Shape, class View>
ScheduleParams kCutParams(const GemmArgs& a, const View& view, uint32_t blocks, cudaStream_t s) {
  const uint32_t groups = kCutGroups(a, a.config, currentDevice().sms);
  if (groups * view.shape.grid.y != blocks)
    throw cusync::Error(cusync::ErrorCode::GridMismatch, "gemm",
                        "a KCut launch needs one block per 128-row band in each group (persistentBlocks)");
  const SplitBuffers w = splitBuffers(view.tickets, blocks, 2, Shape::BM * Shape::BN, s);
  ScheduleParams sp{};
  sp.flags = w.flags;
  sp.partials = w.partials;
  sp.kCutGroups = groups;
  return sp;
}

// Launches one kernel: `base` carries the stream and launch attributes (a
// pipeline's placement); grid, block and shared memory come from here.
template <class Shape, class T, int TB, Epilogue E, class View>
void launchKernel(const GemmArgs& a, const View& view, uint32_t blocks, const cudaLaunchConfig_t& base,
                  const KernelFlags& flags) {
  constexpr bool kPair = Shape::kSchedule == Schedule::ClusterPair;
  static_assert(!kPair || TB == 1 || (Shape::BN / 2) % 8 == 0, "a multicast half of B is whole 8-row groups");
  constexpr int smem = SharedStorage<Shape, TB>::kSmemRequest;
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  if (kPair && blocks % 2 != 0)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "a cluster-pair launch needs an even block count");
  KernelParams<T, View> kp{};
  kp.tmA = makeTensorMap2D(a.A, bf, a.K, a.M, kBK, Shape::BM);
  // A pair's blocks each load half of B's rows ([N, K]) or of its 64-column boxes ([K, N]).
  constexpr int kBRows = kPair ? Shape::BN / 2 : Shape::BN;
  kp.tmB = TB == 0 ? makeTensorMap2D(a.B, bf, a.K, a.N, kBK, kBRows) : makeTensorMap2D(a.B, bf, a.N, a.K, 64, kBK);
  // C through TMA stores: boxes of 64 columns x 16 rows (one consumer warp's chunk).
  kp.tmC = makeTensorMap2D(a.C, bf, a.epilogue == Epilogue::SwiGLU ? a.N / 2 : a.N, a.M, 64, 16);
  kp.C = static_cast<T*>(a.C);
  kp.epi = EpilogueParams{a.bias, a.residual, a.M, a.N};
  kp.K = a.K;
  kp.trace = a.trace;
  kp.flags = flags;
  kp.flags.bEvictFirst = flags.bEvictFirst && weightsEvictFirst(a.M, a.K);
  kp.view = view;
  if constexpr (Shape::kSchedule == Schedule::SplitK || Shape::kSchedule == Schedule::TailSplit)
    kp.sched = splitParams<Shape>(a, view, blocks, base.stream);
  if constexpr (Shape::kSchedule == Schedule::KCut) kp.sched = kCutParams<Shape>(a, view, blocks, base.stream);
  auto* k = [] {
    if constexpr (kPair) return gemmKernelPair<Shape, T, TB, E, View>;
    else return gemmKernel<Shape, T, TB, E, View>;
  }();
  static std::atomic<uint64_t> prepared{0};
  prepareKernel(k, smem, prepared);
  cudaLaunchConfig_t cfg = base;
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  if (cudaError_t e = cudaLaunchKernelEx(&cfg, k, kp); e != cudaSuccess) throwCuda(e, "gemm kernel launch");
  if (cudaError_t l = cudaGetLastError(); l != cudaSuccess) throwCuda(l, "gemm kernel launch");
}

// The epilogues a translation unit builds kernels for.
template <Epilogue... Es>
struct Epilogues {};
using AllEpilogues = Epilogues<Epilogue::Identity, Epilogue::Bias, Epilogue::Gelu, Epilogue::SwiGLU, Epilogue::Residual>;

template <class Shape, class T, int TB, class View, Epilogue... Es>
void dispatchEpilogue(Epilogues<Es...>, const GemmArgs& a, const View& v, uint32_t blocks,
                      const cudaLaunchConfig_t& base, const KernelFlags& f) {
  auto launch = [&](auto e) {
    constexpr Epilogue E = decltype(e)::value;
    // Widths of odd 8-column blocks split gate/up pairs (checkArgs refuses them).
    if constexpr (E == Epilogue::SwiGLU && Shape::BN % 16 != 0)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "SwiGLU needs a tile width that is a multiple of 16");
    else
      launchKernel<Shape, T, TB, E>(a, v, blocks, base, f);
  };
  const bool built = ((a.epilogue == Es ? (launch(std::integral_constant<Epilogue, Es>{}), true) : false) || ...);
  if (!built)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        std::string("this program does not build epilogue ") + toString(a.epilogue) +
                            " for this launch");
}

// Calls f(std::integral_constant<size_t, I>) for the table row I of configuration c.
template <class F, size_t... I>
void forTableRow(TileConfig c, F&& f, std::index_sequence<I...>) {
  const bool found = ((kTileConfigs[I].config == c ? (f(std::integral_constant<size_t, I>{}), true) : false) || ...);
  if (!found)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        std::string("tile configuration ") + toString(c) + " is not implemented");
}

// Every configuration and epilogue (of Epis) of one family, for one stage
// view type; a.config must be resolved.
template <class T, int TB, class View, class Epis = AllEpilogues>
void launchFamily(const GemmArgs& a, const View& v, uint32_t blocks, const cudaLaunchConfig_t& base,
                  const KernelFlags& f) {
  forTableRow(
      a.config,
      [&](auto row) {
        using Shape = KernelShapeOf<decltype(row)::value>;
        if constexpr (Shape::kSchedule == Schedule::KCut && !kNoSyncView<View>) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                              std::string("tile configuration ") + toString(a.config) +
                                  " runs only without a stage: its blocks take no tickets");
        } else {
          dispatchEpilogue<Shape, T, TB>(Epis{}, a, v, blocks, base, f);
        }
      },
      std::make_index_sequence<kNumTileConfigs>{});
}

}  // namespace cusync_gemm::detail

// Explicit instantiation of one family's kernels (every epilogue) for one
// stage view type, so that the families compile in separate translation units.
#define CUSYNC_GEMM_FAMILY_DECL_(FAMILY, In, Out)                                                           \
  template void cusync_gemm::detail::launchFamily<                                                         \
      cusync_gemm::detail::FamilyType<cusync_gemm::detail::Family::FAMILY>,                                \
      cusync_gemm::detail::kFamilyTransB<cusync_gemm::detail::Family::FAMILY>, cusync::StageView<In, Out>,  \
      cusync_gemm::detail::AllEpilogues>(const cusync_gemm::GemmArgs&, const cusync::StageView<In, Out>&,   \
                                         uint32_t, const cudaLaunchConfig_t&,                                \
                                         const cusync_gemm::detail::KernelFlags&);
#define CUSYNC_GEMM_INSTANTIATE_FAMILY(FAMILY, In, Out) CUSYNC_GEMM_FAMILY_DECL_(FAMILY, In, Out)
#define CUSYNC_GEMM_EXTERN_FAMILY(FAMILY, In, Out) extern CUSYNC_GEMM_FAMILY_DECL_(FAMILY, In, Out)
