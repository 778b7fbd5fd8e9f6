// Environment switches of the attention, for A/B runs on one binary: each
// overrides one choice of the plan (planAttention) for every launch that
// leaves it to the library. Read once per process. `cusync-bench attention
// --help` lists them from kEnvSwitches.
#pragma once

#include "kernels/gemm/env.h"

namespace cusync_attn {

inline constexpr const char* kEnvMinSplitBlocks = "CUSYNC_ATTN_MIN_SPLIT_BLOCKS";

inline constexpr cusync_gemm::EnvSwitch kEnvSwitches[] = {
    {kEnvMinSplitBlocks,
     "=n: each automatic key split keeps at least n 64-key blocks of the longest tile\n"
     "    (default 2 where M <= 8, 8 in a prefill (L = 0), else 4), unless\n"
     "    AttentionArgs::minBlocksPerSplit is set"},
};

}  // namespace cusync_attn
