// How a stream launch (T128x192Stream, T128x256Stream) cuts its work: the
// tiles' k-blocks laid out column by column (position x = column * kIters +
// k-block), cut into G ranges of near-equal length, range g computed by
// group g. Host and device code share it, so the CPU tests check the same
// arithmetic the kernel runs.
#pragma once

#include <cstdint>

#include "cusync/config.h"

namespace cusync_gemm::detail {

// Range g of G over `total` positions: [streamBegin(g), streamBegin(g + 1)).
CUSYNC_HD uint32_t streamBegin(uint64_t g, uint64_t G, uint64_t total) {
  return static_cast<uint32_t>(g * total / G);
}

// The group whose range holds position x: the last g with streamBegin(g) <= x,
// i.e. g * total < (x + 1) * G.
CUSYNC_HD uint32_t streamGroupOf(uint64_t x, uint64_t G, uint64_t total) {
  return static_cast<uint32_t>(((x + 1) * G - 1) / total);
}

}  // namespace cusync_gemm::detail
