// Split K's partials: how the parts of a cut tile hand their fp32
// accumulators to the part that stores the tile (write, flag, wait, add), in
// a fixed order so that runs are bit-identical, and the per-run counter reset.
// Used by the SplitK, TailSplit and KCut schedules (split_k.cuh, k_cut.cuh).
#pragma once

#include <cuda/atomic>

#include <cstdint>

namespace cusync_gemm::detail {

// A per-run ticket counter (the stage's, or split K's unit counter): the
// taker of the run's last ticket (t == perRun - 1) resets it for the next
// run. Every ticket of a run is taken before the next run starts (a launch
// waits for the previous one on the stream), so the reset races with nothing.
__device__ __forceinline__ void resetAfterLast(unsigned long long* counter, unsigned long long t,
                                               unsigned long long perRun) {
  if (t == perRun - 1) atomicExch(counter, 0ull);
}

// Split K: waits (thread 0 of the consumer warpgroup cw) until n partials of
// its rows are written (writePartial), resets the flag for the next run, then
// lets the warpgroup read them.
__device__ __forceinline__ void awaitPartials(uint32_t* flag, uint32_t n, int cw) {
  if (threadIdx.x % 128 == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> fl(*flag);
    while (fl.load(cuda::memory_order_acquire) < n) __nanosleep(32);
    fl.store(0u, cuda::memory_order_relaxed);  // every arrival of this run is in
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
}

// A consumer warpgroup's fp32 accumulator fragment to dst in fragment order:
// thread t of 128 writes its R4 float4 at dst[r * 128 + t], cached in L2 only.
template <int R4>
__device__ __forceinline__ void storeFragment(const float (&acc)[4 * R4], float4* dst) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int r = 0; r < R4; ++r)
    __stcg(dst + r * 128 + t, make_float4(acc[4 * r], acc[4 * r + 1], acc[4 * r + 2], acc[4 * r + 3]));
}

// Split K: a consumer warpgroup's fp32 partial goes to dst (storeFragment);
// then, once the whole warpgroup's stores are in, one release add on its
// flag. The barrier orders the other threads' stores before it and the release is cumulative
// over them (docs/design.md, "Memory ordering": barrier, then a release update at gpu
// scope); a seq_cst fence before the add cost each part ~0.5 us more of its
// fixup and is not needed.
template <int R4>
__device__ __forceinline__ void writePartial(const float (&acc)[4 * R4], float4* dst, int cw, uint32_t* flag) {
  storeFragment<R4>(acc, dst);
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
  if (threadIdx.x % 128 == 0)
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*flag).fetch_add(1u, cuda::memory_order_release);
}

// Split K: adds n fp32 partials (the k-th at partAt(k), each written by
// storeFragment) to acc, in the order k = 0, 1, ... for every element, so
// the sums are the same bits however the reads are scheduled. The reads are
// pipelined: each partial in two or four chunks, the next chunk's loads in
// flight while the current one is added, so the reader waits about one L2
// round trip in all instead of one per partial or batch (reading the
// partials is latency-bound). Two chunks of registers fit
// beside acc.
template <int R4, class PartAt>
__device__ __forceinline__ void addPartials(float (&acc)[4 * R4], uint32_t n, PartAt partAt) {
  constexpr int B = R4 <= 24 ? R4 / 2 : R4 / 4;  // float4 per chunk
  constexpr int C = R4 / B;                     // chunks per partial
  static_assert(R4 % B == 0 && C % 2 == 0, "partials split into an even number of whole chunks");
  const int t = threadIdx.x % 128;
  auto load = [&](float4(&b)[B], uint32_t k, int q) {
    const float4* src = partAt(k) + t + q * B * 128;
#pragma unroll
    for (int i = 0; i < B; ++i) b[i] = __ldcg(src + i * 128);
  };
  auto add = [&](const float4(&b)[B], int q) {
#pragma unroll
    for (int i = 0; i < B; ++i) {
      acc[4 * (q * B + i)] += b[i].x;
      acc[4 * (q * B + i) + 1] += b[i].y;
      acc[4 * (q * B + i) + 2] += b[i].z;
      acc[4 * (q * B + i) + 3] += b[i].w;
    }
  };
  float4 b0[B], b1[B];
  load(b0, 0, 0);
  for (uint32_t k = 0; k < n; ++k) {
#pragma unroll
    for (int q = 0; q < C; q += 2) {
      load(b1, k, q + 1);
      add(b0, q);
      if (q + 2 < C) load(b0, k, q + 2);
      else if (k + 1 < n) load(b0, k + 1, 0);
      add(b1, q + 1);
    }
  }
}

