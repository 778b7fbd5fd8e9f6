// The attention kernel (kernels/attention/attention.h): one block per work
// item, an item being one split of one tile (head x query block).
//
// Roles: thread 0 (producer warpgroup) loads; NC consumer warpgroups (64
// query rows each) compute. In a stage that waits for its input, the
// producer issues the item's key blocks that lie wholly in the cache first
// (they need no wait), up to a ring's worth, then waits for every QKV row
// the item reads (its queries, the new keys up to its last query) and loads
// Q, then the remaining key blocks: a decode item streams its share of the
// cache while the QKV projection still runs. Without a wait (attention(args,
// stream)) Q goes first, so that the consumers start on the first key block
// while the others land (keyBlocksBeforeQ, attention.h).
//
// Per 64-key block a consumer warpgroup runs S = Q K^T (wgmma, both from
// shared memory), masks causally, updates the running row maximum and sum
// (exp2 with the scale folded in), rescales its O accumulator, packs P to
// bf16 in registers (an accumulator's 16 columns are the A operand's
// layout) and runs O += P V (wgmma with A from registers, V read as [K, N]).
//
// An item that is the only split of its tile normalizes and stores its
// rows. Split items write fp32 O and (max, sum) per row to the workspace;
// the last of a tile's splits to count itself in combines them. The block
// that stores a tile posts it (stages with an output policy).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda/atomic>
#include <cuda/ptx>

#include <cstdint>

#include "cusync/device.h"
#include "cusync/policy/no_sync.h"
#include "cusync/protocol.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/kernel/wgmma_rs.cuh"
#include "kernels/gemm/kernel/mainloop.cuh"
#include "kernels/gemm/kernel/sm90.cuh"

namespace cusync_attn::detail {

namespace gd = cusync_gemm::detail;

constexpr int kSlotBytes = 2 * kKeyBlock * kHeadDim * 2;  // K and V of 64 keys: 32 KiB
constexpr int kBoxBytes = 64 * 128;                        // 64 rows of 64 columns (128 bytes)

// Shared-memory layout of a block with NC consumer warpgroups and NS slots.
template <int NC, int NS>
struct AttnSmem {
  static constexpr int kRows = 64 * NC;
  static constexpr int kQBytes = kRows * kHeadDim * 2;  // two boxes of 64 columns x kRows rows
  static constexpr int kRingOffset = kQBytes;
  static constexpr int kBarOffset = kRingOffset + NS * kSlotBytes;
  static constexpr int kBytes = kBarOffset + (1 + 2 * NS) * 8 + 16;
  static constexpr int kRequest = kBytes + 1024;  // room to align the base to 1024
};

struct AttnWorkspace {
  float* partialO = nullptr;   // [tile][split][rows][128]
  float2* partialML = nullptr; // [tile][split][rows]: running max (log2 domain) and sum
  uint32_t* arrived = nullptr; // [tile]: splits done this run; the combiner resets it
};

template <class View>
struct AttnParams {
  CUtensorMap tmQ;   // Q [M, H*128], boxes of 64 columns x rows-per-tile
  CUtensorMap tmKV;  // KV [L + M, 2*H*128], boxes of 64 columns x 64 keys
  __nv_bfloat16* out;
  int64_t M, L;
  int32_t heads;
  int32_t splits;
  uint32_t queryBlocks;
  float scaleLog2;   // log2(e) / sqrt(128)
  AttnWorkspace ws;
  bool waitPrior;    // launched as a programmatic dependent: wait for the grid before
  bool heavyFirst;   // NoSync: longest (latest) query blocks first
  View view;
};

template <class View>
constexpr bool kSynced = !cusync::policy::isNoSync<typename View::In> || !cusync::policy::isNoSync<typename View::Out>;
// Whether an item's Q load waits for the QKV projection (awaitRows).
template <class View>
constexpr bool kQWaits = !cusync::policy::isNoSync<typename View::In>;

__device__ __forceinline__ uint32_t packBf16(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Barrier over the consumer warpgroups (id 1; 0 is __syncthreads).
template <int NC>
__device__ __forceinline__ void consumersSync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(NC * 128) : "memory");
}

// One item's place: its tile, split and key blocks [kb0, kb1).
struct ItemRange {
  uint32_t head, qb;
  int32_t split;
  uint32_t position;  // the tile's position in the stage order (workspace index)
  int32_t kb0, kb1;
  int64_t q0;         // first query row
};

