// WholeSync: one semaphore for the whole producer. Every producer tile adds 1;
// a consumer waits, at the first step of its walk, for all of them. This is
// kernel-granularity synchronization expressed as a policy: with a PDL launch
// the consumer grid still starts early (prologue, weight prefetch) but reads
// nothing until the producer is done. The baseline the finer policies beat.
//
// Guarantee: before a consumer's first read, every producer tile has posted in
// the same run.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct WholeSync {
  static constexpr const char* kName = "WholeSync";
  static constexpr bool kSingleWriter = false;
  static constexpr bool kWaitsAtWalkStartOnly = true;  // see policy/walk.h

  CUSYNC_HD uint32_t semaphoreCount(const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const Dim3&, const StageShape&) const { return 0; }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape&, const StageShape&) const {
    SemSpan s;
    if (r.col != r.walkStart) return s;
    s.n[0] = 1;
    return s;
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape&, const StageShape&) const { return nullptr; }
};

}  // namespace cusync::policy
