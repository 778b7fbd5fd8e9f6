// The attention kernel as a stage of a cusync pipeline: include this from a
// CUDA translation unit built for sm_90a.
//
//   const AttentionPlan plan = planAttention(args, sms);
//   cusync::Stage<RowSync, RowSync> st("attention", plan.stageGrid, plan.stageTile);
//   st.setOrder(LongestFirstOrder{});   // attention.h
//   cusync::pair(qkvStage, st);  cusync::pair(st, woStage);
//   attention(args, st, pipe);
//
// Its input policy sees, per tile (head h, query block b), reads of the
// QKV projection's output at column 128 h (the head's Q; its K and V lie in
// the same rows) in the rows of the new tokens it reads: its own query
// rows, and every new key row up to its last query row, one read per
// producer row tile. Each tile posts once,
// after its rows are stored. Blocks take one ticket each for the run
// number, and the block that stores a tile one more, so the stage's view is
// taken for as many persistent blocks as the launch has.
#pragma once

#include <string>

#include "cusync/launch.h"
#include "cusync/stage.h"
#include "kernels/attention/host/attention_launch.cuh"

namespace cusync_attn {

template <class StageT>
void attention(const AttentionArgs& args, const StageT& stage, cusync::Pipeline& pipe) {
  checkArgs(args);
  const cusync_gemm::detail::DeviceInfo& d = cusync_gemm::detail::requireHopper();
  const AttentionPlan p = planAttention(args, d.sms);
  if (stage.shape().grid != p.stageGrid || stage.shape().tile != p.stageTile)
    throw cusync::Error(cusync::ErrorCode::GridMismatch, stage.name(),
                        "stage grid/tile do not match the attention plan (planAttention): grid (" +
                            std::to_string(p.stageGrid.x) + ", " + std::to_string(p.stageGrid.y) + "), tile (" +
                            std::to_string(p.stageTile.x) + ", " + std::to_string(p.stageTile.y) + ", " +
                            std::to_string(p.stageTile.z) + ")");
  cusync::LaunchShape shape;
  shape.grid = dim3(p.tiles * static_cast<uint32_t>(p.splits));
  shape.block = dim3(detail::threadsOf(p));
  shape.sharedBytes = detail::smemOf(p);
  shape.persistent = true;
  const bool waitPrior = (stage.opts() & cusync::WaitsForPriorGrid) != 0;
  pipe.launchWith(stage, shape, [&](const cudaLaunchConfig_t& cfg, const typename StageT::View& view) {
    detail::launchAttention(args, p, view, cfg, waitPrior, /*heavyFirst=*/false);
    return cudaSuccess;  // launch errors are thrown
  });
}

}  // namespace cusync_attn
