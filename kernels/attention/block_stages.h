// The rowsync variant's stages (block.h): their types on any memory (the
// device's; the CPU emulator test builds them on host memory), their tile
// orders and pairing, and the launches of the two GEMM stages, each built
// in a translation unit of its own (block_qkv.cu, block_wo.cu) so that they
// compile in parallel. Host-includable.
#pragma once

#include "cusync/memory.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "cusync/tile_order.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/block_plan.h"
#include "kernels/gemm/gemm.h"

namespace cusync {
class Pipeline;  // cusync/launch.h, CUDA translation units only
}

namespace cusync_attn::detail {

template <class Memory = cusync::DeviceMemory>
using QkvStageOn = cusync::Stage<cusync::policy::NoSync, cusync::policy::RowSync, Memory>;
template <class Memory = cusync::DeviceMemory>
using AttnStageOn = cusync::Stage<cusync::policy::RowSync, cusync::policy::RowSync, Memory>;
template <class Memory = cusync::DeviceMemory>
using WoStageOn = cusync::Stage<cusync::policy::RowSync, cusync::policy::NoSync, Memory>;
using QkvStage = QkvStageOn<>;
using AttnStage = AttnStageOn<>;
using WoStage = WoStageOn<>;

// Orders and pairs the three stages of `plan`. The GEMM stages walk their
// tiles as gemm() does (bands of rows, column by column: the weights stay
// in L2 per band); the attention takes its longest tiles first, for by the
// time its blocks find SMs the QKV projection's blocks are retiring.
template <class Memory>
void orderAndPair(QkvStageOn<Memory>& qkv, AttnStageOn<Memory>& attn, WoStageOn<Memory>& wo, const BlockPlan& plan) {
  qkv.setOrder(cusync::GroupedOrder{cusync_gemm::orderGroup(plan.qkv.config)});
  attn.setOrder(LongestFirstOrder{});
  wo.setOrder(cusync::GroupedOrder{cusync_gemm::orderGroup(plan.wo.config)});
  cusync::pair(qkv, attn);
  cusync::pair(attn, wo);
}

void launchQkv(const cusync_gemm::GemmArgs& a, const QkvStage& s, cusync::Pipeline& pipe);
void launchWo(const cusync_gemm::GemmArgs& a, const WoStage& s, cusync::Pipeline& pipe);

}  // namespace cusync_attn::detail
