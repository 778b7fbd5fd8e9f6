// The GEMM as a stage of a cusync pipeline: include this from a CUDA
// translation unit built for sm_90a (CUDA_ARCHITECTURES 90a).
//
//   GemmArgs g1 = ..., g2 = ...;   // shapes, pointers, epilogues
//   const TileConfig c1 = resolveConfig(g1, sms, LaunchContext::Stage), c2 = ...;
//   cusync::Stage<NoSync, RowSync> s1("gemm1", stageGrid(g1, c1), stageTile(g1, c1));
//   cusync::Stage<RowSync, NoSync> s2("gemm2", stageGrid(g2, c2), stageTile(g2, c2));
//   cusync::pair(s1, s2);
//   cusync::Pipeline pipe(cusync::LaunchMode::Pdl, stream);
//   cusync_gemm::gemm(g1, s1, pipe);
//   cusync_gemm::gemm(g2, s2, pipe);
//   pipe.finish();
//
// Every launch resolves its configuration as gemm(args, stream) does, for a
// stage (resolveConfig(.., LaunchContext::Stage): no KCut), and the stage's
// grid and tile must match it. The launch is persistent: the stage's view is
// taken for ticketBlocks(args, config, SMs) blocks.
//
// Compile time: a call instantiates every configuration x epilogue of the
// families it may run (by default all four: bf16 / fp16 x B layout) for the
// stage's policies, in the calling translation unit. Restrict them with
// gemm<Families<Family::Bf16NK>, Epilogues<Epilogue::Gelu>>(...), or declare
// the families extern and instantiate each in a unit of its own:
//
//   CUSYNC_GEMM_EXTERN_FAMILY(Bf16NK, NoSync, RowSync)        // caller
//   CUSYNC_GEMM_INSTANTIATE_FAMILY(Bf16NK, NoSync, RowSync)   // one unit
//
// (policies as written in the caller's scope, e.g. cusync::policy::RowSync).
#pragma once

#include <string>
#include <type_traits>

#include "cusync/fused.h"
#include "cusync/launch.h"
#include "cusync/policy/whole_sync.h"
#include "cusync/stage.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch.cuh"

namespace cusync_gemm {

using detail::AllEpilogues;
using detail::Epilogues;
using detail::Family;
template <Family... Fs>
struct Families {};
using AllFamilies = Families<Family::Bf16NK, Family::Bf16KN, Family::F16NK, Family::F16KN>;

namespace detail {
template <class Epis, class View, Family... Fs>
void launchStaged(Families<Fs...>, const GemmArgs& a, const View& v, StageWorkspace& ws, uint32_t blocks,
                  const cudaLaunchConfig_t& cfg, const KernelFlags& flags) {
  const Family want = familyOf(a);
  const bool built =
      ((want == Fs ? (launchFamily<FamilyType<Fs>, kFamilyTransB<Fs>, View, Epis>(a, v, ws, blocks, cfg, flags),
                      true)
                   : false) ||
       ...);
  if (!built)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, v.name,
                        "this program does not build the staged GEMM for the operands' element type and B layout");
}

template <class Epis0, class Epis1, class V0, class V1, Family... Fs>
void launchFused(Families<Fs...>, const GemmArgs& a0, const V0& v0, StageWorkspace& ws0, const GemmArgs& a1,
                 const V1& v1, StageWorkspace& ws1, const cusync::FusedScheduleView& f, uint32_t blocks,
                 const cudaLaunchConfig_t& base, const std::string& name) {
  const Family want = familyOf(a0);
  const bool built =
      ((want == Fs ? (launchFusedFamily<FamilyType<Fs>, kFamilyTransB<Fs>, Epis0, Epis1>(a0, v0, ws0, a1, v1, ws1, f,
                                                                                       blocks, base),
                      true)
                   : false) ||
       ...);
  if (!built)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, name,
                        "this program does not build the fused GEMM for the operands' element type and B layout");
}
}  // namespace detail

