// Host launch of the GEMM kernel: kernel parameters (tensor maps, the split
// and KCut buffers in the stage's workspace), shared-memory limits, and the
// dispatch from a configuration's table row (tile_config.h) and epilogue to a
// kernel instantiation. Included by the translation units that instantiate
// kernels (host/instances/*.cu, gemm_staged.cuh users) for sm_90a.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
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

// Split K: the parts per split tile, the leading whole tiles, and their
// buffers in the stage's workspace `ws` for a launch of `a` (config
// resolved) with `blocks` blocks.
template <class Shape, class View>
ScheduleParams splitParams(const GemmArgs& a, const View& view, StageWorkspace& ws, uint32_t blocks) {
  const int sms = currentDevice().sms;
  const uint32_t S = splitCount(a, a.config, sms);
  const uint32_t whole = S > 1 ? unsplitTiles(a, a.config, sms) : view.numTiles;
  const uint32_t split = view.numTiles - whole;
  const SplitBuffers w = splitBuffers(ws, split, S, Shape::BM * Shape::BN);
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
// block writes at most one partial, for the first unit of its range), in `ws`.
template <class Shape, class View>
ScheduleParams kCutParams(const GemmArgs& a, const View& view, StageWorkspace& ws, uint32_t blocks) {
  const uint32_t groups = kCutGroups(a, a.config, currentDevice().sms);
  if (groups * view.shape.grid.y != blocks)
    throw cusync::Error(cusync::ErrorCode::GridMismatch, "gemm",
                        "a KCut launch needs one block per 128-row band in each group (persistentBlocks)");
  const SplitBuffers w = splitBuffers(ws, blocks, 2, Shape::BM * Shape::BN);
  ScheduleParams sp{};
  sp.flags = w.flags;
  sp.partials = w.partials;
  sp.kCutGroups = groups;
  return sp;
}

// One stage's kernel parameters for a launch of `a` (config resolved) with
// `blocks` blocks, all but the tensor maps of A and B: C's map, the split
// and KCut buffers (in the stage's workspace `ws`), and for a stage that
// waits the weights its units prefetch while waiting.
template <class Shape, class T, class View>
StageParams<T, View> buildStageCommon(const GemmArgs& a, const View& view, StageWorkspace& ws, uint32_t blocks,
                                      bool evictFirstAllowed) {
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  StageParams<T, View> sp{};
  // C through TMA stores: boxes of 64 columns x 16 rows (one consumer warp's chunk).
  const int64_t nOut = a.epilogue == Epilogue::SwiGLU ? a.N / 2 : a.N;
  sp.tmC = makeTensorMap2D(a.C, bf, a.splitN > 0 ? a.splitN : nOut, a.M, 64, 16);
  sp.tmC2 = a.splitN > 0 ? makeTensorMap2D(a.C2, bf, a.N - a.splitN, a.M, 64, 16) : sp.tmC;
  sp.C2 = a.splitN > 0 ? a.C2 : a.C;
  sp.splitN = a.splitN;
  sp.C = static_cast<T*>(a.C);
  sp.epi = EpilogueParams{a.bias, a.residual, a.M, a.N};
  sp.K = a.K;
  sp.trace = a.trace;
  sp.view = view;
  sp.bEvictFirst = evictFirstAllowed && weightsEvictFirst(a.M, a.K);
  if constexpr (Shape::kSchedule == Schedule::SplitK || Shape::kSchedule == Schedule::TailSplit)
    sp.sched = splitParams<Shape>(a, view, ws, blocks);
  if constexpr (Shape::kSchedule == Schedule::KCut) sp.sched = kCutParams<Shape>(a, view, ws, blocks);
  if constexpr (!cusync::policy::isNoSync<typename View::In>)
    sp.prefetchKBlocks = prefetchKBlocks(static_cast<uint64_t>((a.K + kBK - 1) / kBK),
                                         static_cast<uint64_t>(Shape::BN) * kBK * sizeof(T),
                                         std::min<uint64_t>(view.numTiles, blocks));
  return sp;
}

// Rows of B ([N, K]) one block loads per k-block: a pair's blocks each load
// half of B's rows and multicast them.
template <class Shape>
constexpr int kBRowsPerBlock = Shape::kSchedule == Schedule::ClusterPair ? Shape::BN / 2 : Shape::BN;

// The same with the GEMM's own tensor maps of A (row-major [M, K], read by TmaTileA) and B.
template <class Shape, class T, int TB, class View>
StageParams<T, View> buildStageParams(const GemmArgs& a, const View& view, StageWorkspace& ws, uint32_t blocks,
                                      bool evictFirstAllowed) {
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  StageParams<T, View> sp = buildStageCommon<Shape, T>(a, view, ws, blocks, evictFirstAllowed);
  sp.tmA = makeTensorMap2D(a.A, bf, a.K, a.M, kBK, Shape::BM);
  // [K, N]: 64-column boxes, a pair's blocks each loading half of them.
  sp.tmB = TB == 0 ? makeTensorMap2D(a.B, bf, a.K, a.N, kBK, kBRowsPerBlock<Shape>)
                   : makeTensorMap2D(a.B, bf, a.N, a.K, 64, kBK);
  return sp;
}

template <class K>
void launchPrepared(K* k, int smem, std::atomic<uint64_t>& prepared, uint32_t blocks, const cudaLaunchConfig_t& base,
                    const void* params) {
  prepareKernel(k, smem, prepared);
  cudaLaunchConfig_t cfg = base;
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  void* args[] = {const_cast<void*>(params)};
  if (cudaError_t e = cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(k), args); e != cudaSuccess)
    throwCuda(e, "gemm kernel launch");
  if (cudaError_t l = cudaGetLastError(); l != cudaSuccess) throwCuda(l, "gemm kernel launch");
}

