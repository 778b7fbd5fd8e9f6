// Environment switches of the GEMM, for A/B runs on one binary: each turns
// one launch choice of gemm() off or overrides it. Read once per process.
// `cusync-bench gemm --help` lists them from kEnvSwitches.
#pragma once

namespace cusync_gemm {

struct EnvSwitch {
  const char* name;
  const char* effect;
};

inline constexpr const char* kEnvKCut = "CUSYNC_GEMM_KCUT";
inline constexpr const char* kEnvPdl = "CUSYNC_GEMM_PDL";
inline constexpr const char* kEnvStaticFirst = "CUSYNC_GEMM_STATIC_FIRST";
inline constexpr const char* kEnvStaticAll = "CUSYNC_GEMM_STATIC_ALL";
inline constexpr const char* kEnvEvictFirst = "CUSYNC_GEMM_B_EVICT_FIRST";
inline constexpr const char* kEnvOrderGroup = "CUSYNC_GEMM_ORDER_GROUP";
inline constexpr const char* kEnvPrefetchB = "CUSYNC_GEMM_PREFETCH_B";
inline constexpr const char* kEnvStageStatic = "CUSYNC_GEMM_STAGE_STATIC";
inline constexpr const char* kEnvWaitMemo = "CUSYNC_GEMM_WAIT_MEMO";
inline constexpr const char* kEnvWaiterLead = "CUSYNC_GEMM_WAITER_LEAD";
inline constexpr const char* kEnvSplits = "CUSYNC_GEMM_SPLITS";
inline constexpr const char* kEnvFusedPdl = "CUSYNC_GEMM_FUSED_PDL";
inline constexpr const char* kEnvFusedStageWidths = "CUSYNC_GEMM_FUSED_STAGE_WIDTHS";

inline constexpr EnvSwitch kEnvSwitches[] = {
    {kEnvKCut, "=0: Auto never picks a KCut configuration for gemm()"},
    {kEnvPdl, "=0: gemm() launches without programmatic dependent launch"},
    {kEnvStaticFirst, "=0: gemm()'s blocks take their first tile by ticket, not by block index"},
    {kEnvStaticAll, "=0: gemm()'s WholeTiles blocks take later tiles by ticket, not block b tiles b, b + blocks, ..."},
    {kEnvEvictFirst, "=0: B's loads never carry the L2 evict-first hint"},
    {kEnvOrderGroup, "=n: gemm() walks its tiles in bands of n tile rows (default 8; 6 for 128x168)"},
    {kEnvStageStatic, "=0: a pipeline's GEMM stages always take their tiles by ticket, never block b tiles b, b + G, ...; "
                      "=2: every stage of a Serial or Pdl pipeline takes static tiles, also a consumer that waits tile by tile"},
    {kEnvWaitMemo, "=0: a stage that waits polls every wait, also on semaphores it saw ready earlier in the run"},
    {kEnvWaiterLead, "=n: a stage that waits takes its next tile n k-blocks before the current one's loads end (default 3)"},
    {kEnvSplits, "=n: 64-row split tiles (64x128-splitk) whose caller leaves splitK at 0 take n parts (1 to 32) instead of the heuristic's 1 or 2"},
    {kEnvFusedPdl, "=0: a fused kernel (gemmFused, conv2dFused) whose first stage waits for prior grids launches in "
                   "plain stream order, not as their programmatic dependent"},
    {kEnvFusedStageWidths, "=0: a fused pipeline's stages run one configuration, never a width each (resolveFusedConfigs)"},
    {kEnvPrefetchB, "=1: a gemm() stage that waits on its inputs prefetches its weights into L2 meanwhile (off: slower on H100)"},
};

// Whether switch `name` is set to 0 (off).
bool envSwitchOff(const char* name);
// The positive integer value of switch `name`, or 0 when it is unset or not one.
int envInt(const char* name);

}  // namespace cusync_gemm