namespace detail {
// Places a launch of the GEMM kernel for `a` (configuration resolved) as
// `stage` at the pipeline's next position: checks the stage against the
// configuration, sets the launch shape and flags, and calls
// launch(cfg, view, workspace, blocks, flags) to launch the kernel (gemm()
// below, and the convolution's conv2d(args, stage, pipeline)); workspace is
// the stage's own (cusync::Stage::workspace()), where split-K and tail-split
// launches keep their counter, flags and partials.
template <class StageT, class Launch>
void launchAsStage(const GemmArgs& a, const StageT& stage, cusync::Pipeline& pipe, int sms, Launch&& launch) {
  if (!runsInStages(a.config))
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, stage.name(),
                        std::string("tile configuration ") + toString(a.config) +
                            " runs only through gemm(args, stream), without a stage: its blocks take no tickets");
  if (stage.shape().grid != stageGrid(a, a.config) || stage.shape().tile != stageTile(a, a.config))
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        std::string("stage grid/tile do not match tile configuration ") + toString(a.config));
  cusync::LaunchShape shape;
  const uint32_t blocks = persistentBlocks(a, a.config, sms);
  shape.grid = dim3(blocks);
  shape.block = dim3(kThreads);
  shape.persistent = true;
  shape.ticketBlocks = ticketBlocks(a, a.config, sms);
  // Static tiles (KernelFlags::staticRuns) need every block a stage waits on
  // resident or done before the stage's blocks start (Serial, Pdl), and pay
  // where the stage's blocks start their tiles together: every stage of a
  // Serial pipeline, and in a Pdl one a stage without inputs or one that
  // waits for its whole producer (WholeSync). A finer-grained consumer's
  // blocks start one by one as the producer's retire, and tickets hand each
  // tile to a free block (static tiles ran 6-14% slower for rowsync at GPT-3
  // M = 3072-4096 on the H100; 1-10% faster for the stages above).
  constexpr bool kWholeWait = std::is_same_v<typename StageT::In, cusync::policy::WholeSync>;
  const cusync::LaunchMode mode = pipe.mode();
  KernelFlags flags;
  // A stage flagged WaitsForPriorGrid keeps that promise: every thread waits
  // for the grids before it before touching global memory.
  flags.waitPrior = (stage.opts() & cusync::WaitsForPriorGrid) != 0;
  // B's loads carry the L2 evict-first hint where the configuration's own
  // rule picks it (weightsEvictFirst: one band of rows, or few bands over a
  // long K), as in gemm()'s launches; in a pipeline it also keeps the
  // producer's output in L2 for the consumer.
  flags.bEvictFirst = !envSwitchOff(kEnvEvictFirst);
  if (stage.isConsumer()) applyWaiterChoice(flags);
  // CUSYNC_GEMM_STAGE_STATIC=2 (A/B runs) gives every Serial or Pdl stage
  // static tiles: still deadlock-free there, since in both modes every
  // producer block has started before a consumer block does.
  static const bool allStatic = envInt(kEnvStageStatic) == 2;
  flags.staticRuns = !envSwitchOff(kEnvStageStatic) &&
                     (mode == cusync::LaunchMode::Serial ||
                      (mode == cusync::LaunchMode::Pdl && (!stage.isConsumer() || kWholeWait || allStatic)));
  pipe.launchWith(stage, shape, [&](const cudaLaunchConfig_t& cfg, const typename StageT::View& view) {
    launch(cfg, view, stage.workspace(), blocks, flags);
    return cudaSuccess;  // launch errors are thrown
  });
}
}  // namespace detail

// Launches the GEMM of `args` as `stage` at the pipeline's next position.
// Fams and Epis restrict the kernels a translation unit builds.
template <class Fams = AllFamilies, class Epis = AllEpilogues, class StageT>
void gemm(const GemmArgs& args, const StageT& stage, cusync::Pipeline& pipe) {
  checkArgs(args);
  const detail::DeviceInfo& d = detail::requireHopper();
  GemmArgs a = args;
  a.config = resolveConfig(args, d.sms, LaunchContext::Stage);
  detail::launchAsStage(a, stage, pipe, d.sms,
                        [&](const cudaLaunchConfig_t& cfg, const typename StageT::View& view,
                            detail::StageWorkspace& ws, uint32_t blocks, const detail::KernelFlags& flags) {
                          detail::launchStaged<Epis>(Fams{}, a, view, ws, blocks, cfg, flags);
                        });
}

// The same, alone in plain stream order (LaunchMode::Serial).
template <class Fams = AllFamilies, class Epis = AllEpilogues, class StageT>
void gemm(const GemmArgs& args, const StageT& stage, cudaStream_t stream) {
  cusync::Pipeline pipe(cusync::LaunchMode::Serial, stream);
  gemm<Fams, Epis>(args, stage, pipe);
  pipe.finish();
}

