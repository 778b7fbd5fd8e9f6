// The attention block's three stages as plain data: the QKV projection
// (writing Q to its buffer and K, V into the KV cache through a split
// output), the attention, and the output projection, with their tile
// configurations, stage grids and the policies that link them. The block
// (block.h) launches this plan; the CPU emulator test runs it.
#pragma once

#include <cstdint>

#include "cusync/geometry.h"
#include "kernels/attention/attention.h"
#include "kernels/gemm/gemm.h"

namespace cusync_attn {

// One GPU's share of a transformer layer's attention (tensor parallel 8).
struct BlockModel {
  const char* name;
  int64_t hidden;  // the model width: X and O have this many columns
  int heads;       // heads on this GPU, 128 columns each
  constexpr int64_t width() const { return int64_t(heads) * kHeadDim; }
};
inline constexpr BlockModel kGpt3Block{"gpt3", 12288, 12};  // Wqkv 12288 x 4608, Wo 1536 x 12288
inline constexpr BlockModel kLlamaBlock{"llama", 8192, 8};  // Wqkv 8192 x 3072, Wo 1024 x 8192

// Device buffers of one step (bf16, row-major).
struct BlockBuffers {
  const void* x = nullptr;     // [M, hidden]
  const void* wqkv = nullptr;  // [3 H 128, hidden]: Q's rows for every head, then K's, then V's (Linear weight)
  const void* wo = nullptr;    // [hidden, H 128]
  void* q = nullptr;           // [M, H 128]
  void* kv = nullptr;          // [capacity, 2 H 128]: the KV cache (attention.h); rows [L, L + M) are written
  int64_t capacity = 0;
  void* attn = nullptr;        // [M, H 128]: the attention's output, Wo's input
  void* out = nullptr;         // [M, hidden]
  void* workspace = nullptr;   // attentionWorkspaceBytes(plan.attention, sms), zeroed once (the block allocates it if null)
};

struct BlockPlan {
  cusync_gemm::GemmArgs qkv, wo;  // configurations resolved for a stage
  AttentionArgs attention;
  AttentionPlan attentionPlan;
  cusync::Dim3 qkvGrid, qkvTile, woGrid, woTile;
};

// The plan of one step of M new tokens after L cached ones on `sms` SMs.
// Throws cusync::Error for shapes the kernels refuse.
BlockPlan planBlock(const BlockModel& m, int64_t M, int64_t L, int sms, const BlockBuffers& b);

}  // namespace cusync_attn
