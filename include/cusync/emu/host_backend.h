// The CPU emulator's execution backend for the protocol (cusync/protocol.h).
// One host thread runs one whole block, so the leader is that thread and a
// block barrier is a no-op. Every release update bumps a progress counter the
// emulator's deadlock detector watches; every failed poll reports the waiter.
#pragma once

#include <atomic>
#include <cuda/atomic>

#include "cusync/stage_view.h"

namespace cusync::emu {

// Thrown inside a waiting block when the emulator aborts the run.
struct Aborted {};

// Implemented by the emulator for the block running on the current thread.
class BlockHooks {
 public:
  virtual ~BlockHooks() = default;
  virtual void spinning(const StallInfo& info) = 0;  // may throw Aborted
  virtual void spinDone() = 0;
  virtual void triggered() = 0;
  virtual void progressed() = 0;
};

inline thread_local BlockHooks* currentBlock = nullptr;

struct HostBackend {
  template <class T>
  using Ref = cuda::atomic_ref<T, cuda::thread_scope_system>;

  static bool isLeader() { return true; }
  static void barrier() {}
  static unsigned long long takeTicket(unsigned long long* p) { return Ref<unsigned long long>(*p).fetch_add(1); }
  static uint32_t loadAcquire(const uint32_t* p) {
    return Ref<uint32_t>(*const_cast<uint32_t*>(p)).load(cuda::memory_order_acquire);
  }
  static uint32_t loadRelaxed(const uint32_t* p) {
    return Ref<uint32_t>(*const_cast<uint32_t*>(p)).load(cuda::memory_order_relaxed);
  }
  static void fenceAcquire() { std::atomic_thread_fence(std::memory_order_acquire); }
  static void storeRelease(uint32_t* p, uint32_t v) {
    Ref<uint32_t>(*p).store(v, cuda::memory_order_seq_cst);
    if (currentBlock) currentBlock->progressed();
  }
  static void addRelease(uint32_t* p, uint32_t v) {
    Ref<uint32_t>(*p).fetch_add(v, cuda::memory_order_seq_cst);
    if (currentBlock) currentBlock->progressed();
  }
  static void fenceGpu() { std::atomic_thread_fence(std::memory_order_seq_cst); }
  static void fenceProxyAsync() {}
  static void triggerDependents() {
    if (currentBlock) currentBlock->triggered();
  }
  static void onSpin(const StallInfo& info, unsigned long long) {
    if (currentBlock) currentBlock->spinning(info);
  }
  static void onSpinDone() {
    if (currentBlock) currentBlock->spinDone();
  }
};

}  // namespace cusync::emu