// Launches one kernel of prepared stage parameters, its A read through
// ALoader (mainloop.cuh): `base` carries the stream and launch attributes (a
// pipeline's placement); grid, block and shared memory come from here.
template <class Shape, class T, int TB, Epilogue E, class ALoader, class View>
void launchStageKernel(const StageParams<T, View>& sp, uint32_t blocks, const cudaLaunchConfig_t& base,
                       const KernelFlags& flags) {
  using KP = KernelParams<T, View>;
  constexpr bool kPair = Shape::kSchedule == Schedule::ClusterPair;
  static_assert(!kPair || TB == 1 || (Shape::BN / 2) % 8 == 0, "a multicast half of B is whole 8-row groups");
  constexpr int smem = SharedStorage<Shape, TB, kernelWaits<KP>()>::kSmemRequest;
  if (kPair && blocks % 2 != 0)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "a cluster-pair launch needs an even block count");
  KP kp{};
  kp.s0 = sp;
  kp.flags = flags;
  auto* k = [] {
    if constexpr (kPair) return gemmKernelPair<Shape, T, TB, E, E, KP, ALoader>;
    else return gemmKernel<Shape, T, TB, E, E, KP, ALoader>;
  }();
  static std::atomic<uint64_t> prepared{0};
  launchPrepared(k, smem, prepared, blocks, base, &kp);
}

// Launches the GEMM of `a` as one kernel of the stage of `view` and `ws`.
template <class Shape, class T, int TB, Epilogue E, class View>
void launchKernel(const GemmArgs& a, const View& view, StageWorkspace& ws, uint32_t blocks,
                  const cudaLaunchConfig_t& base, const KernelFlags& flags) {
  launchStageKernel<Shape, T, TB, E, TmaTileA>(
      buildStageParams<Shape, T, TB>(a, view, ws, blocks, flags.bEvictFirst), blocks, base, flags);
}

// A kernel whose stages wait on inputs runs its waiter as waiterChoice() says.
inline void applyWaiterChoice(KernelFlags& f) {
  const WaiterChoice c = waiterChoice();
  f.waitMemo = c.memo;
  f.ticketLead = c.ticketLead;
}

// Whether `cfg` launches its kernel as a programmatic dependent of the grids
// before it in its stream: such a kernel must wait for them (griddepcontrol.wait)
// before it touches global memory.
inline bool launchesProgrammatic(const cudaLaunchConfig_t& cfg) {
  for (unsigned i = 0; i < cfg.numAttrs; ++i)
    if (cfg.attrs[i].id == cudaLaunchAttributeProgrammaticStreamSerialization &&
        cfg.attrs[i].val.programmaticStreamSerializationAllowed)
      return true;
  return false;
}

