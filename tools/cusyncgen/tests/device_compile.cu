// Compile-only check (no GPU needed): a generated header's policies and
// orders work in device code, through the core library's device API.
#include "cusync/device.h"
#include "cusync/stage_view.h"
#include "gpt3_attention.h"

namespace gen = gpt3_attention;

// The attention stage: head j reads at its Q columns; the policy waits for whole rows of QKV tiles.
__global__ void attentionTiles(cusync::StageView<gen::attn_in, gen::attn_out> v) {
  __shared__ cusync::TileWork slot;
  const cusync::TileWork w = cusync::tile(v, &slot);
  const uint32_t start = w.tile.x * v.shape.tile.x;
  for (uint32_t k = start; k < start + v.shape.tile.x; k += v.shape.tile.z)
    cusync::wait(v, w, cusync::Read{k, w.tile.y * v.shape.tile.y, w.tile.z, start});
  cusync::post(v, w);
}

// <stage>_shape is a host constant; kernels get shapes from their StageView.
__global__ void orderOnDevice(uint32_t* out, cusync::Dim3 grid) {
  *out = gen::wo_order{}.linearIndex(cusync::Dim3(1, 2, 0), grid);
}
