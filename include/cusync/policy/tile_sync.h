// TileSync: one semaphore per producer tile. A consumer step waits for exactly
// the producer tiles its rows and columns overlap, and only for those the
// previous step of its walk did not already cover.
//
// Guarantee: before a consumer reads producer output [rows x cols], every
// producer tile overlapping it has posted in the same run.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct TileSync {
  static constexpr const char* kName = "TileSync";
  static constexpr bool kSingleWriter = true;

  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return walk::linearTile(t, prod.grid);
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape&) const { return 1; }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    // Most steps read no new producer column: decided before the rows are.
    const TileRange cols = walk::newColumns(r, cons.tile.z, prod);
    if (cols.empty()) return SemSpan{};
    return walk::tileBox(cols, walk::rows(r, cons, prod), r.batch, prod);
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape&, const StageShape&) const { return nullptr; }
};

}  // namespace cusync::policy
