// How SplitK and TailSplit number their work units (split_k.cuh): the first
// `unsplit` tiles in stage order are whole units, then the R later tiles come
// in S phases, phase s holding part s of each of them. Host and device share
// it, so the emulator and the CPU tests run the kernel's arithmetic.
#pragma once

#include <cstdint>

#include "cusync/config.h"

namespace cusync_gemm::detail {

struct SplitUnit {
  uint32_t pos = 0;    // the tile's position in the stage order
  uint32_t split = 0;  // which part
  uint32_t parts = 1;  // parts of that tile
};

// Unit t (< units) of a launch with `unsplit` whole tiles and `splits` parts
// per later tile.
CUSYNC_HD SplitUnit splitUnitAt(uint32_t t, uint32_t unsplit, uint32_t splits, uint32_t units) {
  SplitUnit u;
  if (t < unsplit) {
    u.pos = t;
    return u;
  }
  const uint32_t R = units > unsplit ? (units - unsplit) / splits : 1u;  // split tiles
  const uint32_t q = t - unsplit;
  u.pos = unsplit + q % R;
  u.split = q / R;
  u.parts = splits;
  return u;
}

// The k-blocks [kb0, kb1) of part `split` of `parts` over kIters k-blocks.
CUSYNC_HD void splitKBlocks(uint32_t split, uint32_t parts, uint32_t kIters, int32_t& kb0, int32_t& kb1) {
  kb0 = static_cast<int32_t>(split * kIters / parts);
  kb1 = static_cast<int32_t>((split + 1) * kIters / parts);
}

}  // namespace cusync_gemm::detail
