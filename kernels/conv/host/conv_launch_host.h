// Host helpers of the convolution's launch, plain C++: the configurations
// its kernels are built for, and its A operand's tensor map and geometry.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/conv/conv.h"
#include "kernels/gemm/kernel/params.cuh"

namespace cusync_conv::detail {

// 64-wide tiles for 64-channel layers (with the filter resident where it
// fits), 128 and 256 for wider ones, 64-row split tiles where a layer's few
// output pixels leave the SMs idle, and 128x256 tiles whose last, part-empty
// wave is split over K (a long reduction in fewer tiles than SMs: VGG's
// 14 x 14 x 512 at batch 8).
inline constexpr cusync_gemm::TileConfig kConvConfigs[] = {
    cusync_gemm::TileConfig::T128x64,       cusync_gemm::TileConfig::T128x128,
    cusync_gemm::TileConfig::T128x256,      cusync_gemm::TileConfig::T64x128SplitK,
    cusync_gemm::TileConfig::T128x256TailSplit, cusync_gemm::TileConfig::T128x64Resident};

// 64-channel k-blocks per filter position.
constexpr int64_t channelBlocks(int64_t C) { return (C + 63) / 64; }

// The im2col tensor map of x: loads of pixelsPerLoad output pixels x 64
// channels, 128-byte swizzle, zeros for padding and channels past C; with
// packed filter taps (C = 8) x 8 channels, unswizzled.
CUtensorMap makeIm2colMap(const Conv2dArgs& a, uint32_t pixelsPerLoad);

// Throws cusync::Error(InvalidArgument) for a layer with packed filter taps
// (packsFilterTaps) in a stage that waits on its input.
void rejectPackedWaits(const Conv2dArgs& a);

inline cusync_gemm::detail::Im2colGeometry im2colGeometry(const Conv2dArgs& a) {
  cusync_gemm::detail::Im2colGeometry g;
  g.Q = static_cast<int32_t>(a.Q());
  g.PQ = static_cast<int32_t>(a.P() * a.Q());
  g.strideH = a.strideH, g.strideW = a.strideW;
  g.padH = a.padH, g.padW = a.padW;
  g.S = a.S;
  g.C = static_cast<int32_t>(a.C);
  g.cBlocks = static_cast<int32_t>(channelBlocks(a.C));
  g.taps = a.R * a.S;
  return g;
}

}  // namespace cusync_conv::detail
