// Run stamps stand for a stage's output data in the emulator tests: which
// run last stored each tile. A consumer that checks, after its waits, that
// every tile it reads carries its own run's stamp shows the waits protect
// the read; one that sees an older stamp read early.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "cusync/geometry.h"
#include "cusync/tile_order.h"

namespace cusync_attn::emulated {

class Stamps {
 public:
  // A stage's output: `grid` tiles of tile.x columns and tile.y rows.
  Stamps(cusync::Dim3 grid, cusync::Dim3 tile)
      : grid_(grid), tile_(tile), runs_(new std::atomic<uint32_t>[grid.x * grid.y]()) {}

  void store(const cusync::Dim3& t, uint32_t run) { at(t).store(run, std::memory_order_release); }
  uint32_t load(const cusync::Dim3& t) const { return at(t).load(std::memory_order_acquire); }

  // Throws, naming `reader`, where a tile holding part of rows [r0, r1) and
  // columns [c0, c1) was last stored in another run than `run`.
  void expectStored(int64_t r0, int64_t r1, int64_t c0, int64_t c1, uint32_t run, const std::string& reader) const {
    for (int64_t y = r0 / tile_.y; y * tile_.y < r1 && y < grid_.y; ++y)
      for (int64_t x = c0 / tile_.x; x * tile_.x < c1 && x < grid_.x; ++x) {
        const cusync::Dim3 t(static_cast<uint32_t>(x), static_cast<uint32_t>(y), 0);
        const uint32_t seen = load(t);
        if (seen != run)
          throw std::runtime_error(reader + " read tile " + cusync::tileName(t) + " as stored in run " +
                                   std::to_string(seen) + ", not its run " + std::to_string(run));
      }
  }

  cusync::Dim3 grid() const { return grid_; }

 private:
  std::atomic<uint32_t>& at(const cusync::Dim3& t) const { return runs_[t.y * grid_.x + t.x]; }

  cusync::Dim3 grid_, tile_;
  std::unique_ptr<std::atomic<uint32_t>[]> runs_;
};

}  // namespace cusync_attn::emulated
