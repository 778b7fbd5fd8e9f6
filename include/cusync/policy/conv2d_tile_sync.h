// Conv2DTileSync: implicit-GEMM convolution reading the output of a previous
// convolution (NHWC, stride 1, the same H x W). The consumer's reduction index
// is k = (r * S + s) * C + c over an R x S filter and C input channels, so one
// producer column tile (channels) is read R*S times, at shifted pixels.
//
// One semaphore per producer tile. The consumer waits while it walks the first
// filter position (r = s = 0): for each new channel tile, on every producer
// row tile its pixels touch *including the filter halo* (padH rows and padW
// columns before, the rest after). Later filter positions read the same
// channel tiles and halo rows and need no wait. A walk that starts anywhere
// but k = 0 (split K) waits for all channel tiles at its first step, since it
// reads channels below its start at later filter positions.
//
// Guarantee: before a consumer reads input pixel rows shifted by any filter
// offset, the producer tiles holding them have posted in the same run. The
// halo is counted in flattened pixel rows, so it is conservative at image
// borders (it may wait for a neighbouring image's rows), never short.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct Conv2DTileSync {
  static constexpr const char* kName = "Conv2DTileSync";
  static constexpr bool kSingleWriter = true;

  uint32_t R = 3, S = 3;      // filter size
  uint32_t C = 1;             // input channels (= producer output columns)
  uint32_t W = 1;             // image width in pixels
  uint32_t padH = 1, padW = 1;

  CUSYNC_HD uint32_t haloBefore() const { return padH * W + padW; }
  CUSYNC_HD uint32_t haloAfter() const { return (R - 1 - padH) * W + (S - 1 - padW); }

  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD uint32_t readExtent(const StageShape&) const { return R * S * C; }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return walk::linearTile(t, prod.grid);
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape&) const { return 1; }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    TileRange cols;
    if (r.col == r.walkStart && r.walkStart > 0) {
      cols = tilesCovering(0, C, prod.tile.x, prod.grid.x);
    } else if (r.col < C) {
      cols = walk::newColumns(r, cons.tile.z, prod);
    }
    const uint32_t lo = r.row >= haloBefore() ? r.row - haloBefore() : 0;
    const TileRange rows =
        tilesCovering(lo, (r.row - lo) + cons.tile.y + haloAfter(), prod.tile.y, prod.grid.y);
    return walk::tileBox(cols, rows, r.batch, prod);
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape& cons, const StageShape& prod) const {
    if (R == 0 || S == 0 || C == 0 || W == 0) return "Conv2DTileSync: R, S, C and W must be at least 1";
    if (padH >= R || padW >= S) return "Conv2DTileSync: padding must be smaller than the filter";
    if (cons.tile.z == 0 || C % cons.tile.z != 0)
      return "Conv2DTileSync: the consumer's k step (tile.z) must divide C so a step never spans two filter positions";
    if (prod.cols() < C) return "Conv2DTileSync: the producer has fewer columns than C channels";
    return nullptr;
  }
};

}  // namespace cusync::policy
