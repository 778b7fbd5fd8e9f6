// Input waits off the loading thread. In a kernel whose stages wait on
// producers, the producer warpgroup's second thread (the waiter, thread 32)
// takes the work units from the tile scheduler, hands them to the loading
// thread (thread 0) through a queue of two, and for every k-block of a unit
// waits through the stage's input policy: acquire loads of the semaphores at
// gpu scope, then the proxy fence that orders them before TMA loads. It then
// counts the k-block ready in shared memory. The loader checks that one
// counter before each load of A, so a satisfied wait costs it one
// shared-memory load: measured in the loading thread, evaluating the policy
// took ~0.3 us per k-block (RowSync) and a wait with its fence ~3 us (TileSync),
// the fence waiting behind the TMA loads in flight. The count is published
// in bulk (kPublishEvery): per k-block, the release/acquire round trips cost
// a RowSync consumer tile ~13 us at M >= 2048.
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
// Under RowSync and WholeSync it remembers the semaphores it saw ready in
// the run (cusync::ReadySet, in the queue's shared memory): a unit whose span
// it already saw satisfied (every tile after a block's first under
// WholeSync, a row band it waited on before under RowSync) costs no load and
// no fence.
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
  // It publishes before each wait that blocks, every kPublishEvery k-blocks
  // and at each unit's end, not per k-block: the loader rereads the count
  // only when its cached copy runs out.
  static constexpr uint32_t kPublishEvery = 8;
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

  // Waiter: waits for the inputs of unit u's k-blocks, a stage tile of
  // kRowsPerTile rows whose A is read through ALoader, with the stage's
  // parameters sp; `resolved` counts k-blocks over all units. The wait hook
  // runs in its two halves: most k-blocks read no new producer tile and need
  // no wait. A policy that waits at the walk's first step only (RowSync,
  // WholeSync: policy::waitsAtWalkStartOnly) has that one span evaluated:
  // the waiter is one thread, every instruction costs it its full latency,
  // and a span per k-block keeps the loader 2-6 us per unit behind satisfied
  // waits. With `remember`, such a span seen satisfied earlier in the run is
  // not polled again.
  template <class ALoader, int kRowsPerTile, class SP>
  __device__ __forceinline__ void resolveUnit(const SP& sp, const Unit& u, uint32_t& resolved, bool remember) {
    using In = typename SP::View::In;
    if constexpr (cusync::policy::isNoSync<In>) {
      resolved += static_cast<uint32_t>(u.kb1 - u.kb0);  // a stage that waits on nothing
    } else {
      const int32_t mTile = static_cast<int32_t>(u.w.tile.y * kRowsPerTile);
      const uint32_t walkStart = static_cast<uint32_t>(ALoader::kColumn(sp, u.kb0));
      uint32_t published = resolved;
      if constexpr (cusync::policy::waitsAtWalkStartOnly<In>) {
        awaitInputs(sp, u, cusync::waitSpanOf(sp.view, readOf<ALoader>(sp, u.kb0, mTile, walkStart)), remember,
                    resolved, published);
        resolved += static_cast<uint32_t>(u.kb1 - u.kb0);
      } else {
        // No ReadySet here: this loop checks a span every few k-blocks, and
        // its bookkeeping costs TileSync consumers 5-7% on the H100, more
        // than the polls of producer tiles seen before save.
        for (int kb = u.kb0; kb < u.kb1; ++kb) {
          awaitInputs(sp, u, cusync::waitSpanOf(sp.view, readOf<ALoader>(sp, kb, mTile, walkStart)), false,
                      resolved, published);
          if (++resolved - published >= kPublishEvery) publishReady(published = resolved);
        }
      }
    }
    publishReady(resolved);
  }

 private:
  // Waits for one span of unit u (empty: nothing). Before a wait that may
  // block it publishes what is resolved, so the loader goes on meanwhile; a
  // span the ReadySet holds blocks nothing and costs no load or fence.
  template <class SP>
  __device__ __forceinline__ void awaitInputs(const SP& sp, const Unit& u, const cusync::SemSpan& span, bool remember,
                                              uint32_t resolved, uint32_t& published) {
    cusync::ReadySet seen(seen_);
    if (span.empty() || (remember && seen.covers(sp.view.in[0].sems, u.w.run, span))) return;
    if (published != resolved) publishReady(published = resolved);
    cusync::awaitSpan(sp.view, u.w, span, 0, cusync::Reader::AsyncProxy);
    if (remember) seen.add(span);
  }

  __device__ __forceinline__ uint64_t* full(uint32_t q) const { return &bars_[q]; }
  __device__ __forceinline__ uint64_t* empty(uint32_t q) const { return &bars_[2 + q]; }
  Unit* entries_;
  uint64_t* bars_;  // full[2], empty[2], ticket point
  uint32_t* ready_;
  uint32_t* seen_;  // the waiter's cusync::ReadySet
};

}  // namespace cusync_gemm::detail
