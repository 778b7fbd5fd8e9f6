// The convolution's host side without kernels: argument checks, the GEMM
// it runs as, its configuration choice, and the im2col tensor map.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cusync/error.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/host/conv_launch_host.h"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_conv {

using cusync_gemm::Epilogue;
using cusync_gemm::GemmArgs;
using cusync_gemm::TileConfig;

namespace {
[[noreturn]] void bad(const std::string& msg) {
  throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv2d", msg);
}
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
std::string str(int64_t v) { return std::to_string(v); }
}  // namespace

const char* toString(ConvEpilogue e) {
  switch (e) {
    case ConvEpilogue::Bias: return "bias";
    case ConvEpilogue::BiasRelu: return "bias-relu";
    case ConvEpilogue::BiasResidualRelu: return "bias-residual-relu";
  }
  return "?";
}

void checkArgs(const Conv2dArgs& a) {
  if (a.N < 1 || a.H < 1 || a.W < 1)
    bad("N, H, W = " + str(a.N) + ", " + str(a.H) + ", " + str(a.W) + ": each must be at least 1");
  if (a.C < 8 || a.C % 8 != 0)
    bad("C = " + str(a.C) + ": input channels must be a positive multiple of 8 (pad the channels, e.g. RGB to 8)");
  if (a.K < 8 || a.K % 8 != 0) bad("K = " + str(a.K) + ": output channels must be a positive multiple of 8");
  if ((a.R != 1 && a.R != 3) || (a.S != 1 && a.S != 3))
    bad("filter " + str(a.R) + "x" + str(a.S) + ": the kernels run 1x1 and 3x3 filters");
  if (a.strideH < 1 || a.strideH > 2 || a.strideW < 1 || a.strideW > 2)
    bad("stride " + str(a.strideH) + "x" + str(a.strideW) + ": the kernels run strides 1 and 2");
  if (a.padH < 0 || a.padW < 0 || 2 * a.padH > a.R - 1 || 2 * a.padW > a.S - 1)
    bad("padding " + str(a.padH) + "x" + str(a.padW) + " for a " + str(a.R) + "x" + str(a.S) +
        " filter: padding must be at most (filter - 1) / 2 on each side");
  if (a.H + 2 * a.padH < a.R || a.W + 2 * a.padW < a.S)
    bad("the " + str(a.R) + "x" + str(a.S) + " filter is larger than the padded " + str(a.H) + "x" + str(a.W) +
        " input");
  if (a.pixels() > (int64_t(1) << 31) - 1 || a.N * a.H * a.W > (int64_t(1) << 31) - 1)
    bad("N * H * W and N * P * Q must each be below 2^31");
  if (a.K > (int64_t(1) << 31) - 1 || a.C > 65536) bad("C must be at most 65536 and K below 2^31");
  if (!a.x || !a.w || !a.y) bad("x, w and y must be non-null device pointers");
  if (!aligned16(a.x)) bad("x is not 16-byte aligned");
  if (!aligned16(a.w)) bad("w is not 16-byte aligned");
  if (!aligned16(a.y)) bad("y is not 16-byte aligned");
  if (a.bias && !aligned16(a.bias)) bad("bias is not 16-byte aligned");
  if (a.epilogue == ConvEpilogue::BiasResidualRelu && !a.residual)
    bad("epilogue 'bias-residual-relu' needs a residual pointer");
  if (a.residual && !aligned16(a.residual)) bad("residual is not 16-byte aligned");
  if (a.splitK < 0) bad("splitK = " + str(a.splitK) + ": need 0 (the conv's choice) or a positive count");
  if (a.config != TileConfig::Auto && !convBuilds(a.config)) {
    std::string built;
    for (TileConfig b : detail::kConvConfigs) built += (built.empty() ? "" : ", ") + std::string(cusync_gemm::toString(b));
    bad(std::string("tile configuration ") + cusync_gemm::toString(a.config) + " is not built for the convolution (" +
        built + ")");
  }
  if (cusync_gemm::residentKBlocksOf(a.config) > 0 && !filterFitsResident(a))
    bad(std::string("tile configuration ") + cusync_gemm::toString(a.config) + " keeps the filter resident: it needs K <= 64 " +
        "output channels and R S ceil(C / 64) <= " + str(cusync_gemm::residentKBlocksOf(a.config)) + " k-blocks (K = " +
        str(a.K) + ", " + str(gemmOf(a).K / 64) + " k-blocks)");
}

