// Input waits off the loading thread. In a kernel whose stages wait on
// producers, the producer warpgroup's second warp (threads 32-63, the waiter
// warp; thread 32 alone where every stage waits at its walk's first step
// only) resolves the waits: its lane 0 takes the work units from the tile
// scheduler and hands them to the loading thread (thread 0) through a queue
// of two; then the waiter waits, through the stage's input policy, for the
// inputs of every k-block of the unit (gpu-scope acquires of the semaphores,
// then the proxy fence that orders them before TMA loads) and counts the
// k-blocks ready in shared memory. The loader checks that one counter before
// each load of A, so a satisfied wait costs it one shared-memory load:
// measured in the loading thread, evaluating the policy took ~0.3 us per
// k-block (RowSync) and a wait with its fence ~3 us (TileSync), the fence
// waiting behind the TMA loads in flight. The count is published in bulk,
// not per k-block: per k-block, the release/acquire round trips cost a
// RowSync consumer tile ~13 us at M >= 2048.
//
// The fence may run in the waiter: a proxy fence orders memory operations
// that precede it in causality order before async-proxy operations that
// follow it, and the loader's TMA loads follow it through the ready
// counter's release (waiter) and acquire (loader) at CTA scope.
//
// The waiter takes the next unit's ticket when the loader reaches the
// current unit's ticket point (KernelFlags::ticketLead k-blocks before its
// end), as the loader itself does without a waiter, and resolves the next
// unit's first waits while the current unit's last loads run.
//
// A policy that waits at the walk's first step only (RowSync, WholeSync) has
// one span per unit, resolved by lane 0, which remembers the semaphores it
// saw ready in the run (cusync::ReadySet, in the queue's shared memory): a
// unit whose span it already saw satisfied (every tile after a block's first
// under WholeSync, a row band it waited on before under RowSync) costs no
// load and no fence. Any other policy (TileSync and its kin) has a span per
// k-block, and the warp resolves 32 k-blocks at a time: each lane evaluates
// one k-block's span and polls it with relaxed loads, and the k-blocks up to
// the first unsatisfied one are published after one acquire fence per lane
// and one proxy fence. One thread resolving them one by one paid an L2 round
// trip and two fences per producer tile and the span arithmetic per k-block
// at single-thread latency: a TileSync tile waited 18-98 us with its
// producer long done.
#pragma once

#include <cuda/atomic>
#include <cuda/ptx>

#include <cstdint>

#include "cusync/device.h"
#include "cusync/policy/walk.h"
#include "kernels/gemm/kernel/mainloop.cuh"
#include "kernels/gemm/kernel/params.cuh"
#include "kernels/gemm/kernel/sm90.cuh"
#include "kernels/gemm/schedule/unit.cuh"

namespace cusync_gemm::detail {

class WaitQueue {
 public:
  // Shared memory the queue takes (SharedStorage reserves it).
  static constexpr int kSeenOffset = 2 * static_cast<int>(sizeof(Unit)) + 5 * 8 + 8;
  static constexpr int kBytes = kSeenOffset + static_cast<int>(cusync::ReadySet::kWords) * 4;

  __device__ __forceinline__ explicit WaitQueue(unsigned char* base)
      : entries_(reinterpret_cast<Unit*>(base)),
        bars_(reinterpret_cast<uint64_t*>(base + 2 * sizeof(Unit))),
        ready_(reinterpret_cast<uint32_t*>(base + 2 * sizeof(Unit) + 5 * 8)),
        seen_(reinterpret_cast<uint32_t*>(base + kSeenOffset)) {}

  // One thread, beside the ring's barriers.
  __device__ __forceinline__ void init() {
    for (int i = 0; i < 5; ++i) cuda::ptx::mbarrier_init(&bars_[i], 1);
    *ready_ = 0;
    cusync::ReadySet(seen_).clear();
  }

  // Waiter: unit i into the queue (at most two ahead of the loader).
  __device__ __forceinline__ void push(uint32_t i, const Unit& u) {
    mbarWait(empty(i & 1), ((i >> 1) & 1) ^ 1);
    entries_[i & 1] = u;
    cuda::ptx::mbarrier_arrive(full(i & 1));
  }
  // Waiter warp: unit i, once lane 0 pushed it and the warp met after.
  __device__ __forceinline__ Unit entry(uint32_t i) const { return entries_[i & 1]; }
  // Loader: unit i from the queue.
  __device__ __forceinline__ Unit pop(uint32_t i) {
    mbarWait(full(i & 1), (i >> 1) & 1);
    const Unit u = entries_[i & 1];
    cuda::ptx::mbarrier_arrive(empty(i & 1));
    return u;
  }

  // Loader: it reached unit i's ticket point; waiter: waits for that.
  __device__ __forceinline__ void reachTicketPoint() { cuda::ptx::mbarrier_arrive(&bars_[4]); }
  __device__ __forceinline__ void awaitTicketPoint(uint32_t i) { mbarWait(&bars_[4], i & 1); }

  // Waiter: the first n k-blocks (counted over all units) may be loaded.
  // It publishes before each wait that blocks, after each window of the
  // waiter warp and at each unit's end, not per k-block: the loader rereads
  // the count only when its cached copy runs out.
  __device__ __forceinline__ void publishReady(uint32_t n) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_block>(*ready_).store(n, cuda::memory_order_release);
  }
  // Loader: the published count (acquire); and a wait until it reaches n.
  __device__ __forceinline__ uint32_t readyCount() const {
    return cuda::atomic_ref<uint32_t, cuda::thread_scope_block>(*ready_).load(cuda::memory_order_acquire);
  }
  __device__ __forceinline__ uint32_t awaitReady(uint32_t n) const {
    uint32_t r = readyCount();
    while (r < n) r = readyCount();
    return r;
  }

