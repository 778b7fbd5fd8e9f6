// StridedTileSync: one semaphore per producer tile, and a consumer that reads
// producer column tile c also needs tiles c + stride, c + 2*stride, ...
// (`count` tiles in all). Attention reads the Q, K and V slices of one head
// (stride = columns of tiles per projection, count = 3); LLaMA's MLP reads the
// gate and up projections (count = 2) when they are not interleaved.
//
// Consumers express their reads in the first segment's columns,
// [0, stride * tile.x); the policy adds the partner tiles.
//
// Guarantee: before a consumer reads segment columns of a producer row, the
// matching tiles of all `count` segments have posted in the same run.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct StridedTileSync {
  static constexpr const char* kName = "StridedTileSync";
  static constexpr bool kSingleWriter = true;

  uint32_t stride = 1;  // in producer column tiles
  uint32_t count = 1;   // segments read together

  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD uint32_t readExtent(const StageShape& prod) const { return stride * prod.tile.x; }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return walk::linearTile(t, prod.grid);
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape&) const { return 1; }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    TileRange cols = walk::newColumns(r, cons.tile.z, prod);
    if (!cols.empty() && cols.hi >= stride) cols.hi = stride - 1;  // reads stay in segment 0
    SemSpan s = walk::tileBox(cols, walk::rows(r, cons, prod), r.batch, prod);
    if (!s.empty()) {
      s.n[2] = count;
      s.step[2] = stride;
    }
    return s;
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape&, const StageShape& prod) const {
    if (stride == 0 || count == 0) return "StridedTileSync: stride and count must be at least 1";
    if (prod.grid.x != stride * count)
      return "StridedTileSync: the producer's column tiles must equal stride * count";
    return nullptr;
  }
};

}  // namespace cusync::policy
