// The original cuSync's policies with their original meaning of the tile
// argument, for programs written against its API. New code uses the policies
// in cusync::policy (cusync/policies.h), which are tested against a
// brute-force expansion of the reads and checked when paired.
#pragma once

#include <cuda_runtime_api.h>

#include "cusync/config.h"

namespace cusync {

struct NoSync {
  CUSYNC_HD NoSync() {}
  CUSYNC_HD uint32_t waitValue(const dim3&, const dim3&) { return 0; }
  CUSYNC_HD uint32_t tileIndex(const dim3&, const dim3&) { return 0; }
  CUSYNC_HD bool isSync(const dim3&, const dim3&) { return false; }
  CUSYNC_HD uint32_t postValue(const dim3&, const dim3&) { return 0; }
};

// The wait and post values the original policies carry, the same for every tile.
struct FixedValues {
  uint32_t waitValue_;
  uint32_t postValue_;
  CUSYNC_HD FixedValues(uint32_t waitValue, uint32_t postValue) : waitValue_(waitValue), postValue_(postValue) {}
  CUSYNC_HD uint32_t waitValue(const dim3&, const dim3&) { return waitValue_; }
  CUSYNC_HD uint32_t postValue(const dim3&, const dim3&) { return postValue_; }
};

// One semaphore per row: tileIndex is tile.x / TileM; waits when tile.z == 1.
template <uint32_t TileM>
struct RowSync : FixedValues {
  CUSYNC_HD RowSync() : FixedValues(0, 0) {}
  CUSYNC_HD RowSync(uint32_t waitValue) : FixedValues(waitValue, 1) {}
  CUSYNC_HD RowSync(uint32_t waitValue, uint32_t postValue) : FixedValues(waitValue, postValue) {}
  CUSYNC_HD uint32_t tileIndex(const dim3& tile, const dim3&) { return tile.x / TileM; }
  CUSYNC_HD bool isSync(const dim3& tile, const dim3&) { return tile.z == 1; }
};

// One semaphore per tile, indexed through the order.
template <typename TileOrder, uint32_t TileM, uint32_t TileN>
struct TileSync : FixedValues {
  CUSYNC_HD TileSync() : FixedValues(1, 1) {}
  CUSYNC_HD TileSync(uint32_t waitValue, uint32_t postValue) : FixedValues(waitValue, postValue) {}
  CUSYNC_HD uint32_t tileIndex(const dim3& tile, const dim3& grid) {
    return TileOrder().tileIndex(dim3(tile.x / TileM, tile.y / TileN, 0), grid);
  }
  CUSYNC_HD bool isSync(const dim3& tile, const dim3&) { return tile.y % TileN == 0; }
};

// Implicit-GEMM conv: consumer k-block y waits on producer column y / (R*S).
template <typename TileOrder, uint32_t R, uint32_t S, uint32_t TileM, uint32_t TileN>
struct Conv2DTileSync : FixedValues {
  CUSYNC_HD Conv2DTileSync() : FixedValues(1, 1) {}
  CUSYNC_HD Conv2DTileSync(uint32_t waitValue, uint32_t postValue) : FixedValues(waitValue, postValue) {}
  CUSYNC_HD uint32_t tileIndex(const dim3& tile, const dim3& grid) {
    return TileOrder().tileIndex(dim3(tile.x / TileM, (tile.y / TileN) / (R * S), 0), grid);
  }
  CUSYNC_HD bool isSync(const dim3& tile, const dim3&) { return (tile.y / TileN) % (R * S) == 0; }
};

}  // namespace cusync
