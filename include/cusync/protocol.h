// The wait / post / dispense protocol, written once and templated on an
// execution backend B. The GPU instantiates it with CudaBackend
// (cusync/backend_cuda.h); the CPU emulator with emu::HostBackend. Neither
// copies it.
//
// A backend provides (all static):
//   bool isLeader()                      the one thread of a block that spins and posts
//   void barrier()                       block-wide barrier
//   unsigned long long takeTicket(p)     atomic fetch-add of 1 on a 64-bit counter
//   uint32_t loadAcquire(p)              gpu-scope acquire load
//   uint32_t loadRelaxed(p)              gpu-scope relaxed load
//   void fenceAcquire()                  gpu-scope acquire fence (after relaxed loads)
//   void storeRelease(p, v)              gpu-scope release store
//   void addRelease(p, v)                gpu-scope release fetch-add
//   void fenceGpu()                      gpu-scope fence (the original API's post uses it)
//   void fenceProxyAsync()               order generic-proxy acquires before async-proxy (TMA) reads
//   void triggerDependents()             let a programmatically dependent launch start
//   void onSpin(info, spins)             called on every unsuccessful poll: back off, bound, report
//   void onSpinDone()
#pragma once

#include "cusync/policy/no_sync.h"
#include "cusync/ready_set.h"
#include "cusync/stage_view.h"
#include "cusync/tile_order.h"

