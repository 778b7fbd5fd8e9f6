// The attention block of a transformer layer on one GPU: QKV projection
// (appending the new tokens' keys and values to the KV cache), causal
// attention over the cache, output projection, in the variants the
// benchmark and the tests compare:
//
//   Stream    the three kernels in stream order, no tile synchronization
//             (each a programmatic dependent of the one before): our own baseline
//   TileSync  a cusync pipeline (programmatic launches): an attention tile
//             waits for the QKV tiles of its head holding its query rows and
//             the new keys it reads (StridedTileSync over the Q, K and V
//             segments); the output projection's k-blocks wait per head of
//             the attention's output (TileSync), so it starts on the first
//             finished heads
//
// A step of M new tokens after L cached ones: run() writes K and V of the
// new tokens to cache rows [L, L + M), the attention output and O. Both
// variants can be captured in a CUDA graph once constructed.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "kernels/attention/block_plan.h"

namespace cusync_attn {

enum class BlockVariant { Stream, TileSync };
const char* toString(BlockVariant v);

class AttentionBlock {
 public:
  // Plans the step and creates the stages (device memory); allocates and
  // zeroes the attention's workspace where the buffers bring none. Throws
  // cusync::Error for shapes or buffers the kernels refuse.
  AttentionBlock(const BlockModel& model, int64_t M, int64_t L, BlockVariant v, const BlockBuffers& b);
  ~AttentionBlock();
  AttentionBlock(const AttentionBlock&) = delete;
  AttentionBlock& operator=(const AttentionBlock&) = delete;

  // One step, asynchronous on `stream`.
  void run(cudaStream_t stream);

  const BlockPlan& plan() const;
  BlockVariant variant() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cusync_attn
