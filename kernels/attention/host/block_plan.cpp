// planBlock (block_plan.h): plain C++ over the GEMM's heuristic and the attention plan.
#include "kernels/attention/block_plan.h"

#include <string>

#include "cusync/error.h"
#include "kernels/gemm/heuristic.h"

namespace cusync_attn {

BlockPlan planBlock(const BlockModel& m, int64_t M, int64_t L, int sms, const BlockBuffers& b) {
  if (m.hidden < 8 || m.hidden % 8 != 0 || m.heads < 1)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, m.name,
                        "the model needs a hidden width that is a positive multiple of 8 and at least one head");
  const int64_t W = m.width();
  BlockPlan p;
  p.attention.M = M;
  p.attention.L = L;
  p.attention.heads = m.heads;
  p.attention.capacity = b.capacity;
  p.attention.Q = b.q;
  p.attention.kv = b.kv;
  p.attention.out = b.attn;
  p.attention.workspace = b.workspace;
  checkArgs(p.attention);  // M, L and the capacity before the GEMMs' pointers
  p.attentionPlan = planAttention(p.attention, sms);

  using namespace cusync_gemm;
  p.qkv.M = M;
  p.qkv.N = 3 * W;
  p.qkv.K = m.hidden;
  p.qkv.A = b.x;
  p.qkv.B = b.wqkv;
  p.qkv.C = b.q;
  p.qkv.C2 = b.kv ? static_cast<unsigned char*>(b.kv) + L * 2 * W * 2 : nullptr;  // row L of the cache
  p.qkv.splitN = W;
  checkArgs(p.qkv);
  p.qkv.config = resolveConfig(p.qkv, sms, LaunchContext::Stage);
  p.qkvGrid = stageGrid(p.qkv, p.qkv.config);
  p.qkvTile = stageTile(p.qkv, p.qkv.config);

  p.wo.M = M;
  p.wo.N = m.hidden;
  p.wo.K = W;
  p.wo.A = b.attn;
  p.wo.B = b.wo;
  p.wo.C = b.out;
  checkArgs(p.wo);
  p.wo.config = resolveConfig(p.wo, sms, LaunchContext::Stage);
  p.woGrid = stageGrid(p.wo, p.wo.config);
  p.woTile = stageTile(p.wo, p.wo.config);
  return p;
}

}  // namespace cusync_attn