namespace cusync {

// Who reads the data a wait protects.
enum class Reader { Generic, AsyncProxy };

namespace protocol {

// Wrap-safe "value has reached target": semaphores only grow, by at most one
// run's worth beyond what any waiter expects, so comparing the difference as a
// signed number stays right when the 32-bit counter wraps.
CUSYNC_HD bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

template <class B>
CUSYNC_HD void spinUntil(const uint32_t* addr, uint32_t target, StallInfo info) {
  uint32_t seen = B::loadAcquire(addr);
  if (reached(seen, target)) return;
  info.addr = addr;
  info.expected = target;
  for (unsigned long long spins = 1;; ++spins) {
    info.seen = seen;
    B::onSpin(info, spins);
    seen = B::loadAcquire(addr);
    if (reached(seen, target)) break;
  }
  B::onSpinDone();
}

// The tile at position `index` of the stage's order (row-major and grouped
// orders computed, others read from the table).
template <class V>
CUSYNC_HD Dim3 tileAtPosition(const V& v, uint32_t index) {
  return v.orderGroup > 0 ? groupedTile(index, v.shape.grid, v.orderGroup) : v.order[index];
}

// The tile of the index-th ticket in a persistent launch: row-major where the
// stage has no order table or avoids it (AvoidCustomOrder), else the stage
// order. Kernels that count tiles themselves (split units, static first
// tiles) decode them with this too, so they walk the order tickets walk.
template <class V>
CUSYNC_HD Dim3 persistentTile(const V& v, uint32_t index) {
  const bool hardwareOrder = (v.opts & AvoidCustomOrder) || v.order == nullptr;
  return hardwareOrder ? rowMajorTile(index, v.shape.grid) : tileAtPosition(v, index);
}

// The tile of ticket t; blockLinear is the block's own index, used with
// AvoidCustomOrder in non-persistent launches.
template <class B, class V>
CUSYNC_HD TileWork decodeTicket(const V& v, unsigned long long t, uint32_t blockLinear) {
  TileWork w;
  w.run = static_cast<uint32_t>(t / v.ticketsPerRun) + 1;
  w.index = static_cast<uint32_t>(t % v.ticketsPerRun);
  w.valid = w.index < v.numTiles;
  if (!w.valid) return w;
  // A non-persistent launch (one block per tile) in hardware order runs the
  // tile of its own block index.
  const bool hardwareOrder = (v.opts & AvoidCustomOrder) || v.order == nullptr;
  const bool persistent = v.ticketsPerRun != v.numTiles;
  w.tile = hardwareOrder && !persistent ? rowMajorTile(blockLinear, v.shape.grid) : persistentTile(v, w.index);
  if (w.index == 0 && v.started != nullptr) B::storeRelease(v.started, w.run);
  return w;
}

// Takes the next ticket and decodes it; called by one thread. A persistent
// kernel may take the ticket (B::takeTicket on v.tickets) well before it
// decodes it, so that the atomic's latency hides behind its current tile.
template <class B, class V>
CUSYNC_HD TileWork dispenseElected(const V& v, uint32_t blockLinear) {
  return decodeTicket<B>(v, B::takeTicket(v.tickets), blockLinear);
}

// Block-wide dispense: the leader takes a ticket and shares it through `slot`
// (shared memory). Also lets a programmatically dependent consumer launch:
// once every block of this grid has been here, the consumer may be scheduled.
template <class B, class V>
CUSYNC_HD TileWork dispense(const V& v, TileWork* slot, uint32_t blockLinear) {
  B::triggerDependents();
  B::barrier();  // the slot may still be read from the previous tile
  if (B::isLeader()) *slot = dispenseElected<B>(v, blockLinear);
  B::barrier();
  return *slot;
}

// The semaphores a read of input `input` waits on (empty: none). Pure
// arithmetic, no memory access: a kernel may evaluate it ahead of the wait.
template <class V>
CUSYNC_HD SemSpan waitSpanOf(const V& v, const Read& r, uint32_t input = 0) {
  if constexpr (policy::isNoSync<typename V::In>) {
    return SemSpan{};
  } else {
    const auto& link = v.in[input];
    return link.policy.waitSpan(r, v.shape, link.prod);
  }
}

// Semaphores are polled in batches of kPollBatch relaxed loads in flight at
// once, then one acquire fence where all of them reached their targets: one
// acquire load per semaphore made a satisfied span a chain of L2 round trips
// (~0.7 us each on the H100).
constexpr uint32_t kPollBatch = 8;

// Whether the semaphores at positions [first, first + kPollBatch) of span
// (those it has) reached their targets in run w.run, from relaxed loads. No
// fence: a caller that acts on `true` runs B::fenceAcquire() first.
template <class B, class Link>
CUSYNC_HD bool batchReached(const Link& link, const TileWork& w, const SemSpan& span, uint32_t first) {
  const uint32_t count = span.count();
  uint32_t seen[kPollBatch] = {};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (uint32_t i = 0; i < kPollBatch; ++i)
    if (first + i < count) seen[i] = B::loadRelaxed(link.sems + span.at(first + i) * kSemStride);
  bool all = true;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (uint32_t i = 0; i < kPollBatch; ++i)
    if (first + i < count) {
      const uint32_t s = span.at(first + i);
      all = all && reached(seen[i], w.run * link.policy.waitValue(s, link.prod));
    }
  return all;
}

// Whether every semaphore of `span` reached its target, polled once with
// relaxed loads, never spinning. No fence: a thread that then reads what the
// span protects runs B::fenceAcquire() first (and B::fenceProxyAsync() for
// TMA reads). Lets several threads poll several spans at once and pay one
// fence for all of them (the GEMM's waiter warp).
template <class B, class V>
CUSYNC_HD bool spanReached(const V& v, const TileWork& w, const SemSpan& span, uint32_t input = 0) {
  if constexpr (!policy::isNoSync<typename V::In>) {
    const auto& link = v.in[input];
    for (uint32_t base = 0; base < span.count(); base += kPollBatch)
      if (!batchReached<B>(link, w, span, base)) return false;
  }
  return true;
}

// One thread waits for every semaphore of `span` (from waitSpanOf): a batch
// whose semaphores all reached their targets costs one acquire fence; one
// with a semaphore short of its target waits semaphore by semaphore.
template <class B, class V>
CUSYNC_HD void awaitSpan(const V& v, const TileWork& w, const SemSpan& span, uint32_t input = 0,
                         Reader reader = Reader::Generic) {
  if constexpr (!policy::isNoSync<typename V::In>) {
    if (span.empty()) return;
    const auto& link = v.in[input];
    StallInfo info;
    info.stage = v.name;
    info.tile = w.tile;
    info.input = input;
    const uint32_t count = span.count();
    for (uint32_t base = 0; base < count; base += kPollBatch) {
      if (batchReached<B>(link, w, span, base)) {
        B::fenceAcquire();
        continue;
      }
      for (uint32_t i = base; i < count && i < base + kPollBatch; ++i) {
        info.sem = span.at(i);
        spinUntil<B>(link.sems + info.sem * kSemStride, w.run * link.policy.waitValue(info.sem, link.prod), info);
      }
    }
    if (reader == Reader::AsyncProxy) B::fenceProxyAsync();
  }
}

// awaitSpan for a thread that waits on the same semaphores again and again
// (a persistent kernel's waiter): semaphores `ready` saw reach their targets
// in this run are not polled again, and a span it holds entirely costs no
// load and no fence (cusync/ready_set.h says why that is safe). `ready`
// belongs to this input's semaphores; it records what this wait saw.
template <class B, class V>
CUSYNC_HD void awaitSpanOnce(const V& v, const TileWork& w, const SemSpan& span, ReadySet& ready, uint32_t input = 0,
                             Reader reader = Reader::Generic) {
  if constexpr (!policy::isNoSync<typename V::In>) {
    if (span.empty() || ready.covers(v.in[input].sems, w.run, span)) return;
    awaitSpan<B>(v, w, span, input, reader);
    ready.add(span);
  }
}

// One thread waits for every semaphore of the read's span. No barrier: for
// warp-specialized kernels whose elected thread then issues the loads.
template <class B, class V>
CUSYNC_HD void waitElected(const V& v, const TileWork& w, const Read& r, uint32_t input = 0,
                           Reader reader = Reader::Generic) {
  protocol::awaitSpan<B>(v, w, protocol::waitSpanOf(v, r, input), input, reader);
}

// Block-wide wait: the leader spins, then a barrier releases the block.
template <class B, class V>
CUSYNC_HD void wait(const V& v, const TileWork& w, const Read& r, uint32_t input = 0,
                    Reader reader = Reader::Generic) {
  if constexpr (!policy::isNoSync<typename V::In>) {
    const auto& link = v.in[input];
    if (!link.policy.isSync(r, v.shape, link.prod)) return;
    if (B::isLeader()) waitElected<B>(v, w, r, input, Reader::Generic);
    B::barrier();
    if (reader == Reader::AsyncProxy) B::fenceProxyAsync();
  }
}

// One thread publishes the tile. The caller must already have ordered every
// store of the tile before this thread (a barrier over the storing threads;
// for TMA stores, cp.async.bulk.wait_group 0 in the issuing thread first).
// No separate fence: a gpu-scope release is cumulative, so it also publishes
// the stores the barrier ordered before it.
template <class B, class V>
CUSYNC_HD void postElected(const V& v, const TileWork& w) {
  if constexpr (!policy::isNoSync<typename V::Out>) {
    const uint32_t sem = v.out.tileIndex(w.tile, v.shape);
    const uint32_t value = v.out.postValue(w.tile, v.shape);
    if (v.opts & NoAtomicAdd)
      B::storeRelease(v.postSems + sem * kSemStride, w.run * value);
    else
      B::addRelease(v.postSems + sem * kSemStride, value);
  }
}

// Block-wide post: barrier so every thread's stores are done, then the leader
// publishes with a release update at gpu scope.
template <class B, class V>
CUSYNC_HD void post(const V& v, const TileWork& w) {
  if constexpr (!policy::isNoSync<typename V::Out>) {
    B::barrier();
    if (B::isLeader()) postElected<B>(v, w);
  }
}

// The wait kernel of stream mode: blocks its (low-priority) stream until every
// producer of this consumer has handed out the first tile of the current run.
struct StartGate {
  uint32_t count = 0;
  const uint32_t* started[kMaxInputs] = {};
  unsigned long long* tickets = nullptr;  // the consumer's own count of gate runs
  char name[24] = {};
};

template <class B>
CUSYNC_HD void awaitProducersStarted(const StartGate& g) {
  const uint32_t run = static_cast<uint32_t>(B::takeTicket(g.tickets)) + 1;
  StallInfo info;
  info.stage = g.name;
  for (uint32_t i = 0; i < g.count; ++i) {
    info.input = i;
    spinUntil<B>(g.started[i], run, info);
  }
}

}  // namespace protocol
}  // namespace cusync