template <int NC, class View>
__device__ __forceinline__ ItemRange itemOf(const AttnParams<View>& p) {
  ItemRange r;
  const uint32_t item = blockIdx.x;
  r.position = item / static_cast<uint32_t>(p.splits);
  r.split = static_cast<int32_t>(item % static_cast<uint32_t>(p.splits));
  if constexpr (kSynced<View>) {
    // From lane 0: the tile order may come from memory, and the compiler
    // must see the item (the causal mask's branch on it) as warp-uniform.
    const cusync::Dim3 t = cusync::protocol::persistentTile(p.view, r.position);
    r.head = __shfl_sync(0xffffffffu, t.x, 0), r.qb = __shfl_sync(0xffffffffu, t.y, 0);
  } else {
    const uint32_t h = static_cast<uint32_t>(p.heads);
    r.head = r.position % h;
    const uint32_t band = r.position / h;
    r.qb = p.heavyFirst ? p.queryBlocks - 1 - band : band;
  }
  r.q0 = static_cast<int64_t>(r.qb) * (64 * NC);
  const int64_t keys = keysOfQueryBlock(p.L, p.M, 64 * NC, r.qb);
  const int32_t blocks = static_cast<int32_t>((keys + kKeyBlock - 1) / kKeyBlock);
  r.kb0 = static_cast<int32_t>(static_cast<int64_t>(r.split) * blocks / p.splits);
  r.kb1 = static_cast<int32_t>(static_cast<int64_t>(r.split + 1) * blocks / p.splits);
  return r;
}

// The producer's cusync waits, all at once before the item's first load
// that needs them: rows [r0, r1) of the QKV projection's output (row r is
// the new token at position L + r), one read per producer row tile at the
// head's Q column. Spans that continue each other (RowSync's row
// semaphores) merge into one, polled as a batch: waiting block by block
// cost a proxy fence per producer row tile, each waiting behind the ring's
// loads in flight, which starved the consumers of long causal tiles.
template <class View>
__device__ __forceinline__ void awaitRows(const View& view, const cusync::TileWork& work, uint32_t column,
                                          int64_t r0, int64_t r1) {
  if constexpr (!cusync::policy::isNoSync<typename View::In>) {
    if (r1 <= r0) return;
    const int64_t prodRows = view.in[0].prod.tile.y;
    cusync::SemSpan pending;
    for (int64_t t = r0 / prodRows; t <= (r1 - 1) / prodRows; ++t) {
      const cusync::Read rd{column, static_cast<uint32_t>(t * prodRows), 0, column};
      const cusync::SemSpan s = cusync::waitSpanOf(view, rd);
      if (s.empty()) continue;
      const bool line = s.n[1] == 1 && s.n[2] == 1 && pending.n[1] == 1 && pending.n[2] == 1;
      if (!pending.empty() && line && s.step[0] == pending.step[0] && pending.step[0] > 0 &&
          s.first >= pending.first && s.first <= pending.first + pending.n[0] * pending.step[0] &&
          (s.first - pending.first) % pending.step[0] == 0) {
        // Extends (or overlaps) the pending span along its one axis.
        const uint32_t end = (s.first - pending.first) / pending.step[0] + s.n[0];
        if (end > pending.n[0]) pending.n[0] = end;
        continue;
      }
      cusync::awaitSpan(view, work, pending, 0, cusync::Reader::Generic);
      pending = s;
    }
    cusync::awaitSpan(view, work, pending, 0, cusync::Reader::Generic);
    cusync::CudaBackend::fenceProxyAsync();  // the TMA loads after this read what the waits published
  }
}