  // Waiter (all its lanes, `resolved` the same in each): waits for the
  // inputs of unit u's k-blocks, a stage tile of kRowsPerTile rows whose A is
  // read through ALoader, with the stage's parameters sp; `resolved` counts
  // k-blocks over all units. A policy that waits at the walk's first step
  // only (policy::waitsAtWalkStartOnly) has that one span evaluated, by lane
  // 0; with `remember`, a span seen satisfied earlier in the run is not
  // polled again. Other policies go window by window (resolveWindows).
  template <class ALoader, int kRowsPerTile, class SP>
  __device__ __forceinline__ void resolveUnit(const SP& sp, const Unit& u, uint32_t& resolved, bool remember) {
    using In = typename SP::View::In;
    const uint32_t lane = threadIdx.x % 32;
    const uint32_t kBlocks = static_cast<uint32_t>(u.kb1 - u.kb0);
    if constexpr (cusync::policy::isNoSync<In>) {
      resolved += kBlocks;  // a stage that waits on nothing
    } else if constexpr (cusync::policy::waitsAtWalkStartOnly<In>) {
      if (lane == 0) {
        const int32_t mTile = static_cast<int32_t>(u.w.tile.y * kRowsPerTile);
        const uint32_t walkStart = static_cast<uint32_t>(ALoader::kColumn(sp, u.kb0));
        const cusync::SemSpan span = cusync::waitSpanOf(sp.view, readOf<ALoader>(sp, u.kb0, mTile, walkStart));
        cusync::ReadySet seen(seen_);
        if (!span.empty() && !(remember && seen.covers(sp.view.in[0].sems, u.w.run, span))) {
          publishReady(resolved);  // the previous unit's k-blocks, before a wait that may block
          cusync::awaitSpan(sp.view, u.w, span, 0, cusync::Reader::AsyncProxy);
          if (remember) seen.add(span);
        }
      }
      resolved += kBlocks;
    } else {
      resolveWindows<ALoader, kRowsPerTile>(sp, u, resolved);
      return;  // published window by window
    }
    if (lane == 0) publishReady(resolved);
  }

 private:
  // The k-blocks of unit u, 32 at a time: lane l polls the span of k-block
  // kb + l once (relaxed loads). The k-blocks before the first lane whose
  // span is short are ready: every lane fences its loads (acquire), the warp
  // meets, and lane 0 publishes them after one proxy fence. The first short
  // span's lane then waits for it (acquire loads, spinning with the
  // backend's back-off and bound), and the next window starts after it.
  template <class ALoader, int kRowsPerTile, class SP>
  __device__ __forceinline__ void resolveWindows(const SP& sp, const Unit& u, uint32_t& resolved) {
    const uint32_t lane = threadIdx.x % 32;
    const int32_t mTile = static_cast<int32_t>(u.w.tile.y * kRowsPerTile);
    const uint32_t walkStart = static_cast<uint32_t>(ALoader::kColumn(sp, u.kb0));
    for (int kb = u.kb0; kb < u.kb1;) {
      const int n = u.kb1 - kb < 32 ? u.kb1 - kb : 32;
      cusync::SemSpan span{};
      bool ready = true;
      if (static_cast<int>(lane) < n) {
        span = cusync::waitSpanOf(sp.view, readOf<ALoader>(sp, kb + static_cast<int>(lane), mTile, walkStart));
        ready = span.empty() || cusync::spanReached(sp.view, u.w, span);
      }
      const uint32_t late = __ballot_sync(~0u, !ready);
      const int first = late != 0 ? __ffs(late) - 1 : n;  // k-blocks kb .. kb + first - 1 are ready
      const int done = first < n ? first + 1 : n;
      if (first > 0) cusync::CudaBackend::fenceAcquire();
      __syncwarp();
      if (first < n) {
        if (first > 0 && lane == 0) publishAsyncReady(resolved + static_cast<uint32_t>(first));  // before blocking
        if (static_cast<int>(lane) == first) cusync::awaitSpan(sp.view, u.w, span, 0, cusync::Reader::Generic);
        __syncwarp();
      }
      if (lane == 0) publishAsyncReady(resolved + static_cast<uint32_t>(done));
      kb += done;
      resolved += static_cast<uint32_t>(done);
    }
  }

  // Lane 0, after the warp met: the k-blocks the lanes' acquires cover, to
  // the loader's TMA loads (the proxy fence, then the count).
  __device__ __forceinline__ void publishAsyncReady(uint32_t n) {
    cusync::CudaBackend::fenceProxyAsync();
    publishReady(n);
  }

  __device__ __forceinline__ uint64_t* full(uint32_t q) const { return &bars_[q]; }
  __device__ __forceinline__ uint64_t* empty(uint32_t q) const { return &bars_[2 + q]; }
  Unit* entries_;
  uint64_t* bars_;  // full[2], empty[2], ticket point
  uint32_t* ready_;
  uint32_t* seen_;  // the waiter's cusync::ReadySet
};

}  // namespace cusync_gemm::detail
