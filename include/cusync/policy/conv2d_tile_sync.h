// Conv2DTileSync: implicit-GEMM convolution reading the output of a previous
// convolution, NHWC. The producer's rows are its output pixels (n, h, w)
// flattened, N*H*W of them, its columns the C channels; the consumer's rows
// are its own N*Ho*Wo output pixels and its reduction index is
// k = (r * S + s) * C + c over an R x S filter, so one producer column tile
// (channels) is read R*S times, at shifted pixels. At filter position (r, s)
// output pixel (n, ho, wo) reads input pixel
// (n, ho*strideH + r - padH, wo*strideW + s - padW); pixels outside the image
// are zero padding and read nothing.
//
// One semaphore per producer tile. The consumer waits once, at its walk's
// first step, for every producer tile it will read: every channel tile, on
// every producer row tile from the input pixel its first output pixel reads
// at (0, 0) to the one its last output pixel reads at (R-1, S-1), both taken
// before clipping to the image (inputPixel). Its later steps read within
// those tiles and need no wait, wherever the walk starts (split K).
//
// Why all channels at once rather than each channel tile where the walk
// first meets it: a producer finishes the channel tiles of a row band
// together (they are neighbours in its tile order), so waiting for them one
// by one gains nothing measurable (docs/conv.md), and a waiter that resolves
// a walk ahead of its loads evaluates and polls one span per walk instead of
// one per step. cusyncgen's policy derived from specs/conv2d_chain.cusync
// waits channel tile by channel tile; this one waits for the same tiles, all
// at the start.
//
// Why those bounds hold every pixel read: at a fixed filter position the
// unclipped input pixel never decreases from one output pixel to the next
// when each side's padding is at most (filter - 1) / 2 (checkPair), and it
// grows with r and s. Bounds in a padding row or column fall in a
// neighbouring row or image, so the wait is conservative there, never short.
//
// H = 0 describes a consumer whose output pixels are the input's (stride 1,
// Ho x Wo = H x W): the bounds are then the consumer's rows shifted by the
// filter halo, and only W is needed. N, when given (with H), lets checkPair
// match both grids against the image geometry.
#pragma once

#include "cusync/policy/walk.h"

namespace cusync::policy {

struct Conv2DTileSync {
  static constexpr const char* kName = "Conv2DTileSync";
  static constexpr bool kSingleWriter = true;
  static constexpr bool kWaitsAtWalkStartOnly = true;  // see policy/walk.h

  uint32_t R = 3, S = 3;      // filter size
  uint32_t C = 1;             // input channels (= producer output columns)
  uint32_t W = 1;             // input image width in pixels
  uint32_t padH = 1, padW = 1;
  uint32_t H = 0;             // input image height; 0: output pixels are the input's (stride 1)
  uint32_t strideH = 1, strideW = 1;
  uint32_t N = 0;             // images; 0: the grids are not checked against the geometry

  // Output size by the usual convolution arithmetic (H > 0).
  CUSYNC_HD uint32_t outH() const { return (H + 2 * padH - R) / strideH + 1; }
  CUSYNC_HD uint32_t outW() const { return (W + 2 * padW - S) / strideW + 1; }

  // The flattened input pixel that output pixel p reads at filter position
  // (r, s), before clipping to the image: negative, or a neighbouring row's
  // or image's pixel, where the position is padding.
  CUSYNC_HD int64_t inputPixel(uint32_t p, uint32_t r, uint32_t s) const {
    const int64_t dr = int64_t(r) - padH, ds = int64_t(s) - padW;
    if (H == 0) return int64_t(p) + dr * W + ds;
    const uint32_t wo = outW(), plane = outH() * wo;
    const uint32_t n = p / plane, y = p % plane / wo, x = p % wo;
    return (int64_t(n) * H + int64_t(y) * strideH + dr) * W + int64_t(x) * strideW + ds;
  }

  // Producer row tiles holding every pixel that consumer rows [row, row + BM) read.
  CUSYNC_HD TileRange rowsRead(uint32_t row, const StageShape& cons, const StageShape& prod) const {
    const int64_t first = inputPixel(row, 0, 0);
    int64_t last = inputPixel(row + cons.tile.y - 1, R - 1, S - 1);
    if (last >= int64_t(prod.rows())) last = int64_t(prod.rows()) - 1;
    if (last < 0 || last < first) return TileRange{};
    const uint32_t lo = first > 0 ? uint32_t(first) : 0;
    return tilesCovering(lo, uint32_t(last) - lo + 1, prod.tile.y, prod.grid.y);
  }

  CUSYNC_HD uint32_t semaphoreCount(const StageShape& prod) const { return prod.grid.count(); }
  CUSYNC_HD uint32_t readExtent(const StageShape&) const { return R * S * C; }
  CUSYNC_HD uint32_t tileIndex(const Dim3& t, const StageShape& prod) const {
    return walk::linearTile(t, prod.grid);
  }
  CUSYNC_HD uint32_t postValue(const Dim3&, const StageShape&) const { return 1; }
  CUSYNC_HD uint32_t waitValue(uint32_t, const StageShape&) const { return 1; }
  CUSYNC_HD SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    if (r.col != r.walkStart) return SemSpan{};
    return walk::tileBox(tilesCovering(0, C, prod.tile.x, prod.grid.x), rowsRead(r.row, cons, prod), r.batch, prod);
  }
  CUSYNC_HD bool isSync(const Read& r, const StageShape& cons, const StageShape& prod) const {
    return !waitSpan(r, cons, prod).empty();
  }
  const char* checkPair(const StageShape& cons, const StageShape& prod) const {
    if (R == 0 || S == 0 || C == 0 || W == 0) return "Conv2DTileSync: R, S, C and W must be at least 1";
    if (strideH == 0 || strideW == 0) return "Conv2DTileSync: strides must be at least 1";
    if (padH >= R || padW >= S) return "Conv2DTileSync: padding must be smaller than the filter";
    if (H == 0 && (strideH != 1 || strideW != 1))
      return "Conv2DTileSync: a strided convolution needs the input height H (H = 0 means the output pixels are the "
             "input's)";
    if (W + 2 * padW < S || (H > 0 && H + 2 * padH < R))
      return "Conv2DTileSync: the filter is larger than the padded input (R > H + 2*padH or S > W + 2*padW)";
    if (H > 0 && (2 * padH > R - 1 || 2 * padW > S - 1))
      return "Conv2DTileSync: padding must be at most (filter - 1) / 2 on each side when H is given";
    if (cons.tile.z == 0 || C % cons.tile.z != 0)
      return "Conv2DTileSync: the consumer's k step (tile.z) must divide C so a step never spans two filter positions";
    if (prod.cols() < C) return "Conv2DTileSync: the producer has fewer columns than C channels";
    if (N > 0) {
      if (H == 0) return "Conv2DTileSync: checking the grids against N images needs the input height H";
      if (prod.grid.y != ceilDiv(N * H * W, prod.tile.y))
        return "Conv2DTileSync: the producer's row tiles (grid.y) do not cover exactly its N*H*W output pixels";
      if (cons.grid.y != ceilDiv(N * outH() * outW(), cons.tile.y))
        return "Conv2DTileSync: the consumer's row tiles (grid.y) do not cover exactly its N*Ho*Wo output pixels, "
               "Ho = (H + 2*padH - R)/strideH + 1, Wo = (W + 2*padW - S)/strideW + 1";
    }
    return nullptr;
  }
};

}  // namespace cusync::policy
