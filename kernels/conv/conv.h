// Hopper conv2d forward as an implicit GEMM, with the cusync hooks: the GEMM
// kernel (kernels/gemm) with an A loader that reads the activations through
// the TMA's im2col mode instead of a row-major matrix.
//
//   x  [N, H, W, C]   NHWC activations, bf16
//   w  [K, R, S, C]   KRSC filters, bf16
//   y  [N, P, Q, K]   NHWC output, bf16; P = (H + 2 padH - R) / strideH + 1,
//                     Q = (W + 2 padW - S) / strideW + 1
//
// As a GEMM: M = N P Q output pixels, N = K output channels, and the
// reduction walks filter position (r, s) by 64-channel blocks: k-block
// (r S + s) ceil(C / 64) + cb reads channels [64 cb, 64 cb + 64) of input
// pixel (p strideH + r - padH, q strideW + s - padW); padding and channels
// past C load as zeros. Its reduction index as a cusync stage sees it
// (Read::col) is the filter column k = (r S + s) C + c, as
// cusync::policy::Conv2DTileSync expects. With C = 8 (an RGB input padded
// to 8) a k-block instead holds eight filter positions' 8 channels, k-block
// kb the filter columns [64 kb, 64 kb + 64) (packsFilterTaps); such a layer
// cannot be a stage that waits on its input.
//
// Epilogues, in fp32 before rounding (bias [K] optional in all three):
//   Bias              y = acc + bias
//   BiasRelu          y = max(acc + bias, 0)
//   BiasResidualRelu  y = max(acc + bias + residual, 0), residual [N, P, Q, K]
//                     (ResNet's block end)
//
// Requirements, checked before launch (cusync::Error, InvalidArgument): N, H,
// W >= 1; C and K multiples of 8; R, S in {1, 3} with padding at most
// (filter - 1) / 2; stride 1 or 2; the filter fits the padded input; x, w,
// y, bias, residual 16-byte aligned; a Hopper GPU.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cusync/error.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"

namespace cusync_conv {

enum class ConvEpilogue { Bias, BiasRelu, BiasResidualRelu };

struct Conv2dArgs {
  int64_t N = 0, H = 0, W = 0, C = 0;  // input images, height, width, channels
  int64_t K = 0;                       // output channels (filters)
  int R = 3, S = 3;                    // filter height and width
  int padH = 1, padW = 1;
  int strideH = 1, strideW = 1;
  const void* x = nullptr;  // [N, H, W, C]
  const void* w = nullptr;  // [K, R, S, C]
  void* y = nullptr;        // [N, P, Q, K]
  ConvEpilogue epilogue = ConvEpilogue::Bias;
  const void* bias = nullptr;      // [K], optional
  const void* residual = nullptr;  // [N, P, Q, K], BiasResidualRelu only
  cusync_gemm::TileTrace* trace = nullptr;  // optional: one record per stage tile
  // A GEMM tile configuration (cusync_gemm::TileConfig); Auto: convConfig's choice.
  cusync_gemm::TileConfig config = cusync_gemm::TileConfig::Auto;
  // Parts per tile of the split-K configuration (clamped to [1, 32] and the
  // k-blocks); 0: convSplits' choice.
  int splitK = 0;

  int64_t P() const { return (H + 2 * padH - R) / strideH + 1; }  // output height
  int64_t Q() const { return (W + 2 * padW - S) / strideW + 1; }  // output width
  int64_t pixels() const { return N * P() * Q(); }                // output pixels: the GEMM's M
};

const char* toString(ConvEpilogue e);

// Throws cusync::Error(InvalidArgument) naming the first problem. Host only.
void checkArgs(const Conv2dArgs& a);

// Whether a's k-blocks pack eight filter positions of its 8 channels each.
inline bool packsFilterTaps(const Conv2dArgs& a) { return a.C == 8; }

// The GEMM an argument set runs as: M = N P Q, N = K, K = R S ceil(C / 64) 64
// (the reduction with each filter position's channels padded to whole
// k-blocks; with packed filter taps R S 8 rounded up to 64), with x, w, y as
// A, B, C. For the configuration choice and stage
// geometry (cusync_gemm::stageGrid / stageTile of it): a conv stage's tiles
// are the GEMM's.
cusync_gemm::GemmArgs gemmOf(const Conv2dArgs& a);

// The configurations the convolution kernels are built for, and the choice
// among them for a shape: waves of units at per-k-block and per-unit times
// measured on the H100 (conv_host.cpp), whole 128x64 / 128x128 / 128x256
// tiles, 128x64 tiles with the filter resident, or 64x128 split tiles
// (a.config when set, which must be one of them).
bool convBuilds(cusync_gemm::TileConfig c);
// Whether a's filter fits the 128x64-resident configuration: one column
// tile (K <= 64 output channels) and a reduction of at most 9 k-blocks (a
// 3 x 3 filter over 64 channels, 72 KiB), which each block then loads once
// and keeps in shared memory while its tiles stream only their A.
bool filterFitsResident(const Conv2dArgs& a);
// For A/B runs on one binary, as the GEMM's switches (kernels/gemm/env.h):
// CUSYNC_CONV_CONFIG=name makes every layer whose a.config is Auto take that
// configuration (one the convolution is built for; others are an error;
// 128x64-resident where the filter fits, 128x64 elsewhere).
inline constexpr const char* kEnvConvConfig = "CUSYNC_CONV_CONFIG";
// CUSYNC_CONV_SPLIT_PARTS=n: a 64x128 split tile takes at most n parts (1 to
// 32) instead of 8.
inline constexpr const char* kEnvConvSplitParts = "CUSYNC_CONV_SPLIT_PARTS";
// `cusync-bench conv --help` lists them.
inline constexpr cusync_gemm::EnvSwitch kEnvSwitches[] = {
    {kEnvConvConfig, "=name: every layer takes this tile configuration (128x64, 128x64-resident where the filter fits, "
                     "128x128, 128x256, 64x128-splitk or 128x256-tailsplit) instead of the time model's pick"},
    {kEnvConvSplitParts, "=n: a 64x128 split tile takes at most n parts (1 to 32; default 8)"},
};
cusync_gemm::TileConfig convConfig(const Conv2dArgs& a, int numSMs, cusync_gemm::LaunchContext where);
// The time model's estimate, in microseconds, for a's layer in configuration
// c (one the convolution builds, not a tail split): what convConfig
// compares; its absolute value is a fit, only its order counts.
double convModelUs(const Conv2dArgs& a, cusync_gemm::TileConfig c, int numSMs);
// Parts per split tile for a's configuration (a.splitK when set): as many as
// the SMs hold, at least 4 k-blocks each, at most 8 (64x128) or 4
// (128x256). A layer with few output pixels and a long reduction (ResNet's
// 7 x 7 x 512) is one k-loop per tile otherwise, whose load latency sets
// the layer's time.
int convSplits(const Conv2dArgs& a, int numSMs);
// a with its configuration and split count resolved, as every launch runs it.
Conv2dArgs resolveLaunch(const Conv2dArgs& a, int numSMs, cusync_gemm::LaunchContext where);

// Launch with no synchronization, asynchronous on `stream`, as a programmatic
// dependent of the kernel before it (as cusync_gemm::gemm).
void conv2d(const Conv2dArgs& a, cudaStream_t stream);

}  // namespace cusync_conv
