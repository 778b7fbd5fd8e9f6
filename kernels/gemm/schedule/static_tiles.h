// How a stage's blocks take their tiles without tickets
// (KernelFlags::staticRuns): taker b of G computes the tiles b, b + G,
// b + 2G, ... of the stage order and, once per run, adds its tile count plus
// one to the stage's ticket counter. A run then takes numTiles + G tickets,
// as a run by tickets does (each taker's closing ticket included), so the
// counter's value before a taker's add names the run either way. Host and
// device share it, so the CPU tests run the kernel's arithmetic.
#pragma once

#include <cstdint>

#include "cusync/config.h"

namespace cusync_gemm::detail {

// Tiles taker `taker` of `takers` computes in a stage of `numTiles` tiles.
CUSYNC_HD uint32_t staticTileCount(uint32_t taker, uint32_t takers, uint32_t numTiles) {
  return taker < numTiles ? (numTiles - taker + takers - 1) / takers : 0u;
}

// The run (from 1) of a taker whose add found the counter at `before`.
CUSYNC_HD uint32_t staticRunOf(unsigned long long before, uint32_t ticketsPerRun) {
  return static_cast<uint32_t>(before / ticketsPerRun) + 1;
}

}  // namespace cusync_gemm::detail
