// AttentionBlock (block.h): the plan's stages and their launches.
#include "kernels/attention/block.h"

#include <optional>

#include "cusync/memory.h"
#include "kernels/attention/attention_staged.cuh"
#include "kernels/attention/block_stages.h"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_attn {

const char* toString(BlockVariant v) { return v == BlockVariant::Stream ? "stream" : "rowsync"; }

struct AttentionBlock::Impl {
  BlockVariant variant;
  cusync::LaunchMode mode;
  BlockPlan plan;
  void* ownedWorkspace = nullptr;
  std::optional<detail::QkvStage> qkv;
  std::optional<detail::AttnStage> attn;
  std::optional<detail::WoStage> wo;

  ~Impl() { cusync::DeviceMemory::release(ownedWorkspace); }
};

AttentionBlock::AttentionBlock(const BlockModel& model, int64_t M, int64_t L, BlockVariant v, const BlockBuffers& b,
                               cusync::LaunchMode mode)
    : impl_(std::make_unique<Impl>()) {
  const int sms = cusync_gemm::detail::requireHopper().sms;
  Impl& s = *impl_;
  s.variant = v;
  s.mode = mode;
  s.plan = planBlock(model, M, L, sms, b);
  if (s.plan.attention.workspace == nullptr && s.plan.attentionPlan.splits > 1) {
    s.ownedWorkspace = cusync::DeviceMemory::allocZeroed(attentionWorkspaceBytes(s.plan.attention, sms));
    s.plan.attention.workspace = s.ownedWorkspace;
  }
  if (v == BlockVariant::RowSync) {
    using namespace cusync::policy;
    s.qkv.emplace("qkv", s.plan.qkvGrid, s.plan.qkvTile, NoSync{}, RowSync{});
    s.attn.emplace("attention", s.plan.attentionPlan.stageGrid, s.plan.attentionPlan.stageTile, RowSync{}, RowSync{});
    s.wo.emplace("wo", s.plan.woGrid, s.plan.woTile, RowSync{}, NoSync{});
    detail::orderAndPair(*s.qkv, *s.attn, *s.wo, s.plan);
  }
}

AttentionBlock::~AttentionBlock() = default;

void AttentionBlock::run(cudaStream_t stream) {
  Impl& s = *impl_;
  if (s.variant == BlockVariant::Stream) {
    cusync_gemm::gemm(s.plan.qkv, stream);
    attention(s.plan.attention, stream);
    cusync_gemm::gemm(s.plan.wo, stream);
    return;
  }
  cusync::Pipeline pipe(s.mode, stream);
  detail::launchQkv(s.plan.qkv, *s.qkv, pipe);
  attention(s.plan.attention, *s.attn, pipe);
  detail::launchWo(s.plan.wo, *s.wo, pipe);
  pipe.finish();
}

const BlockPlan& AttentionBlock::plan() const { return impl_->plan; }
BlockVariant AttentionBlock::variant() const { return impl_->variant; }

}  // namespace cusync_attn
