// BatchedRowSync: like RowSync, but `rowsPerGroup` consecutive producer rows
// share one semaphore (the last group may be shorter). Fewer semaphores and
// waits; a consumer waits for every row of its group.
//
// Guarantee: before a consumer reads a producer row, every tile of every row
// in that row's group has posted in the same run.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct BatchedRowSync {
  static constexpr const char* kName = "BatchedRowSync";
  static constexpr bool kSingleWriter = false;
  static constexpr bool kWaitsAtWalkStartOnly = true;  // see policy/walk.h

  uint32_t rowsPerGroup = 2;

  CUSYNC_HD uint32_t groups(const StageShape& prod) const { return ceilDiv(prod.grid.y, rowsPerGroup); }
  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return groups(prod) * prod.grid.z; }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return t.z * groups(prod) + t.y / rowsPerGroup;
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t sem, const StageShape& prod) const {
    const uint32_t firstRow = (sem % groups(prod)) * rowsPerGroup;
    return prod.grid.x * minU(rowsPerGroup, prod.grid.y - firstRow);
  }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    SemSpan s;
    if (r.col != r.walkStart || r.batch >= prod.grid.z) return s;  // only the walk's first step waits
    const TileRange rows = walk::rows(r, cons, prod);
    if (rows.empty()) return s;
    s.first = r.batch * groups(prod) + rows.lo / rowsPerGroup;
    s.n[0] = rows.hi / rowsPerGroup - rows.lo / rowsPerGroup + 1;
    s.step[0] = 1;
    return s;
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape&, const StageShape&) const {
    return rowsPerGroup == 0 ? "BatchedRowSync: rowsPerGroup must be at least 1" : nullptr;
  }
};

}  // namespace cusync::policy
