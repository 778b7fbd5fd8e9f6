// Plain value types that describe tiles, grids and the region a consumer reads.
// Coordinates follow CUDA's grid convention: x walks the columns of the output
// (the N dimension of a GEMM), y walks the rows (M), z is a batch index.
#pragma once

#include "cusync/config.h"

namespace cusync {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;

  constexpr Dim3() = default;
  CUSYNC_HD constexpr Dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
  CUSYNC_HD constexpr uint32_t count() const { return x * y * z; }
  CUSYNC_HD constexpr bool operator==(const Dim3& o) const { return x == o.x && y == o.y && z == o.z; }
  CUSYNC_HD constexpr bool operator!=(const Dim3& o) const { return !(*this == o); }
};

// A stage seen as a grid of output tiles. tile.x and tile.y are the columns
// and rows of one output tile; tile.z is how many producer columns the stage
// reads per step of its reduction loop (BK of a GEMM), used when it consumes.
struct StageShape {
  Dim3 grid;
  Dim3 tile;

  CUSYNC_HD constexpr uint32_t rows() const { return grid.y * tile.y; }
  CUSYNC_HD constexpr uint32_t cols() const { return grid.x * tile.x; }
};

// One step of a consumer's reduction walk: it is about to read producer output
// columns [col, col + consumer.tile.z) of rows [row, row + consumer.tile.y) in
// batch `batch`. walkStart is the column where this consumer tile's walk began
// (0 unless the kernel splits K), so a policy can tell the first step apart.
struct Read {
  uint32_t col = 0;
  uint32_t row = 0;
  uint32_t batch = 0;
  uint32_t walkStart = 0;
};

// The semaphores one read must wait for: a strided box of up to three axes.
// Empty (count() == 0) means the read needs no wait at all.
struct SemSpan {
  uint32_t first = 0;
  uint32_t n[3] = {0, 1, 1};
  uint32_t step[3] = {0, 0, 0};

  CUSYNC_HD constexpr uint32_t count() const { return n[0] * n[1] * n[2]; }
  CUSYNC_HD constexpr bool empty() const { return count() == 0; }
  CUSYNC_HD constexpr uint32_t at(uint32_t i) const {
    // One axis (most spans) needs no division: a lone waiting thread pays
    // every instruction's full latency.
    if (n[1] == 1 && n[2] == 1) return first + i * step[0];
    const uint32_t a = i % n[0];
    const uint32_t b = (i / n[0]) % n[1];
    const uint32_t c = i / (n[0] * n[1]);
    return first + a * step[0] + b * step[1] + c * step[2];
  }
};

// Calls f(semaphore) for every semaphore of the span in order, while f
// returns true; returns whether it always did. Nested loops, no division.
template <class F>
CUSYNC_HD bool everySemaphore(const SemSpan& s, F&& f) {
  for (uint32_t c = 0; c < s.n[2]; ++c)
    for (uint32_t b = 0; b < s.n[1]; ++b) {
      uint32_t sem = s.first + b * s.step[1] + c * s.step[2];
      for (uint32_t a = 0; a < s.n[0]; ++a, sem += s.step[0])
        if (!f(sem)) return false;
    }
  return true;
}

// Inclusive range of producer tiles along one axis.
struct TileRange {
  uint32_t lo = 1, hi = 0;  // empty by default
  CUSYNC_HD constexpr bool empty() const { return lo > hi; }
  CUSYNC_HD constexpr uint32_t size() const { return empty() ? 0 : hi - lo + 1; }
};

CUSYNC_HD constexpr uint32_t ceilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
CUSYNC_HD constexpr uint32_t minU(uint32_t a, uint32_t b) { return a < b ? a : b; }
CUSYNC_HD constexpr uint32_t maxU(uint32_t a, uint32_t b) { return a > b ? a : b; }

// Producer tiles along one axis that the element interval [begin, begin + len)
// overlaps, clipped to the producer grid.
CUSYNC_HD constexpr TileRange tilesCovering(uint32_t begin, uint32_t len, uint32_t tileSize,
                                            uint32_t tiles) {
  TileRange r;
  if (len == 0 || begin >= tileSize * tiles) return r;
  r.lo = begin / tileSize;
  r.hi = minU(tiles - 1, (begin + len - 1) / tileSize);
  return r;
}

// Calls fn(tile) for every tile of the grid, row-major (x fastest). Host-side
// checks walk grids with it.
template <class Fn>
void forEachTile(const Dim3& g, Fn&& fn) {
  for (uint32_t z = 0; z < g.z; ++z)
    for (uint32_t y = 0; y < g.y; ++y)
      for (uint32_t x = 0; x < g.x; ++x) fn(Dim3(x, y, z));
}

}  // namespace cusync