// The last split of a tile with few live rows (decode, M <= 8) combines
// every split's partials, with weights 2^(m_s - max) in split order
// (deterministic), and stores the rows. Consumer thread ct takes 4 columns
// (one 16-byte chunk) of rows ct / 32 and ct / 32 + 4 NC, 8 splits at a time
// with every load issued before the first use: about one L2 round trip
// whatever the split count. The accumulator layout leaves 4 threads per
// live row, each waiting a round trip per split, twice; it stays the
// faster one for tiles with many live rows (measured on the H100,
// docs/attention.md), whose threads all have rows of their own.
template <int NC, class View>
__device__ __forceinline__ void combineFewRows(const AttnParams<View>& p, const ItemRange& it, int ct) {
  constexpr int kRows = 64 * NC, kRowStep = 4 * NC, kBatch = 8;
  const int chunk = ct & 31;
  const int live = p.M - it.q0 < kRows ? static_cast<int>(p.M - it.q0) : kRows;
  const size_t first = static_cast<size_t>(it.position) * p.splits;
  const int64_t ld = static_cast<int64_t>(p.heads) * kHeadDim;
  const int64_t col = static_cast<int64_t>(it.head) * kHeadDim + 4 * chunk;
  for (int r0 = ct >> 5; r0 < live; r0 += 2 * kRowStep) {
    const int rows[2] = {r0, r0 + kRowStep};
    float4 acc[2];
    float mx[2], sum[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) acc[h] = make_float4(0.f, 0.f, 0.f, 0.f), mx[h] = -INFINITY, sum[h] = 0.f;
    for (int s0 = 0; s0 < p.splits; s0 += kBatch) {
      float2 ml[2][kBatch];
      float4 ov[2][kBatch];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const bool on = s0 + j < p.splits && rows[h] < live;
          const size_t part = (first + s0 + j) * kRows + rows[h];
          // L2 reads (ld.cg): the other splits wrote these from other SMs.
          ml[h][j] = on ? __ldcg(&p.ws.partialML[part]) : make_float2(-INFINITY, 0.f);
          ov[h][j] = on ? __ldcg(reinterpret_cast<const float4*>(p.ws.partialO + part * kHeadDim) + chunk)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float m = mx[h];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) m = fmaxf(m, ml[h][j].x);
        // Every key so far masked: a maximum of 0 keeps the weights 0, not NaN.
        const float use = m == -INFINITY ? 0.f : m, keep = exp2f(mx[h] - use);
        float4 a = acc[h];
        float l = sum[h] * keep;
        a.x *= keep, a.y *= keep, a.z *= keep, a.w *= keep;
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const float w = exp2f(ml[h][j].x - use);
          l += w * ml[h][j].y;
          a.x += w * ov[h][j].x, a.y += w * ov[h][j].y, a.z += w * ov[h][j].z, a.w += w * ov[h][j].w;
        }
        acc[h] = a, sum[h] = l, mx[h] = m;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (rows[h] >= live) continue;
      const float inv = sum[h] > 0.f ? 1.f / sum[h] : 0.f;
      const uint2 v = make_uint2(packBf16(acc[h].x * inv, acc[h].y * inv), packBf16(acc[h].z * inv, acc[h].w * inv));
      *reinterpret_cast<uint2*>(p.out + (it.q0 + rows[h]) * ld + col) = v;
    }
  }
}

