// The block's QKV projection as a stage (bf16, B as [N, K], no epilogue).
#include "kernels/attention/block_stages.h"
#include "kernels/gemm/gemm_staged.cuh"

namespace cusync_attn::detail {

void launchQkv(const cusync_gemm::GemmArgs& a, const QkvStage& s, cusync::Pipeline& pipe) {
  using namespace cusync_gemm;
  gemm<Families<Family::Bf16NK>, Epilogues<Epilogue::Identity>>(a, s, pipe);
}

}  // namespace cusync_attn::detail