bool filterFitsResident(const Conv2dArgs& a) {
  return a.K <= 64 && gemmOf(a).K / 64 <= cusync_gemm::residentKBlocksOf(TileConfig::T128x64Resident);
}

GemmArgs gemmOf(const Conv2dArgs& a) {
  GemmArgs g;
  g.M = a.pixels();
  g.N = a.K;
  g.K = packsFilterTaps(a) ? (int64_t(a.R) * a.S * a.C + 63) / 64 * 64
                           : int64_t(a.R) * a.S * detail::channelBlocks(a.C) * 64;
  g.A = a.x;
  g.B = a.w;
  g.C = a.y;
  g.epilogue = a.epilogue == ConvEpilogue::Bias       ? Epilogue::Bias
               : a.epilogue == ConvEpilogue::BiasRelu ? Epilogue::Relu
                                                      : Epilogue::ResidualRelu;
  g.bias = a.bias;
  g.residual = a.residual;
  g.trace = a.trace;
  g.config = a.config;
  g.splitK = a.splitK;
  return g;
}

bool convBuilds(TileConfig c) {
  for (TileConfig b : detail::kConvConfigs)
    if (b == c) return true;
  return false;
}

namespace {
// 128x256 tiles split into more parts lost to fewer 64x128 parts: each
// part's finish reads the others' 128 KiB fp32 partials.
constexpr int64_t kWidePartsMax = 4;

// Parts of a split tile: as many as the SMs hold for `tiles` tiles, at least
// 4 k-blocks each, at most `most`.
int64_t partsFor(int64_t tiles, int64_t kBlocks, int numSMs, int64_t most) {
  return std::max<int64_t>(std::min<int64_t>({most, numSMs / std::max<int64_t>(tiles, 1), kBlocks / 4}), 1);
}

// A configuration's time for a layer as the convolution runs it: waves of
// units, each unit its k-blocks at a per-k-block time plus a per-unit time.
// Fitted to the H100 (cusync-bench conv --graph with every layer of the
// ResNet-38 / VGG-19 sweep forced into each configuration through
// CUSYNC_CONV_CONFIG, 2026-11-27): the 128x64 and 128x128 k-loops run at
// the rate their loads arrive (~0.33-0.36 us a k-block, whatever the width),
// 128x256 at its MMAs' (~0.62 us); a split tile pays ~5 us for the partials'
// fixup. Over the sweep's 80 layer shapes and batches this model's pick ran
// within 0.1% of the fastest configuration (geomean; 2% at worst), where
// the GEMM's cost model with the few-tile rules before it (which chose
// 128x256 tail-split parts for 14 x 14 x 512 and 128x256 over 128x128 at
// 56 x 56 x 256, batch 8) ran 4.6% behind (44% at worst). 128x256
// tail-split parts were never the fastest and are not chosen.
struct ConvUnitCost {
  TileConfig config;
  double usPerKBlock, usPerUnit;
};
constexpr ConvUnitCost kWholeTileCosts[] = {
    {TileConfig::T128x64, 0.33, 0.8}, {TileConfig::T128x128, 0.36, 1.0}, {TileConfig::T128x256, 0.62, 1.5}};
// 128x64 tiles with the filter resident (filterFitsResident): a k-block
// brings A alone, two thirds of 128x64's bytes, after each block loaded the
// whole filter once. Against 128x64 (H100, 2026-11-28, one call): VGG's
// packed first layer (C = 8) 1.19-1.60x faster at every batch, its
// 224 x 224 x 64 layer 1.02-1.12x, ResNet's 56 x 56 x 64 layers 1.02-1.08x
// at batch 8-32, equal at batch 1 and 4% slower at batch 4 (one wave, whose
// first MMAs wait for the whole filter); so it is taken wherever it fits.
constexpr ConvUnitCost kResidentCost = {TileConfig::T128x64Resident, 0.26, 0.8};
constexpr double kSplitUsPerKBlock = 0.33, kSplitUsPerUnit = 0.8, kSplitFixupUs = 5.0;

// The most parts of a 64x128 split tile. Each of a tile's slab owners (or
// its finisher) reads the other parts' partials one after the other, so the
// fixup grows with the parts: ResNet's 7 x 7 x 512 layer at batch 1 (4
// tiles, 72 k-blocks) takes 18.4 us in 18 parts and 14.9 in 8 (H100,
// 2026-11-28, one binary, the sweep at batch 1-16 twice with each cap; no
// other layer moved beyond the spread). CUSYNC_CONV_SPLIT_PARTS sets
// another cap for A/B runs.
constexpr int64_t kSplitPartsMax = 8;
int64_t splitPartsMax() {
  static const int64_t n = [] {
    const int v = cusync_gemm::envInt(kEnvConvSplitParts);
    return v > 0 ? std::min<int64_t>(v, 32) : kSplitPartsMax;
  }();
  return n;
}
}  // namespace

