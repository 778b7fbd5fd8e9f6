// Tile orders: the order in which a stage hands out its tiles. An order is a
// type with
//
//   uint32_t linearIndex(const Dim3& tile, const Dim3& grid) const
//
// mapping each tile of the grid to its position in the order. It must be a
// bijection onto [0, grid.count()); buildOrderTable() checks that on the host
// and inverts it into the table that the device dispenser reads.
//
// Producers and consumers should agree: a RowSync consumer wants its producer
// to finish whole rows first (RowMajorOrder on both sides).
#pragma once

#include <string>
#include <vector>

#include "cusync/error.h"
#include "cusync/geometry.h"

namespace cusync {

// Tiles of row 0 left to right, then row 1, ...; batches last.
struct RowMajorOrder {
  static constexpr const char* kName = "row-major";
  CUSYNC_HD uint32_t linearIndex(const Dim3& t, const Dim3& g) const { return (t.z * g.y + t.y) * g.x + t.x; }
};

// Tiles of column 0 top to bottom, then column 1, ...; batches last.
struct ColumnMajorOrder {
  static constexpr const char* kName = "column-major";
  CUSYNC_HD uint32_t linearIndex(const Dim3& t, const Dim3& g) const { return (t.z * g.x + t.x) * g.y + t.y; }
};

// Bands of `group` tile rows, each band walked column by column: a wave of
// blocks reads a few column tiles of the weights and one band of the
// activations, which stay in L2. Consumers that wait per row band still see
// rows finish early.
struct GroupedOrder {
  static constexpr const char* kName = "grouped";
  uint32_t group = 8;
  CUSYNC_HD uint32_t linearIndex(const Dim3& t, const Dim3& g) const {
    const uint32_t band = t.y / group;
    const uint32_t rowsInBand = minU(group, g.y - band * group);
    return t.z * g.y * g.x + band * group * g.x + t.x * rowsInBand + (t.y - band * group);
  }
};

// The tile at row-major position i; used when the hardware order is kept.
CUSYNC_HD Dim3 rowMajorTile(uint32_t i, const Dim3& g) {
  return Dim3(i % g.x, (i / g.x) % g.y, i / (g.x * g.y));
}

// The tile at position i of GroupedOrder{group} (group 1 is row-major): the
// inverse of GroupedOrder::linearIndex, so that a dispenser can decode a
// ticket without reading the order table (a dependent global load at the
// start of every persistent block).
CUSYNC_HD Dim3 groupedTile(uint32_t i, const Dim3& g, uint32_t group) {
  const uint32_t perBatch = g.x * g.y;
  const uint32_t z = i / perBatch, p = i % perBatch;
  const uint32_t band = p / (group * g.x), within = p % (group * g.x);
  const uint32_t rowsInBand = minU(group, g.y - band * group);
  return Dim3(within / rowsInBand, band * group + within % rowsInBand, z);
}

// The group under which groupedTile() decodes an order: 1 for row-major, the
// band height for GroupedOrder, 0 for any other order (decoded from its table).
inline uint32_t arithmeticGroupOf(const RowMajorOrder&) { return 1; }
inline uint32_t arithmeticGroupOf(const GroupedOrder& o) { return o.group; }
template <class Order>
uint32_t arithmeticGroupOf(const Order&) {
  return 0;
}

inline std::string tileName(const Dim3& t) {
  return "(" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) + ")";
}

// Inverts `order` over `grid`: table[position] = tile. Throws
// Error(OrderNotBijection) naming the first tile mapped out of range, the
// first position given twice, or the first position no tile maps to.
template <class Order>
std::vector<Dim3> buildOrderTable(const Order& order, const Dim3& grid, const std::string& stage = "") {
  const uint32_t n = grid.count();
  if (n == 0) throw Error(ErrorCode::InvalidArgument, stage, "grid has no tiles");
  std::vector<Dim3> table(n);
  std::vector<bool> taken(n, false);
  forEachTile(grid, [&](const Dim3& t) {
    const uint32_t i = order.linearIndex(t, grid);
    if (i >= n)
      throw Error(ErrorCode::OrderNotBijection, stage,
                  "tile " + tileName(t) + " maps to position " + std::to_string(i) + ", past the " +
                      std::to_string(n) + " tiles of the grid");
    if (taken[i])
      throw Error(ErrorCode::OrderNotBijection, stage,
                  "tile " + tileName(t) + " maps to position " + std::to_string(i) + ", already taken by tile " +
                      tileName(table[i]));
    taken[i] = true;
    table[i] = t;
  });
  for (uint32_t i = 0; i < n; ++i)
    if (!taken[i])
      throw Error(ErrorCode::OrderNotBijection, stage, "no tile maps to position " + std::to_string(i));
  return table;
}

}  // namespace cusync
