// The tile geometry of the patch-once A loader for stride-1 3 x 3
// convolutions (docs/conv.md, next steps; its prototype is
// kernels/conv/tools/conv_patch.cu). Host and device.
//
// A tile is T output rows of one image, Wt output pixels wide (the whole row
// where W <= 126, else a segment of it), and BN output channels. Its input
// patch, rows p0 - 1 .. p0 + T and columns q0 - 1 .. q0 + Wt of one 64-channel
// block, is one TMA box whose pixel (h, w) lies at patch row h * pitch + w,
// pitch = Wt + 2. GEMM row m of the tile is output pixel (m / pitch,
// m % pitch) of the tile; the columns Wt and Wt + 1 of each row are computed
// and dropped. Filter position (r, s) of row m reads patch row
// m + r * pitch + s, affine in m over the whole tile, so that its A operand
// is one wgmma descriptor starting at that row.
#pragma once

#include "cusync/config.h"

namespace cusync_conv {

struct PatchGeometry {
  static constexpr int kRows = 128;       // GEMM rows of a tile
  static constexpr int kMaxSegment = 126;  // Wt + 2 <= kRows: one output row fits a tile

  int N = 0, H = 0, W = 0, C = 0, K = 0, BN = 0;
  int Wt = 0;        // output pixels per tile row
  int pitch = 0;     // Wt + 2: patch rows per input row
  int T = 0;         // output rows per tile
  int segs = 0;      // tiles across a row
  int rowTiles = 0;  // tiles down an image
  int colTiles = 0;  // K / BN
  int tiles = 0;
  int boxRows = 0;   // patch rows one TMA box fills: (T + 2) * pitch
  int bufRows = 0;   // rows of a patch buffer: the box, and what the reads of rows m < kRows run past it

  static PatchGeometry of(int N, int H, int W, int C, int K, int BN) {
    PatchGeometry g;
    g.N = N, g.H = H, g.W = W, g.C = C, g.K = K, g.BN = BN;
    g.Wt = W < kMaxSegment ? W : kMaxSegment;
    g.pitch = g.Wt + 2;
    const int fit = kRows / g.pitch;
    g.T = fit < 1 ? 1 : (fit < H ? fit : H);
    g.segs = (W + g.Wt - 1) / g.Wt;
    g.rowTiles = (H + g.T - 1) / g.T;
    g.colTiles = K / BN;
    g.tiles = N * g.rowTiles * g.segs * g.colTiles;
    g.boxRows = (g.T + 2) * g.pitch;
    // The last row, m = kRows - 1, at the last position (2, 2).
    const int reach = kRows + 2 * g.pitch + 2;
    g.bufRows = ((g.boxRows > reach ? g.boxRows : reach) + 7) / 8 * 8;
    return g;
  }
  CUSYNC_HD int bufBytes() const { return bufRows * 128; }
  CUSYNC_HD int boxBytes() const { return boxRows * 128; }

  // Tile t: image n, first output row p0 and column q0, first output channel
  // k0. Column tiles are innermost, so that neighbouring tiles read one patch.
  CUSYNC_HD void tileOf(int t, int& n, int& p0, int& q0, int& k0) const {
    k0 = t % colTiles * BN;
    const int st = t / colTiles;
    n = st / (rowTiles * segs);
    p0 = (st / segs) % rowTiles * T;
    q0 = st % segs * Wt;
  }
  // The output pixel of GEMM row m of a tile at (p0, q0); false where m is a
  // dropped column or lies past the tile or the image.
  CUSYNC_HD bool pixelOf(int m, int p0, int q0, int& p, int& q) const {
    const int pr = m / pitch, qc = m % pitch;
    p = p0 + pr;
    q = q0 + qc;
    return pr < T && qc < Wt && p < H && q < W;
  }
  // The patch row that GEMM row m reads at filter position (r, s).
  CUSYNC_HD static int patchRow(int m, int r, int s, int pitch) { return m + r * pitch + s; }
};

}  // namespace cusync_conv