double convModelUs(const Conv2dArgs& a, TileConfig c, int numSMs) {
  if (!convBuilds(c) || cusync_gemm::scheduleOf(c) == cusync_gemm::Schedule::TailSplit)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv2d",
                        std::string("the time model does not price tile configuration ") + cusync_gemm::toString(c));
  const GemmArgs g = gemmOf(a);
  const int64_t kBlocks = g.K / 64;
  const int64_t sms = std::max(numSMs, 1);
  const cusync_gemm::TileShape t = cusync_gemm::tileShape(c);
  const int64_t tiles = (g.M + t.bm - 1) / t.bm * ((g.N + t.bn - 1) / t.bn);
  auto wavesOf = [&](int64_t units) { return static_cast<double>((units + sms - 1) / sms); };
  if (cusync_gemm::scheduleOf(c) == cusync_gemm::Schedule::SplitK) {
    const int64_t parts = partsFor(tiles, kBlocks, numSMs, splitPartsMax());
    return wavesOf(tiles * parts) * (static_cast<double>((kBlocks + parts - 1) / parts) * kSplitUsPerKBlock +
                                     kSplitUsPerUnit + (parts > 1 ? kSplitFixupUs : 0.0));
  }
  const ConvUnitCost* cost = c == kResidentCost.config ? &kResidentCost : nullptr;
  for (const ConvUnitCost& w : kWholeTileCosts)
    if (w.config == c) cost = &w;
  return wavesOf(tiles) * (static_cast<double>(kBlocks) * cost->usPerKBlock + cost->usPerUnit);
}

TileConfig convConfig(const Conv2dArgs& a, int numSMs, cusync_gemm::LaunchContext) {
  if (a.config != TileConfig::Auto) return a.config;
  // For A/B runs on one binary: every Auto layer takes the named configuration
  // (one of kConvConfigs).
  static const char* const forced = std::getenv(kEnvConvConfig);
  if (forced != nullptr && *forced != '\0') {
    const TileConfig t = cusync_gemm::parseTileConfig(forced);
    if (!convBuilds(t))
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv2d",
                          std::string(kEnvConvConfig) + "=" + forced + ": not a configuration the convolution is built for");
    if (cusync_gemm::residentKBlocksOf(t) > 0 && !filterFitsResident(a)) return TileConfig::T128x64;
    return t;
  }
  TileConfig best = TileConfig::Auto;
  double bestCost = 0;
  auto consider = [&](TileConfig c) {
    const double cost = convModelUs(a, c, numSMs);
    if (best == TileConfig::Auto || cost < bestCost) best = c, bestCost = cost;
  };
  for (const ConvUnitCost& c : kWholeTileCosts) consider(c.config);
  if (filterFitsResident(a)) consider(kResidentCost.config);
  // Split tiles only where they are strictly faster.
  return convModelUs(a, TileConfig::T64x128SplitK, numSMs) < bestCost ? TileConfig::T64x128SplitK : best;
}

