// RowSync: one semaphore per row of producer tiles. Every producer tile of a
// row adds 1; a consumer waits, at the first step of its walk, until the whole
// row (grid.x tiles) is done, then reads the row without further waits.
//
// Guarantee: before a consumer reads any column of a producer row, every tile
// of that row has posted in the same run. Fewer semaphore loads than TileSync,
// at the price of waiting for columns the first steps do not need yet.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct RowSync {
  static constexpr const char* kName = "RowSync";
  static constexpr bool kSingleWriter = false;
  static constexpr bool kWaitsAtWalkStartOnly = true;  // see policy/walk.h

  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return prod.grid.y * prod.grid.z; }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return t.z * prod.grid.y + t.y;
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape& prod) const { return prod.grid.x; }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    SemSpan s;
    // Only the walk's first step waits: decided before any division.
    if (r.col != r.walkStart || r.batch >= prod.grid.z) return s;
    const TileRange rows = walk::rows(r, cons, prod);
    if (rows.empty()) return s;
    s.first = r.batch * prod.grid.y + rows.lo;
    s.n[0] = rows.size();
    s.step[0] = 1;
    return s;
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape&, const StageShape&) const { return nullptr; }
};

}  // namespace cusync::policy
