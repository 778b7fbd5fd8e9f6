// Ground truth for the checker, computed straight from the spec's affine
// maps and independent of the rules the policies use: which producer tiles
// one step of a consumer tile's walk reads.
#pragma once

#include <vector>

#include "model.h"

namespace cusyncgen {

// Producer tiles read by consumer tile (x, y, z) at step `local` of its walk
// through edge e (all its strided reads), clipped to what the producer
// writes (parts of a padded read outside the tensor read nothing).
std::vector<cusync::Dim3> tilesRead(const Model& m, const Edge& e, uint32_t x, uint32_t y, uint32_t z, uint32_t local);

// The walk's k-blocks: the product of its loop extents.
uint32_t walkSteps(const StageDecl& s);

}  // namespace cusyncgen
