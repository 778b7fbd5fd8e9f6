// Helpers shared by the policies: which producer tiles one step of a
// consumer's reduction walk touches.
#pragma once

#include "cusync/geometry.h"

namespace cusync::policy::walk {

// Producer column tiles that the read touches and that the walk's previous
// step (columns [col - BK, col)) did not touch already. Consumers walk K in
// contiguous steps from walkStart, so a tile seen by the previous step has
// been waited for.
CUSYNC_HD TileRange newColumns(const Read& r, uint32_t colsPerStep, const StageShape& prod) {
  TileRange cols = tilesCovering(r.col, colsPerStep, prod.tile.x, prod.grid.x);
  if (r.col > r.walkStart && !cols.empty()) {
    const uint32_t seen = (r.col - 1) / prod.tile.x;
    if (seen + 1 > cols.lo) cols.lo = seen + 1;
  }
  return cols;
}

// Producer row tiles under the consumer tile's rows [row, row + BM).
CUSYNC_HD TileRange rows(const Read& r, const StageShape& cons, const StageShape& prod) {
  return tilesCovering(r.row, cons.tile.y, prod.tile.y, prod.grid.y);
}

CUSYNC_HD uint32_t linearTile(const Dim3& t, const Dim3& g) { return (t.z * g.y + t.y) * g.x + t.x; }

// A span over a box of producer tiles, one semaphore per tile (row-major).
CUSYNC_HD SemSpan tileBox(TileRange cols, TileRange rows, uint32_t batch, const StageShape& prod) {
  SemSpan s;
  if (cols.empty() || rows.empty() || batch >= prod.grid.z) return s;
  s.first = linearTile(Dim3(cols.lo, rows.lo, batch), prod.grid);
  s.n[0] = cols.size();
  s.step[0] = 1;
  s.n[1] = rows.size();
  s.step[1] = prod.grid.x;
  return s;
}

}  // namespace cusync::policy::walk

namespace cusync::policy {

// A policy may declare `static constexpr bool kWaitsAtWalkStartOnly = true`:
// its span is empty for every step but the walk's first (r.col ==
// r.walkStart), and there it depends only on the read's rows and batch.
// A thread that resolves waits ahead of a walk then evaluates the first step
// alone instead of every step (RowSync, BatchedRowSync, WholeSync).
template <class P, class = void>
struct WaitsAtWalkStartOnlyImpl {
  static constexpr bool value = false;
};
template <class P>
struct WaitsAtWalkStartOnlyImpl<P, decltype(void(P::kWaitsAtWalkStartOnly))> {
  static constexpr bool value = P::kWaitsAtWalkStartOnly;
};
template <class P>
constexpr bool waitsAtWalkStartOnly = WaitsAtWalkStartOnlyImpl<P>::value;

}  // namespace cusync::policy