// Launches a fused kernel of two stages, their parameters built
// (buildStageParams, or a convolution's), A through ALoader. Shape is one
// tile shape for both stages, or StageShapes (a width per stage). Launched
// as a programmatic dependent (`base`'s attributes), it waits for the grids
// before it first.
template <class Shape, class T, int TB, Epilogue E0, Epilogue E1, class ALoader, class V0, class V1>
void launchFusedStageKernel(const StageParams<T, V0>& sp0, const StageParams<T, V1>& sp1,
                            const cusync::FusedScheduleView& f, uint32_t blocks, const cudaLaunchConfig_t& base) {
  using KP = KernelParams<T, V0, V1>;
  static_assert((Shape::kSchedule == Schedule::WholeTiles || Shape::kSchedule == Schedule::SplitK) &&
                    Shape::kResidentKBlocks == 0,
                "fused stages run whole tiles or 64-row split tiles, their weights through the ring");
  constexpr int smem = SharedStorage<typename Shape::Ring, TB, kernelWaits<KP>()>::kSmemRequest;
  KP kp{};
  kp.s0 = sp0;
  kp.s1 = sp1;
  kp.fused = f;
  kp.flags.bEvictFirst = true;  // each stage's own choice decides (StageParams::bEvictFirst)
  kp.flags.waitPrior = launchesProgrammatic(base);
  applyWaiterChoice(kp.flags);
  auto* k = gemmKernel<Shape, T, TB, E0, E1, KP, ALoader>;
  static std::atomic<uint64_t> prepared{0};
  launchPrepared(k, smem, prepared, blocks, base, &kp);
}

// The fused GEMM kernel of two stages (A by TMA tiles), each stage's
// parameters built for its own tile shape.
template <class Shape, class T, int TB, Epilogue E0, Epilogue E1, class V0, class V1>
void launchFusedKernel(const GemmArgs& a0, const V0& v0, StageWorkspace& ws0, const GemmArgs& a1, const V1& v1,
                       StageWorkspace& ws1, const cusync::FusedScheduleView& f, uint32_t blocks,
                       const cudaLaunchConfig_t& base) {
  launchFusedStageKernel<Shape, T, TB, E0, E1, TmaTileA>(
      buildStageParams<typename Shape::template Stage<0>, T, TB>(a0, v0, ws0, blocks, true),
      buildStageParams<typename Shape::template Stage<1>, T, TB>(a1, v1, ws1, blocks, true), f, blocks, base);
}

// The epilogues a translation unit builds kernels for.
template <Epilogue... Es>
struct Epilogues {};
using AllEpilogues = Epilogues<Epilogue::Identity, Epilogue::Bias, Epilogue::Gelu, Epilogue::SwiGLU, Epilogue::Residual>;

// Calls f(std::integral_constant<Epilogue, E>) for a.epilogue if it is one
// of Es and Shape's tiles can run it.
template <class Shape, Epilogue... Es, class F>
void dispatchEpilogueFn(Epilogues<Es...>, const GemmArgs& a, F&& f) {
  auto one = [&](auto e) {
    // Widths of odd 8-column blocks split gate/up pairs (checkArgs refuses them).
    if constexpr (decltype(e)::value == Epilogue::SwiGLU && Shape::BN % 16 != 0)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", "SwiGLU needs a tile width that is a multiple of 16");
    else
      f(e);
  };
  const bool built = ((a.epilogue == Es ? (one(std::integral_constant<Epilogue, Es>{}), true) : false) || ...);
  if (!built)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        std::string("this program does not build epilogue ") + toString(a.epilogue) +
                            " for this launch");
}

template <class Shape, class T, int TB, class View, class Epis>
void dispatchEpilogue(Epis epis, const GemmArgs& a, const View& v, StageWorkspace& ws, uint32_t blocks,
                      const cudaLaunchConfig_t& base, const KernelFlags& f) {
  dispatchEpilogueFn<Shape>(
      epis, a, [&](auto e) { launchKernel<Shape, T, TB, decltype(e)::value>(a, v, ws, blocks, base, f); });
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
// view type; a.config must be resolved. `ws` is the stage's workspace.
template <class T, int TB, class View, class Epis = AllEpilogues>
void launchFamily(const GemmArgs& a, const View& v, StageWorkspace& ws, uint32_t blocks,
                  const cudaLaunchConfig_t& base, const KernelFlags& f) {
  forTableRow(
      a.config,
      [&](auto row) {
        using Shape = KernelShapeOf<decltype(row)::value>;
        if constexpr (Shape::kResidentKBlocks > 0) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", notAGemmConfiguration(a.config));
        } else if constexpr (Shape::kSchedule == Schedule::KCut && !kNoSyncView<View>) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                              std::string("tile configuration ") + toString(a.config) +
                                  " runs only without a stage: its blocks take no tickets");
        } else {
          dispatchEpilogue<Shape, T, TB>(Epis{}, a, v, ws, blocks, base, f);
        }
      },
      std::make_index_sequence<kNumTileConfigs>{});
}

