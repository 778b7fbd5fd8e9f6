// The attention block of a transformer layer on one GPU: QKV projection
// (appending the new tokens' keys and values to the KV cache), causal
// attention over the cache, output projection, in the variants the
// benchmark and the tests compare:
//
//   Stream    the three kernels in stream order, no tile synchronization
//             (each a programmatic dependent of the one before): our own baseline
//   RowSync   a cusync pipeline (programmatic launches): an attention tile
//             waits for the rows of the QKV projection that hold its queries
//             and the new keys it reads (RowSync: one semaphore per row of
//             QKV tiles, whose widths need not divide a head's Q, K and V
//             segments); an output projection tile waits once, at its first
//             k-block, for every head of its rows (RowSync): waiting per
//             head (TileSync) cost a fenced wait per head and k-block pair
//             that made the projection 1.5x slower with all heads done
//
// A step of M new tokens after L cached ones: run() writes K and V of the
// new tokens to cache rows [L, L + M), the attention output and O. Both
// variants can be captured in a CUDA graph once constructed.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "cusync/launch_mode.h"
#include "kernels/attention/block_plan.h"

namespace cusync_attn {

enum class BlockVariant { Stream, RowSync };
const char* toString(BlockVariant v);

class AttentionBlock {
 public:
  // Plans the step and creates the stages (device memory); allocates and
  // zeroes the attention's workspace where the buffers bring none. Throws
  // cusync::Error for shapes or buffers the kernels refuse.
  // `mode` places the RowSync variant's launches (cusync/launch_mode.h).
  AttentionBlock(const BlockModel& model, int64_t M, int64_t L, BlockVariant v, const BlockBuffers& b,
                 cusync::LaunchMode mode = cusync::LaunchMode::Pdl);
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