namespace detail {
// The launch configuration of a fused kernel on `stream`: where the
// schedule's first stage waits for the grids before it (WaitsForPriorGrid),
// a programmatic dependent of them, so that its blocks are placed and set up
// during that kernel's tail, as a Pdl pipeline's first stage is (the kernel
// then waits for them before it touches global memory: launchesProgrammatic).
// CUSYNC_GEMM_FUSED_PDL=0 launches it in plain stream order, for A/B runs.
class FusedLaunchConfig {
 public:
  FusedLaunchConfig(cudaStream_t stream, int firstStageOpts) {
    static const bool allowed = !envSwitchOff(kEnvFusedPdl);
    cfg_.stream = stream;
    if (allowed && (firstStageOpts & cusync::WaitsForPriorGrid) != 0) {
      attr_ = cusync::programmaticDependentLaunch();
      cfg_.attrs = &attr_;
      cfg_.numAttrs = 1;
    }
  }
  FusedLaunchConfig(const FusedLaunchConfig&) = delete;
  FusedLaunchConfig& operator=(const FusedLaunchConfig&) = delete;
  const cudaLaunchConfig_t& base() const { return cfg_; }

 private:
  cudaLaunchAttribute attr_{};
  cudaLaunchConfig_t cfg_{};
};

// Throws unless `stage` fits position `index` of a fused schedule for the
// GEMM of `a` (configuration resolved; `kind` names it in the message): its
// grid and tile, and the schedule's unit count. gemmFused and the
// convolution's fused pair check their stages with it.
template <class StageT>
void checkFusedStage(const GemmArgs& a, const StageT& stage, const cusync::FusedSchedule<>& schedule, uint32_t index,
                     int sms, const char* kind) {
  if (stage.shape().grid != stageGrid(a, a.config) || stage.shape().tile != stageTile(a, a.config))
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        std::string("stage grid/tile do not match ") + kind + " configuration " + toString(a.config));
  const uint32_t units = workUnits(a, a.config, sms);
  if (schedule.units(index) != units)
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        "the fused schedule counts " + std::to_string(schedule.units(index)) + " units where " +
                            toString(a.config) + " makes " + std::to_string(units));
}
}  // namespace detail

// Two GEMM stages as one fused kernel (cusync/fused.h): one persistent grid
// takes stage0's units, then stage1's, from `schedule`'s counter, so stage1's
// tiles start in stage0's last wave and its weights stream while it waits.
// The stages run resolveFusedConfigs(args0, args1, SMs) (a tile width per
// stage where the kernel runs that pair); build the schedule with
// workUnits(argsI, stage I's config, SMs) units per stage, in this order. With
// stage0 flagged WaitsForPriorGrid the kernel is a programmatic dependent of
// the kernel before it in the stream (FusedLaunchConfig).
template <class Fams = AllFamilies, class Epis0 = AllEpilogues, class Epis1 = AllEpilogues, class St0, class St1>
void gemmFused(const GemmArgs& args0, const St0& stage0, const GemmArgs& args1, const St1& stage1,
               const cusync::FusedSchedule<>& schedule, cudaStream_t stream) {
  checkArgs(args0);
  checkArgs(args1);
  const detail::DeviceInfo& d = detail::requireHopper();
  GemmArgs a0 = args0, a1 = args1;
  const FusedConfigs configs = resolveFusedConfigs(args0, args1, d.sms);
  a0.config = configs.first;
  a1.config = configs.second;
  if (detail::familyOf(a0) != detail::familyOf(a1))
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, schedule.name(),
                        "a fused pipeline's stages need one element type and B layout");
  detail::checkFusedStage(a0, stage0, schedule, 0, d.sms, "GEMM");
  detail::checkFusedStage(a1, stage1, schedule, 1, d.sms, "GEMM");
  const uint32_t units = schedule.units(0) + schedule.units(1);
  const uint32_t blocks = std::min<uint32_t>(units, static_cast<uint32_t>(d.sms));
  const detail::FusedLaunchConfig launch(stream, stage0.opts());
  const cusync::FusedScheduleView f = schedule.view(blocks);
  const auto v0 = stage0.view();
  const auto v1 = stage1.view();
  detail::launchFused<Epis0, Epis1>(Fams{}, a0, v0, stage0.workspace(), a1, v1, stage1.workspace(), f, blocks,
                                    launch.base(), schedule.name());
}

}  // namespace cusync_gemm
