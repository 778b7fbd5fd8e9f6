// ReadySet: the semaphores of one producer that a waiting thread has already
// seen reach their targets in the current run, so that waiting on them again
// costs neither a load nor a fence (protocol::awaitSpanOnce).
//
// Why that is safe: semaphores only grow within a run, so one seen ready stays
// ready; and the acquire (and proxy) fence that followed the first wait
// already orders every later read of the same thread after the producer's
// writes, as well as the reads of threads the waiter hands its progress to
// through a release / acquire pair (a warp-specialized kernel's loader).
//
// The set lives in memory the caller provides (shared memory in a kernel,
// one waiting thread using it): kWords 32-bit words, the run and the
// semaphore array it belongs to, then a bitmap over semaphores
// [0, kCapacity). Waits on higher semaphores are polled every time. A new
// run or another semaphore array empties it.
#pragma once

#include <cstdint>

#include "cusync/config.h"
#include "cusync/geometry.h"

namespace cusync {

class ReadySet {
 public:
  static constexpr uint32_t kCapacity = 1024;
  static constexpr uint32_t kHeaderWords = 3;  // run, then the semaphore array's address
  static constexpr uint32_t kWords = kHeaderWords + kCapacity / 32;

  CUSYNC_HD explicit ReadySet(uint32_t* words) : words_(words) {}

  // Empties the set: no run, no array.
  CUSYNC_HD void clear() {
    for (uint32_t i = 0; i < kWords; ++i) words_[i] = 0;
  }

  // Makes the set belong to run `run` of the semaphores at `sems`, emptying
  // it where it belonged to another run or array.
  CUSYNC_HD void enter(const uint32_t* sems, uint32_t run) {
    const uint64_t a = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(sems));
    const uint32_t lo = static_cast<uint32_t>(a), hi = static_cast<uint32_t>(a >> 32);
    if (words_[0] == run && words_[1] == lo && words_[2] == hi) return;
    clear();
    words_[0] = run;
    words_[1] = lo;
    words_[2] = hi;
  }

  // Whether every semaphore of the span was seen ready in run `run` of the
  // semaphores at `sems` (enter(), then holds()).
  CUSYNC_HD bool covers(const uint32_t* sems, uint32_t run, const SemSpan& s) {
    enter(sems, run);
    return holds(s);
  }

  // Whether every semaphore of the span was seen ready.
  CUSYNC_HD bool holds(const SemSpan& s) const {
    return everySemaphore(s, [&](uint32_t sem) {
      return sem < kCapacity && (words_[kHeaderWords + sem / 32] & (1u << (sem % 32))) != 0;
    });
  }

  // Records every semaphore of the span as seen ready.
  CUSYNC_HD void add(const SemSpan& s) {
    everySemaphore(s, [&](uint32_t sem) {
      if (sem < kCapacity) words_[kHeaderWords + sem / 32] |= 1u << (sem % 32);
      return true;
    });
  }

 private:
  uint32_t* words_;
};

}  // namespace cusync
