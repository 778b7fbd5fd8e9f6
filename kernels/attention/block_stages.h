// The block's stage types and the launches of its two GEMM stages, each
// built in a translation unit of its own (block_qkv.cu, block_wo.cu) so
// that they compile in parallel.
#pragma once

#include "cusync/launch.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "kernels/gemm/gemm.h"

namespace cusync_attn::detail {

using QkvStage = cusync::Stage<cusync::policy::NoSync, cusync::policy::RowSync>;
using AttnStage = cusync::Stage<cusync::policy::RowSync, cusync::policy::RowSync>;
using WoStage = cusync::Stage<cusync::policy::RowSync, cusync::policy::NoSync>;

void launchQkv(const cusync_gemm::GemmArgs& a, const QkvStage& s, cusync::Pipeline& pipe);
void launchWo(const cusync_gemm::GemmArgs& a, const WoStage& s, cusync::Pipeline& pipe);

}  // namespace cusync_attn::detail