template <int NC, int NS, class View>
__global__ void __launch_bounds__(128 * (NC + 1), 1)
    attentionKernel(const __grid_constant__ AttnParams<View> p) {
#if CUSYNC_GEMM_SM90A
  using Smem = AttnSmem<NC, NS>;
  constexpr int kRows = Smem::kRows;
  extern __shared__ unsigned char smemRaw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = smem;
  unsigned char* ring = smem + Smem::kRingOffset;
  uint64_t* qFull = reinterpret_cast<uint64_t*>(smem + Smem::kBarOffset);
  uint64_t* full = qFull + 1;
  uint64_t* empty = full + NS;
  uint32_t* shared32 = reinterpret_cast<uint32_t*>(empty + NS);  // [0] run, [1] combiner flag

  const int tid = threadIdx.x;
  if (tid == 0) {
    cuda::ptx::mbarrier_init(qFull, 1);
    for (int s = 0; s < NS; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], uint32_t{NC});
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    if constexpr (kSynced<View>) {
      // The block's ticket names the run; the tile comes from the block index.
      shared32[0] = cusync::tileOfTicket(p.view, cusync::ticketElected(p.view)).run;
    } else {
      cusync::CudaBackend::triggerDependents();
    }
  }
  __syncthreads();
  if (p.waitPrior) asm volatile("griddepcontrol.wait;\n" ::: "memory");
  const ItemRange it = itemOf<NC>(p);
  const int nBlocks = it.kb1 - it.kb0;
  const uint32_t headCol = it.head * kHeadDim;

  if (tid < 128) {
    if (tid != 0) return;
    // Producer.
    cusync::TileWork work;
    work.tile = cusync::Dim3(it.head, it.qb, 0);
    work.run = shared32[0];
    work.valid = true;
    const int32_t kvCol = static_cast<int32_t>(p.heads) * kHeadDim;  // V's first column
    auto loadQ = [&]() {
      // Every new row this item reads: from its first new key (or its
      // queries) to its last query row.
      const int64_t qEnd = it.q0 + kRows < p.M ? it.q0 + kRows : p.M;
      const int64_t firstKey = static_cast<int64_t>(it.kb0) * kKeyBlock;
      const int64_t firstNew = firstKey > p.L ? firstKey - p.L : 0;
      const bool readsNewKeys = static_cast<int64_t>(it.kb1) * kKeyBlock > p.L;
      awaitRows(p.view, work, headCol, readsNewKeys && firstNew < it.q0 ? firstNew : it.q0, qEnd);
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, qFull,
                                           uint32_t{Smem::kQBytes});
      for (int c = 0; c < 2; ++c) {
        const int32_t xy[2] = {static_cast<int32_t>(headCol) + 64 * c, static_cast<int32_t>(it.q0)};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sQ + c * kRows * 128,
                                        &p.tmQ, xy, qFull);
      }
    };
    // Q first where its load waits for nothing; else key blocks wholly in
    // the cache (no wait), up to a ring of them, go ahead of Q's wait.
    const int qAt = static_cast<int>(keyBlocksBeforeQ(kQWaits<View>, p.L, it.kb0, it.kb1, NS));
    gd::RingCursor<NS> cur;
    for (int i = 0; i < nBlocks; ++i) {
      if (i == qAt) loadQ();
      const int64_t key0 = static_cast<int64_t>(it.kb0 + i) * kKeyBlock;
      gd::mbarWait(&empty[cur.stage], cur.phase ^ 1);
      unsigned char* slot = ring + cur.stage * kSlotBytes;
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &full[cur.stage], uint32_t{kSlotBytes});
      for (int c = 0; c < 4; ++c) {  // K columns 0-63, 64-127, then V's
        const int32_t xy[2] = {(c < 2 ? 0 : kvCol) + static_cast<int32_t>(headCol) + 64 * (c & 1),
                               static_cast<int32_t>(key0)};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, slot + c * kBoxBytes,
                                        &p.tmKV, xy, &full[cur.stage]);
      }
      cur.advance();
    }
    if (nBlocks > 0 && qAt == nBlocks) loadQ();
    return;
  }

  // Consumers: warpgroup cw holds query rows [q0 + 64 cw, q0 + 64 cw + 64).
  // The consumer index from lane 0, so that the compiler sees it (and the
  // causal mask's branch on it) as warp-uniform: a branch it cannot see as
  // uniform makes the key loop divergent code, whose wgmma descriptors then
  // move from vector to uniform registers before every wgmma.
  const int cw = __shfl_sync(0xffffffffu, tid / 128 - 1, 0);
  const int t = tid % 128, warp = t / 32, lane = t % 32;
  const int rowInTile = cw * 64 + warp * 16 + lane / 4;  // and rowInTile + 8
  const int64_t rowA = it.q0 + rowInTile, rowB = rowA + 8;
  const int colInQuad = 2 * (lane % 4);
  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  float mA = -INFINITY, mB = -INFINITY, lA = 0.f, lB = 0.f;

  if (nBlocks > 0) {
    gd::mbarWait(qFull, 0);
    const gd::MovingDesc dQ0(gd::smemDesc(sQ + cw * 64 * 128, 16, 1024));
    const gd::MovingDesc dQ1(gd::smemDesc(sQ + kRows * 128 + cw * 64 * 128, 16, 1024));
    // K's and V's descriptors built once and moved to a slot by constants
    // (as the GEMM's consumers do: ~12 instructions per smemDesc saved).
    const gd::MovingDesc dKBase(gd::smemDesc(ring, 16, 1024));
    const gd::MovingDesc dVBase(gd::smemDesc(ring + 2 * kBoxBytes, 8192, 1024));
    static_assert(kSlotBytes % 16 == 0 && kBoxBytes % 16 == 0, "descriptors move by 16-byte units");
    int stage = 0;
    uint32_t phase = 0;
    for (int i = 0; i < nBlocks; ++i) {
      gd::mbarWait(&full[stage], phase);
      const uint32_t slotUnits = static_cast<uint32_t>(stage) * (kSlotBytes / 16);
      const gd::MovingDesc dK0(dKBase.plus(slotUnits));
      const gd::MovingDesc dK1(dKBase.plus(slotUnits + kBoxBytes / 16));
      float s[32];
      gd::wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        const uint64_t da = kk < 4 ? dQ0.plus((kk & 3) * 2) : dQ1.plus((kk & 3) * 2);
        const uint64_t db = kk < 4 ? dK0.plus((kk & 3) * 2) : dK1.plus((kk & 3) * 2);
        gd::wgmma_m64n64k16_bf16<0>(s, da, db, kk > 0 ? 1 : 0);
      }
      gd::wgmmaCommit();
      gd::wgmmaWait<0>();
      gd::fenceRegs(s);

      // Causal mask: key k is visible to row r iff k <= L + r (keys past the
      // cache's new rows are then masked too, for every stored row).
      const int64_t key0 = static_cast<int64_t>(it.kb0 + i) * kKeyBlock;
      if (key0 + kKeyBlock - 1 > p.L + it.q0 + cw * 64) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int64_t key = key0 + 8 * j + colInQuad + e;
            if (key > p.L + rowA) s[4 * j + e] = -INFINITY;
            if (key > p.L + rowB) s[4 * j + 2 + e] = -INFINITY;
          }
      }
      float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        mxA = fmaxf(mxA, fmaxf(s[4 * j], s[4 * j + 1]));
        mxB = fmaxf(mxB, fmaxf(s[4 * j + 2], s[4 * j + 3]));
      }
      const float newA = fmaxf(mA, quadMax(mxA) * p.scaleLog2);
      const float newB = fmaxf(mB, quadMax(mxB) * p.scaleLog2);
      // A row with every key so far masked keeps a maximum of -inf: use 0, so that its P and correction are 0, not NaN.
      const float useA = newA == -INFINITY ? 0.f : newA, useB = newB == -INFINITY ? 0.f : newB;
      const float corrA = exp2f(mA - useA), corrB = exp2f(mB - useB);
      mA = newA, mB = newB;
      float sumA = 0.f, sumB = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        s[4 * j] = exp2f(s[4 * j] * p.scaleLog2 - useA);
        s[4 * j + 1] = exp2f(s[4 * j + 1] * p.scaleLog2 - useA);
        s[4 * j + 2] = exp2f(s[4 * j + 2] * p.scaleLog2 - useB);
        s[4 * j + 3] = exp2f(s[4 * j + 3] * p.scaleLog2 - useB);
        sumA += s[4 * j] + s[4 * j + 1];
        sumB += s[4 * j + 2] + s[4 * j + 3];
      }
      lA = lA * corrA + sumA;
      lB = lB * corrB + sumB;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        o[4 * j] *= corrA, o[4 * j + 1] *= corrA;
        o[4 * j + 2] *= corrB, o[4 * j + 3] *= corrB;
      }
      uint32_t a[4][4];
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        a[kk][0] = packBf16(s[8 * kk], s[8 * kk + 1]);
        a[kk][1] = packBf16(s[8 * kk + 2], s[8 * kk + 3]);
        a[kk][2] = packBf16(s[8 * kk + 4], s[8 * kk + 5]);
        a[kk][3] = packBf16(s[8 * kk + 6], s[8 * kk + 7]);
      }
      const gd::MovingDesc dV(dVBase.plus(slotUnits));
      gd::wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) gd::wgmma_m64n128k16_rs_bf16<1>(o, a[kk], dV.plus(kk * 128), 1);
      gd::wgmmaCommit();
      gd::wgmmaWait<0>();
      gd::fenceRegs(o);
      if (t == 0) cuda::ptx::mbarrier_arrive(&empty[stage]);
      if (++stage == NS) stage = 0, phase ^= 1;
    }
  }
  lA = quadSum(lA);
  lB = quadSum(lB);

  bool stored = false;  // the tile's rows, by the combine of few rows
  if (p.splits > 1) {
    // Partials of this split, then count in; the last split combines.
    // Rows past M carry no token: they are neither written nor combined (a
    // decode step of one token moves 1/64 of a tile's partials).
    const size_t part = static_cast<size_t>(it.position) * p.splits + it.split;
    float* po = p.ws.partialO + part * kRows * kHeadDim;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int col = 8 * j + colInQuad;
      if (rowA < p.M) *reinterpret_cast<float2*>(po + rowInTile * kHeadDim + col) = make_float2(o[4 * j], o[4 * j + 1]);
      if (rowB < p.M)
        *reinterpret_cast<float2*>(po + (rowInTile + 8) * kHeadDim + col) = make_float2(o[4 * j + 2], o[4 * j + 3]);
    }
    if (lane % 4 == 0) {
      if (rowA < p.M) p.ws.partialML[part * kRows + rowInTile] = make_float2(mA, lA);
      if (rowB < p.M) p.ws.partialML[part * kRows + rowInTile + 8] = make_float2(mB, lB);
    }
    __threadfence();
    consumersSync<NC>();
    if (tid == 128) {
      cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrived(p.ws.arrived[it.position]);
      const uint32_t before = arrived.fetch_add(1u, cuda::memory_order_acq_rel);
      const bool last = before + 1 == static_cast<uint32_t>(p.splits);
      if (last) arrived.store(0u, cuda::memory_order_relaxed);  // every split of this run has counted in
      shared32[1] = last ? 1u : 0u;
    }
    consumersSync<NC>();
    if (shared32[1] == 0) return;
    __threadfence();
    if (p.M - it.q0 <= kRowsCombinedInOnePass * NC) {
      combineFewRows<NC>(p, it, tid - 128);
      stored = true;
    } else {
      // Many live rows: every consumer thread combines its own accumulator
      // rows, split by split (each thread's 16 loads of a split in flight).
      const size_t first = static_cast<size_t>(it.position) * p.splits;
      const bool liveA = rowA < p.M, liveB = rowB < p.M;
      float maxA = -INFINITY, maxB = -INFINITY;
      for (int s = 0; s < p.splits && liveA; ++s) {
        maxA = fmaxf(maxA, __ldcg(&p.ws.partialML[(first + s) * kRows + rowInTile]).x);
        if (liveB) maxB = fmaxf(maxB, __ldcg(&p.ws.partialML[(first + s) * kRows + rowInTile + 8]).x);
      }
      if (maxA == -INFINITY) maxA = 0.f;
      if (maxB == -INFINITY) maxB = 0.f;
#pragma unroll
      for (int i = 0; i < 64; ++i) o[i] = 0.f;
      lA = lB = 0.f;
      for (int s = 0; s < p.splits && liveA; ++s) {
        const float2 mlA = __ldcg(&p.ws.partialML[(first + s) * kRows + rowInTile]);
        const float2 mlB = liveB ? __ldcg(&p.ws.partialML[(first + s) * kRows + rowInTile + 8]) : make_float2(0.f, 0.f);
        const float wA = exp2f(mlA.x - maxA), wB = exp2f(mlB.x - maxB);
        lA += wA * mlA.y;
        lB += wB * mlB.y;
        const float* ps = p.ws.partialO + (first + s) * kRows * kHeadDim;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const int col = 8 * j + colInQuad;
          // L2 reads (ld.cg): the other splits wrote these from other SMs.
          const float2 va = __ldcg(reinterpret_cast<const float2*>(ps + rowInTile * kHeadDim + col));
          const float2 vb = liveB ? __ldcg(reinterpret_cast<const float2*>(ps + (rowInTile + 8) * kHeadDim + col))
                                  : make_float2(0.f, 0.f);
          o[4 * j] += wA * va.x, o[4 * j + 1] += wA * va.y;
          o[4 * j + 2] += wB * vb.x, o[4 * j + 3] += wB * vb.y;
        }
      }
    }
  }

  if (!stored) {
    // Store the tile's rows from the accumulators (rows past M belong to no token).
    const int64_t ld = static_cast<int64_t>(p.heads) * kHeadDim;
    const float invA = lA > 0.f ? 1.f / lA : 0.f, invB = lB > 0.f ? 1.f / lB : 0.f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int64_t col = headCol + 8 * j + colInQuad;
      if (rowA < p.M)
        *reinterpret_cast<uint32_t*>(p.out + rowA * ld + col) = packBf16(o[4 * j] * invA, o[4 * j + 1] * invA);
      if (rowB < p.M)
        *reinterpret_cast<uint32_t*>(p.out + rowB * ld + col) = packBf16(o[4 * j + 2] * invB, o[4 * j + 3] * invB);
    }
  }
  if constexpr (kSynced<View>) {
    consumersSync<NC>();  // every row of the tile stored before the post
    if (tid == 128) {
      cusync::TileWork work;
      work.tile = cusync::Dim3(it.head, it.qb, 0);
      work.run = shared32[0];
      work.valid = true;
      cusync::CudaBackend::takeTicket(p.view.tickets);  // the finisher's ticket: a run takes tiles + blocks
      cusync::postElected(p.view, work);
    }
  }
#endif
}

}  // namespace cusync_attn::detail
