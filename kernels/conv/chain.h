// Two convolutions in a chain, the second reading the first's output (the
// benchmark's ResNet and VGG layer pairs), in the variants the benchmark and
// the tests compare:
//
//   NoSync    conv2d() twice in stream order, no tile synchronization: our
//             own baseline
//   Pdl       the second conv launched early (programmatic dependent launch),
//             waiting for all of the first (policy WholeSync)
//   TileSync  the second conv's tiles wait only for the first conv's output
//             tiles they read, halo included (policy Conv2DTileSync), PDL
//             launch: they start as soon as those rows are written
//   Fused     both layers in one persistent kernel (cusync/fused.h): its
//             blocks take the first layer's tiles, then the second's, from
//             one counter, the second's waiting as under TileSync; one
//             launch, one ramp-up, and blocks without first-layer work start
//             on the second layer (loading its filter) during the first's
//             last wave
//
// The variants but Fused run every layer with its conv2d configuration for
// a stage (convConfig); Fused runs both layers on one of the two (the
// kernel has one tile shape): the one the time model prices lower for the
// pair, a resident filter, which serves one layer, taken as 128x64. The
// synchronized variants take their tiles in row-major order (the first conv
// finishes its pixel rows in order, the second reads them in that order).
// Every variant can be captured in a CUDA graph once constructed.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "cusync/launch_mode.h"
#include "kernels/conv/conv.h"

namespace cusync_conv {

enum class ChainVariant { NoSync, Pdl, TileSync, Fused };
const char* toString(ChainVariant v);

// One layer of a chain; its input geometry comes from the layer before.
struct ConvLayer {
  int64_t C = 64, K = 64;  // input and output channels
  int R = 3;               // R x R filter
  int pad = 1, stride = 1;
  ConvEpilogue epilogue = ConvEpilogue::BiasRelu;
};

// Device buffers of one run of a pair (all NHWC / KRSC bf16; bias optional,
// residual only with BiasResidualRelu).
struct PairBuffers {
  const void* x = nullptr;   // [N, H, W, C1]
  const void* w1 = nullptr;  // [K1, R1, R1, C1]
  const void* bias1 = nullptr;
  void* y1 = nullptr;        // [N, P1, Q1, K1]: the second layer's input
  const void* w2 = nullptr;  // [K2, R2, R2, K1]
  const void* bias2 = nullptr;
  const void* residual2 = nullptr;
  void* y2 = nullptr;        // [N, P2, Q2, K2]
  cusync_gemm::TileTrace* trace1 = nullptr;  // optional: per-tile records of each layer
  cusync_gemm::TileTrace* trace2 = nullptr;
};

class ConvPair {
 public:
  // N images of H x W pixels through `first`, then `second` (second.C ==
  // first.K). Creates the stages (device memory) for the synchronized
  // variants; throws cusync::Error for shapes conv2d or the policy refuses
  // (and, for Fused, a first layer without bias + ReLU or either layer with
  // packed filter taps). `mode` applies to Pdl and TileSync.
  ConvPair(int64_t N, int64_t H, int64_t W, const ConvLayer& first, const ConvLayer& second, ChainVariant v,
           cusync::LaunchMode mode = cusync::LaunchMode::Pdl);
  ~ConvPair();
  ConvPair(const ConvPair&) = delete;
  ConvPair& operator=(const ConvPair&) = delete;

  // The two layers' arguments on the buffers of one run.
  Conv2dArgs firstArgs(const PairBuffers& b) const;
  Conv2dArgs secondArgs(const PairBuffers& b) const;
  // Both layers on `stream`, asynchronous.
  void run(const PairBuffers& b, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cusync_conv
