// Ground truth for the checker, computed straight from the spec's affine
// maps and independent of the rules the policies use: which producer tiles
// one step of a consumer tile's walk reads.
#pragma once

#include <utility>
#include <vector>

#include "model.h"

namespace cusyncgen {

// The reads of one edge, compiled once so that --check can ask for every
// consumer tile and step (millions of times at large M) cheaply.
class ReadMap {
 public:
  ReadMap(const Model& m, const Edge& e);

  // Appends to `out` the producer tiles read by consumer tile (x, y, z) at
  // step `local` of its walk (all the edge's strided reads), clipped to what
  // the producer writes (parts of a padded read outside the tensor read
  // nothing).
  void read(uint32_t x, uint32_t y, uint32_t z, uint32_t local, std::vector<cusync::Dim3>& out) const;

 private:
  // c + sum(k * value[var]) over the variables i, j and the walk's, in that order.
  struct Linear {
    int64_t c = 0;
    std::vector<std::pair<size_t, int64_t>> terms;
    int64_t at(const std::vector<int64_t>& value) const;
  };
  struct Block {
    Linear rowLo, rowHi, colLo, colHi;
  };
  Linear compile(const Affine& a) const;

  std::vector<std::string> vars_;
  std::vector<int64_t> extents_;  // the walk's, outermost first
  std::vector<Block> reads_;
  int64_t rowLimit_ = 0, colLimit_ = 0, tileRows_ = 1, tileCols_ = 1;
};

// ReadMap(m, e).read(x, y, z, local) as a new vector.
std::vector<cusync::Dim3> tilesRead(const Model& m, const Edge& e, uint32_t x, uint32_t y, uint32_t z, uint32_t local);

// The walk's k-blocks: the product of its loop extents.
uint32_t walkSteps(const StageDecl& s);

}  // namespace cusyncgen