int convSplits(const Conv2dArgs& a, int numSMs) {
  if (a.splitK > 0 || !cusync_gemm::splitsK(a.config)) return a.splitK;
  const GemmArgs g = gemmOf(a);
  const cusync_gemm::TileShape t = cusync_gemm::tileShape(a.config);
  const int64_t tiles = (g.M + t.bm - 1) / t.bm * ((g.N + t.bn - 1) / t.bn);
  if (cusync_gemm::scheduleOf(a.config) == cusync_gemm::Schedule::SplitK)
    return static_cast<int>(partsFor(tiles, g.K / 64, numSMs, splitPartsMax()));
  // TailSplit splits only a part-empty last wave: with whole waves the GEMM's tail plan counts the parts.
  return tiles < numSMs ? static_cast<int>(partsFor(tiles, g.K / 64, numSMs, kWidePartsMax)) : 0;
}

Conv2dArgs resolveLaunch(const Conv2dArgs& a, int numSMs, cusync_gemm::LaunchContext where) {
  Conv2dArgs r = a;
  r.config = convConfig(a, numSMs, where);
  r.splitK = convSplits(r, numSMs);
  return r;
}

namespace detail {

namespace {
using EncodeIm2colFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                    const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t,
                                    const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeIm2colFn encodeIm2colFn() {
  static EncodeIm2colFn fn =
      reinterpret_cast<EncodeIm2colFn>(cusync_gemm::detail::driverEntryPoint("cuTensorMapEncodeIm2col", "conv2d"));
  return fn;
}
}  // namespace

void rejectPackedWaits(const Conv2dArgs& a) {
  if (packsFilterTaps(a))
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "conv2d",
                        "a layer with C = 8 input channels (eight filter positions packed into each k-block) cannot "
                        "wait on its input: make it the chain's first stage, or pad C to 16");
}

CUtensorMap makeIm2colMap(const Conv2dArgs& a, uint32_t pixelsPerLoad) {
  // Dimensions innermost first: C, W, H, N. The bounding box holds the
  // window corners of the output pixels: from -pad to (extent - 1) + pad -
  // (filter - 1), walked with the stride; the corners are given as {W, H}.
  const cuuint64_t dims[4] = {cuuint64_t(a.C), cuuint64_t(a.W), cuuint64_t(a.H), cuuint64_t(a.N)};
  const cuuint64_t strides[3] = {cuuint64_t(a.C) * 2, cuuint64_t(a.C * a.W) * 2, cuuint64_t(a.C * a.W * a.H) * 2};
  const int lower[2] = {-a.padW, -a.padH};
  const int upper[2] = {a.padW - (a.S - 1), a.padH - (a.R - 1)};
  const cuuint32_t estr[4] = {1, cuuint32_t(a.strideW), cuuint32_t(a.strideH), 1};
  CUtensorMap m{};
  // Packed filter taps: 8 channels (16 bytes) a pixel, unswizzled (Im2colPackedTapsA).
  const bool packed = packsFilterTaps(a);
  const CUresult r = encodeIm2colFn()(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(a.x), dims, strides,
                                      lower, upper, packed ? 8 : 64, pixelsPerLoad, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      packed ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw cusync::Error(cusync::ErrorCode::CudaError, "conv2d",
                        "cuTensorMapEncodeIm2col failed with code " + std::to_string(static_cast<int>(r)));
  return m;
}

}  // namespace detail
}  // namespace cusync_conv
