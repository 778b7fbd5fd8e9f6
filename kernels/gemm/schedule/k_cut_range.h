// How a KCut launch (T128x192KCut, T128x256KCut) cuts its work: the
// tiles' k-blocks laid out column by column (position x = column * kIters +
// k-block), cut into G ranges of near-equal length, range g computed by
// group g. Host and device code share it, so the CPU tests check the same
// arithmetic the kernel runs.
#pragma once

#include <cstdint>

#include "cusync/config.h"

namespace cusync_gemm::detail {

// Range g of G over `total` positions: [kCutBegin(g), kCutBegin(g + 1)).
CUSYNC_HD uint32_t kCutBegin(uint64_t g, uint64_t G, uint64_t total) {
  return static_cast<uint32_t>(g * total / G);
}

// The group whose range holds position x: the last g with kCutBegin(g) <= x,
// i.e. g * total < (x + 1) * G.
CUSYNC_HD uint32_t kCutGroupOf(uint64_t x, uint64_t G, uint64_t total) {
  return static_cast<uint32_t>(((x + 1) * G - 1) / total);
}

}  // namespace cusync_gemm::detail
