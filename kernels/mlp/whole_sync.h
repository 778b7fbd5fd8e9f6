// WholeSync: one semaphore for the whole producer grid. Every producer tile
// adds 1; a consumer tile waits, at the first step of its walk, until every
// producer tile of the run has posted. This is "the consumer waits for the
// whole producer", the semantics of a stream or of PDL with
// griddepcontrol.wait, expressed as a cusync policy so that the persistent
// GEMM (which has no griddepcontrol.wait of its own) can run the `pdl`
// variant of the MLP: the consumer grid is launched early by PDL, fetches its
// first weight tiles, and then waits for all of GEMM1.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync_mlp {

struct WholeSync {
  static constexpr const char* kName = "WholeSync";
  static constexpr bool kSingleWriter = false;

  CUSYNC_HD uint32_t semaphoreCount(const cusync::StageShape&) const { return 1; }
  CUSYNC_HD uint32_t readExtent(const cusync::StageShape& prod) const { return prod.cols(); }
  CUSYNC_HD uint32_t tileIndex(const cusync::Dim3&, const cusync::StageShape&) const { return 0; }
  CUSYNC_HD uint32_t postValue(const cusync::Dim3&, const cusync::StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const cusync::StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD cusync::SemSpan waitSpan(const cusync::Read& r, const cusync::StageShape&,
                                     const cusync::StageShape&) const {
    cusync::SemSpan s;
    if (r.col != r.walkStart) return s;
    s.first = 0;
    s.n[0] = 1;
    s.step[0] = 1;
    return s;
  }
  CUSYNC_HD bool isSync(const cusync::Read& r, const cusync::StageShape& cons, const cusync::StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const cusync::StageShape&, const cusync::StageShape&) const { return nullptr; }
};

}  // namespace cusync_mlp
