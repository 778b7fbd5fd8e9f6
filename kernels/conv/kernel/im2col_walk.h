// The im2col loaders' walk over the reduction, k-block by k-block, without
// divisions. The loader is one thread that issues every TMA load of its
// block; where a k-block's filter position and channel block came from
// `kb / cBlocks` and `rs / S`, the two runtime divisions (about 25
// dependent instructions each) made up half of its ~130 instructions per
// k-block, and a 128x64 conv tile's k-loop ran at the loader's issue rate
// (its consumers waiting on full slots, the loader never on an empty one).
// The walk divides once per unit (at) and then steps (next).
//
// Plain C++ (host and device): the CPU tests walk it against the division form.
#pragma once

#include <cstdint>

#include "cusync/config.h"
#include "kernels/gemm/kernel/params.cuh"

namespace cusync_conv::detail {

// A filter position (fr, fs), rs = fr S + fs.
struct FilterTap {
  int32_t fr = 0, fs = 0, rs = 0;

  CUSYNC_HD static FilterTap at(const cusync_gemm::detail::Im2colGeometry& g, int32_t rs) {
    const int32_t fr = rs / g.S;
    return FilterTap{fr, rs - fr * g.S, rs};
  }
  // The next position in R S order.
  CUSYNC_HD void step(const cusync_gemm::detail::Im2colGeometry& g) {
    ++rs;
    if (++fs == g.S) fs = 0, ++fr;
  }
};

// Im2colA's k-block: channels [c0, c0 + 64) at filter position tap; B's
// column kPos + c0 with kPos = rs C (the filter as [K, R S C]).
struct ChannelBlockStep {
  int32_t c0 = 0, kPos = 0;
  FilterTap tap;

  CUSYNC_HD int32_t kColumn() const { return kPos + c0; }
  CUSYNC_HD static ChannelBlockStep at(const cusync_gemm::detail::Im2colGeometry& g, int kb) {
    const int32_t rs = kb / g.cBlocks;
    return ChannelBlockStep{(kb - rs * g.cBlocks) * cusync_gemm::detail::kBK, rs * g.C, FilterTap::at(g, rs)};
  }
  CUSYNC_HD void next(const cusync_gemm::detail::Im2colGeometry& g) {
    c0 += cusync_gemm::detail::kBK;
    if (c0 == g.cBlocks * cusync_gemm::detail::kBK) {
      c0 = 0;
      kPos += g.C;
      tap.step(g);
    }
  }
};

// Im2colPackedTapsA's k-block kb: kTaps filter positions of 8 channels from
// position kb kTaps (tap, which may lie past R S in the last k-block).
template <int kTaps>
struct PackedTapsStep {
  int32_t kb = 0;
  FilterTap tap;

  CUSYNC_HD int32_t kColumn() const { return kb * cusync_gemm::detail::kBK; }
  CUSYNC_HD static PackedTapsStep at(const cusync_gemm::detail::Im2colGeometry& g, int kb) {
    return PackedTapsStep{kb, FilterTap::at(g, kb * kTaps)};
  }
  CUSYNC_HD void next(const cusync_gemm::detail::Im2colGeometry& g) {
    ++kb;
    tap.rs += kTaps;
    tap.fs += kTaps;
    while (tap.fs >= g.S) tap.fs -= g.S, ++tap.fr;
  }
};

}  // namespace cusync_conv::detail