// Split K: adds one partial written by writePartial() into acc.
template <int R4>
__device__ __forceinline__ void addPartial(float (&acc)[4 * R4], const float4* src) {
  addPartials<R4>(acc, 1u, [&](uint32_t) { return src; });
}

// Split K, shared fixup (all parts of a tile run at once): a warp's 16 rows
// of a tile (its slab) are owned by one part; the other parts write their
// fp32 partial of the slab (thread t of the warpgroup holds R4 float4 at
// dst[r * 128 + t], storeFragment) and raise the slab's flag, one release add per warp
// (after __syncwarp, as writePartial after its barrier).
template <int R4>
__device__ __forceinline__ void writeSlabPartial(const float (&acc)[4 * R4], float4* dst, uint32_t* flag) {
  storeFragment<R4>(acc, dst);
  __syncwarp();
  if (threadIdx.x % 32 == 0)
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(*flag).fetch_add(1u, cuda::memory_order_release);
}

// The owning warp waits (lane 0) until n parts wrote its slab, resets the
// flag for the next run, then lets the warp read them.
__device__ __forceinline__ void awaitSlab(uint32_t* flag, uint32_t n) {
  if (threadIdx.x % 32 == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> fl(*flag);
    while (fl.load(cuda::memory_order_acquire) < n) __nanosleep(32);
    fl.store(0u, cuda::memory_order_relaxed);
  }
  __syncwarp();
}

// Split K: the order in which a warp's slab of a split tile adds its S parts
// (each step a + b, and a + b rounds as b + a). With o the slab's owner in a
// shared fixup: part o first with part S - 1, then the other parts in
// increasing order. The finisher (part S - 1, holding its own part in acc)
// and the owner (part o, holding its own) both add in place in this order,
// so a shared fixup and a finisher give the same bits. The owner is slab mod
// S, or for two parts the consumer index (each part owns one consumer's 64
// rows: measured 1-2% faster than alternating warps).
__device__ __forceinline__ uint32_t slabOwner(int cw, uint32_t S) {
  return S == 2 ? static_cast<uint32_t>(cw) : static_cast<uint32_t>(cw * 4 + (threadIdx.x % 128) / 32) % S;
}

// Adds a slab's other S - 1 parts (part s's partial at partOf(s), written by
// writePartial or writeSlabPartial) to acc in slabOwner()'s order. acc holds
// part `held`: the slab's owner `own` in a shared fixup, part S - 1 in a
// finisher. First the other of own and S - 1, then the rest ascending.
template <int R4, class PartOf>
__device__ __forceinline__ void addPartsInSlabOrder(float (&acc)[4 * R4], uint32_t own, uint32_t held, uint32_t S,
                                                    PartOf partOf) {
  auto partAt = [&](uint32_t k) -> uint32_t {  // the k-th part to add
    if (own == S - 1) return k;
    if (k == 0) return held == own ? S - 1 : own;
    return k - 1 < own ? k - 1 : k;
  };
  addPartials<R4>(acc, S - 1, [&](uint32_t k) { return partOf(partAt(k)); });
}

}  // namespace cusync_gemm::detail