// Calls f(std::integral_constant<size_t, I>) for the pair I of kFusedPairs that is (c0, c1).
template <class F, size_t... I>
bool forFusedPair(TileConfig c0, TileConfig c1, F&& f, std::index_sequence<I...>) {
  return ((kFusedPairs[I].first == c0 && kFusedPairs[I].second == c1 ? (f(std::integral_constant<size_t, I>{}), true)
                                                                      : false) ||
          ...);
}

// The fused kernel of Shape (one shape, or StageShapes) for the epilogues
// in Epis0 x Epis1 (each stage's checked against its own tile width).
template <class Shape, class T, int TB, class Epis0, class Epis1, class V0, class V1>
void dispatchFusedEpilogues(const GemmArgs& a0, const V0& v0, StageWorkspace& ws0, const GemmArgs& a1, const V1& v1,
                            StageWorkspace& ws1, const cusync::FusedScheduleView& f, uint32_t blocks,
                            const cudaLaunchConfig_t& base) {
  auto second = [&](auto e0) {
    dispatchEpilogueFn<typename Shape::template Stage<1>>(Epis1{}, a1, [&](auto e1) {
      launchFusedKernel<Shape, T, TB, decltype(e0)::value, decltype(e1)::value>(a0, v0, ws0, a1, v1, ws1, f, blocks,
                                                                               base);
    });
  };
  dispatchEpilogueFn<typename Shape::template Stage<0>>(Epis0{}, a0, second);
}

// The fused kernel of configurations a0.config and a1.config (one of them,
// or a pair of kFusedPairs) for epilogues in Epis0 x Epis1.
template <class T, int TB, class Epis0, class Epis1, class V0, class V1>
void launchFusedFamily(const GemmArgs& a0, const V0& v0, StageWorkspace& ws0, const GemmArgs& a1, const V1& v1,
                       StageWorkspace& ws1, const cusync::FusedScheduleView& f, uint32_t blocks,
                       const cudaLaunchConfig_t& base) {
  if (a0.config != a1.config) {
    const bool built = forFusedPair(
        a0.config, a1.config,
        [&](auto pair) {
          constexpr FusedPairRow p = kFusedPairs[decltype(pair)::value];
          using Shape = StageShapes<KernelShapeOf<tileConfigIndex(p.first)>, KernelShapeOf<tileConfigIndex(p.second)>>;
          dispatchFusedEpilogues<Shape, T, TB, Epis0, Epis1>(a0, v0, ws0, a1, v1, ws1, f, blocks, base);
        },
        std::make_index_sequence<kNumFusedPairs>{});
    if (!built)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                          std::string("tile configurations ") + toString(a0.config) + " and " + toString(a1.config) +
                              " cannot run fused: a fused kernel runs one configuration or a pair of kFusedPairs");
    return;
  }
  forTableRow(
      a0.config,
      [&](auto row) {
        using Shape = KernelShapeOf<decltype(row)::value>;
        if constexpr (!runsFused(kTileConfigs[decltype(row)::value].config)) {
          throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                              std::string("tile configuration ") + toString(a0.config) +
                                  " cannot run fused: fused stages run whole tiles or 64-row split tiles");
        } else {
          dispatchFusedEpilogues<Shape, T, TB, Epis0, Epis1>(a0, v0, ws0, a1, v1, ws1, f, blocks, base);
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
                                         cusync_gemm::detail::StageWorkspace&, uint32_t,                     \
                                         const cudaLaunchConfig_t&, const cusync_gemm::detail::KernelFlags&);
#define CUSYNC_GEMM_INSTANTIATE_FAMILY(FAMILY, In, Out) CUSYNC_GEMM_FAMILY_DECL_(FAMILY, In, Out)
#define CUSYNC_GEMM_EXTERN_FAMILY(FAMILY, In, Out) extern CUSYNC_GEMM_FAMILY_DECL_(FAMILY, In, Out)
