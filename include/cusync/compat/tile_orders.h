// The original cuSync's tile orders, for programs written against its API.
// New code uses cusync::RowMajorOrder / ColumnMajorOrder (tile_order.h).
#pragma once

#include <cuda_runtime_api.h>

#include "cusync/config.h"

namespace cusync {

// A stateless order: blockIndex linearizes a block of the grid; tileToBlock
// maps a tile to its block; tileIndex composes the two.
template <typename Child>
struct GenericTileOrder {
  CUSYNC_HD uint32_t tileIndex(const dim3& tile, const dim3& grid) {
    return Child().blockIndex(grid, Child().tileToBlock(tile));
  }
};

// x fastest, then y, then z; tile {x,y,z} is block {x,y,z}.
struct IdentityOrder : GenericTileOrder<IdentityOrder> {
  CUSYNC_HD uint32_t blockIndex(const dim3& grid, const dim3& b) { return b.x + b.y * grid.x + b.z * grid.x * grid.y; }
  CUSYNC_HD dim3 tileToBlock(const dim3& t) { return dim3(t.x, t.y, t.z); }
};

// Tile {x,y,z} is block {y,x,z}.
struct TransposeXYOrder : GenericTileOrder<TransposeXYOrder> {
  CUSYNC_HD uint32_t blockIndex(const dim3& grid, const dim3& b) { return b.x + b.y * grid.x + b.z * grid.x * grid.y; }
  CUSYNC_HD dim3 tileToBlock(const dim3& t) { return dim3(t.y, t.x, t.z); }
};

}  // namespace cusync
