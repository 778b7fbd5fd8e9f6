// conv-patch: a prototype of the patch-once A loader for stride-1 3 x 3
// convolutions (docs/conv.md, next steps), checked against our conv2d and a
// float64 host product, and timed beside our conv2d in the same process.
//
// A tile is T output rows of one image, Wt output pixels wide (the whole row
// where W <= 126, else a segment of it). One tile-mode TMA box of the NHWC
// input, {64 channels, Wt + 2 pixels, T + 2 rows, 1 image}, zero-filled out
// of bounds (the padding), lands in a 128-byte-swizzled buffer with input
// pixel (h, w) of the patch at row h (Wt + 2) + w. The tile's GEMM rows m
// walk the patch's grid: output pixel (m / (Wt + 2), m % (Wt + 2)), columns
// Wt and Wt + 1 of each row computed and dropped. Filter position (r, s) of
// row m then reads patch row m + r (Wt + 2) + s, affine in m, so its A
// operand is a wgmma descriptor that starts at that row: nine positions,
// nine descriptors, one load per 64-channel block. The filter streams
// through a ring of k-blocks (BN = 64, 128 or 256 output channels x 64 input
// channels), two patch buffers let the next channel block's patch land
// while this one is multiplied. C and K multiples of 64; the epilogue
// (bias + ReLU) stores from registers, without TMA.
//
//   conv-patch [--iters N]
//
// Exit status 0 when every shape matches both references, 1 otherwise, 2 on
// bad usage or without a Hopper GPU.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda/ptx>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.cuh"  // CUDA_OK, interleavedMediansMs, findHopper
#include "kernels/conv/conv.h"
#include "kernels/conv/kernel/patch_geometry.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/kernel/sm90.cuh"

namespace {

namespace gd = cusync_gemm::detail;

constexpr int kTaps = 9;
// The filter's ring: k-blocks of BN rows x 64 channels (8 or 16 KiB; 32 KiB at 256).
constexpr int bSlots(int bn) { return bn == 256 ? 4 : 8; }

using cusync_conv::PatchGeometry;

// Shared memory of a block: two patch buffers, the filter's ring, barriers, alignment.
int smemBytes(const PatchGeometry& g) { return 2 * g.bufBytes() + bSlots(g.BN) * g.BN * 128 + 256 + 1024; }

struct PatchParams {
  CUtensorMap tmX;  // [N, H, W, C] as 4-D {C, W, H, N}, box {64, pitch, T + 2, 1}
  CUtensorMap tmW;  // [K, 9 C] as 2-D, box {64, BN}
  const __nv_bfloat16* bias;
  __nv_bfloat16* y;
  PatchGeometry g;
};

// One block: a loading thread and two consumer warpgroups of 64 GEMM rows
// each; a tile's k-blocks run channel block by channel block, the nine
// filter positions of each reading that block's patch.
template <int BN>
__global__ void __launch_bounds__(384, 1) patchConvKernel(const __grid_constant__ PatchParams p) {
#if CUSYNC_GEMM_SM90A
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  const PatchGeometry& g = p.g;
  constexpr int kSlotBytes = BN * 128;
  unsigned char* patch[2] = {smem, smem + g.bufBytes()};
  unsigned char* ring = smem + 2 * g.bufBytes();
  constexpr int kSlots = bSlots(BN);
  uint64_t* bars = reinterpret_cast<uint64_t*>(ring + kSlots * kSlotBytes);
  uint64_t* patchFull = bars;       // [2]
  uint64_t* patchEmpty = bars + 2;  // [2]
  uint64_t* bFull = bars + 4;       // [kSlots]
  uint64_t* bEmpty = bars + 4 + kSlots;
  const int wg = threadIdx.x / 128;
  const int cBlocks = g.C / 64;
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s) {
      cuda::ptx::mbarrier_init(&patchFull[s], 1);
      cuda::ptx::mbarrier_init(&patchEmpty[s], 256);  // every consumer thread
    }
    for (int s = 0; s < kSlots; ++s) {
      cuda::ptx::mbarrier_init(&bFull[s], 1);
      cuda::ptx::mbarrier_init(&bEmpty[s], 256);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  // Registers: the loading warpgroup needs few; a consumer holds BN / 2 accumulators.
  constexpr int kConsumerRegs = BN == 256 ? 232 : 160;
  if (wg == 0) {
    gd::releaseRegistersTo<40>();
    if (threadIdx.x == 0) {
      int pi = 0, bi = 0;
      for (int t = blockIdx.x; t < g.tiles; t += gridDim.x) {
        int n, p0, q0, k0;
        g.tileOf(t, n, p0, q0, k0);
        for (int cb = 0; cb < cBlocks; ++cb, ++pi) {
          const int ps = pi & 1;
          gd::mbarWait(&patchEmpty[ps], ((pi >> 1) & 1) ^ 1);
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                               &patchFull[ps], static_cast<uint32_t>(g.boxBytes()));
          const int32_t cx[4] = {cb * 64, q0 - 1, p0 - 1, n};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, patch[ps], &p.tmX, cx,
                                          &patchFull[ps]);
          for (int rs = 0; rs < kTaps; ++rs, ++bi) {
            const int bs = bi % kSlots;
            gd::mbarWait(&bEmpty[bs], ((bi / kSlots) & 1) ^ 1);
            cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                                 cuda::ptx::space_shared, &bFull[bs],
                                                 static_cast<uint32_t>(kSlotBytes));
            const int32_t cw[2] = {rs * g.C + cb * 64, k0};
            cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                            ring + bs * kSlotBytes, &p.tmW, cw, &bFull[bs]);
          }
        }
      }
    }
    return;
  }
  gd::claimRegistersTo<kConsumerRegs>();
  const int cw = wg - 1;  // this warpgroup's 64 GEMM rows of the tile: m0 = 64 cw
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const uint64_t ringDesc = gd::smemDesc(ring, 16, 1024);
  int pi = 0, bi = 0;
  for (int t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    float acc[BN / 2];
    // The slots the k-block before the current one read: released once the
    // current one's MMAs are issued and the one before them has completed.
    int heldB = -1, heldPatch = -1;
    for (int cb = 0; cb < cBlocks; ++cb, ++pi) {
      const int ps = pi & 1;
      gd::mbarWait(&patchFull[ps], (pi >> 1) & 1);
      for (int rs = 0; rs < kTaps; ++rs, ++bi) {
        const int bs = bi % kSlots;
        gd::mbarWait(&bFull[bs], (bi / kSlots) & 1);
        const int r = rs / 3, sc = rs % 3;
        const uint64_t descA =
            gd::smemDesc(patch[ps] + PatchGeometry::patchRow(64 * cw, r, sc, g.pitch) * 128, 16, 1024);
        const uint64_t descB = ringDesc + static_cast<uint64_t>(bs * kSlotBytes / 16);
        gd::wgmmaFence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          gd::mma16<__nv_bfloat16, BN, 0>(acc, descA + 2 * kk, descB + 2 * kk, (cb > 0 || rs > 0 || kk > 0) ? 1 : 0);
        gd::wgmmaCommit();
        gd::wgmmaWait<1>();
        if (heldB >= 0) cuda::ptx::mbarrier_arrive(&bEmpty[heldB]);
        if (heldPatch >= 0) cuda::ptx::mbarrier_arrive(&patchEmpty[heldPatch]);
        heldB = bs;
        heldPatch = rs == kTaps - 1 ? ps : -1;  // the patch's last reader
      }
    }
    gd::wgmmaWait<0>();
    gd::fenceRegs(acc);
    cuda::ptx::mbarrier_arrive(&bEmpty[heldB]);
    cuda::ptx::mbarrier_arrive(&patchEmpty[heldPatch]);
    int n, p0, q0, k0;
    g.tileOf(t, n, p0, q0, k0);
    // Accumulator layout of wgmma m64nNk16: group gq, half h holds row
    // 16 warp + lane / 4 + 8 h, columns 8 gq + 2 (lane % 4) + {0, 1}.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 64 * cw + 16 * warp + lane / 4 + 8 * h;
      int pOut, qOut;
      if (!g.pixelOf(m, p0, q0, pOut, qOut)) continue;
      __nv_bfloat16* row = p.y + ((static_cast<int64_t>(n) * g.H + pOut) * g.W + qOut) * g.K + k0;
#pragma unroll
      for (int gq = 0; gq < BN / 8; ++gq) {
        const int col = 8 * gq + 2 * (lane % 4);
        const float v0 = fmaxf(acc[4 * gq + 2 * h] + __bfloat162float(p.bias[k0 + col]), 0.f);
        const float v1 = fmaxf(acc[4 * gq + 2 * h + 1] + __bfloat162float(p.bias[k0 + col + 1]), 0.f);
        *reinterpret_cast<__nv_bfloat162*>(row + col) = __floats2bfloat162_rn(v0, v1);
      }
    }
  }
#endif
}

using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

CUtensorMap inputMap(const void* x, const PatchGeometry& g) {
  static EncodeFn fn = reinterpret_cast<EncodeFn>(gd::driverEntryPoint("cuTensorMapEncodeTiled", "conv-patch"));
  CUtensorMap m{};
  const cuuint64_t C = static_cast<cuuint64_t>(g.C);
  const cuuint64_t dims[4] = {C, static_cast<cuuint64_t>(g.W), static_cast<cuuint64_t>(g.H),
                              static_cast<cuuint64_t>(g.N)};
  const cuuint64_t strides[3] = {C * 2, C * 2 * g.W, C * 2 * g.W * g.H};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(g.pitch), static_cast<cuuint32_t>(g.T + 2), 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUresult r = fn(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(x), dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "conv-patch: cuTensorMapEncodeTiled failed (%d)\n", static_cast<int>(r));
    std::exit(1);
  }
  return m;
}

float bf(__nv_bfloat16 v) { return __bfloat162float(v); }

struct Shape {
  const char* name;
  int H, W, C, K;
};

}  // namespace

int main(int argc, char** argv) {
  int iters = 50;
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    if (s == "--help" || s == "-h") {
      std::printf(
          "conv-patch: a prototype of the patch-once A loader for stride-1 3x3 convolutions (docs/conv.md):\n"
          "checks it against our conv2d and a float64 host product at ResNet- and VGG-like layers, then times\n"
          "both interleaved. Options: --iters N (timed runs per median, default 50).\n");
      return 0;
    }
    if (s == "--iters" && a + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++a]));
    } else {
      std::fprintf(stderr, "conv-patch: unknown argument '%s' (see --help)\n", s.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop{};
  if (const std::string why = bench::findHopper(&prop); !why.empty()) {
    std::printf("conv-patch: %s; it needs a Hopper GPU (sm_90a)\n", why.c_str());
    return 2;
  }
  const Shape shapes[] = {{"res56", 56, 56, 64, 64},    {"res28", 28, 28, 128, 128},  {"res14", 14, 14, 256, 256},
                          {"res7", 7, 7, 512, 512},     {"vgg224", 224, 224, 64, 64}, {"vgg28", 28, 28, 512, 512},
                          {"vgg56", 56, 56, 256, 256},  {"odd13", 13, 13, 64, 128},   {"wide130", 5, 130, 192, 64}};
  const int batches[] = {1, 4, 8, 16, 32};
  std::mt19937 rng(20261128);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  CUDA_OK(cudaFuncSetAttribute(patchConvKernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  CUDA_OK(cudaFuncSetAttribute(patchConvKernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  CUDA_OK(cudaFuncSetAttribute(patchConvKernel<256>, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  bool allOk = true;
  std::printf("%s: conv 3x3 stride 1, bias + ReLU; ms are medians of %d runs each, interleaved, inputs L2-warm\n",
              prop.name, iters);
  std::printf(
      "shape      C    K batch  tiles  T x Wt   patch_ms  conv2d_ms  conv2d/patch  max|patch-conv2d|  max|patch-host|"
      "\n");
  for (const Shape& sh : shapes) {
    const int BN = sh.K % 256 == 0 ? 256 : sh.K % 128 == 0 ? 128 : 64;
    std::vector<__nv_bfloat16> w(static_cast<size_t>(sh.K) * kTaps * sh.C), bias(sh.K);
    for (auto& v : w) v = __float2bfloat16(dist(rng) / std::sqrt(9.f * sh.C) * 2.f);
    for (auto& v : bias) v = __float2bfloat16(dist(rng) * 0.1f);
    __nv_bfloat16 *dW, *dBias;
    CUDA_OK(cudaMalloc(&dW, w.size() * 2));
    CUDA_OK(cudaMalloc(&dBias, bias.size() * 2));
    CUDA_OK(cudaMemcpy(dW, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dBias, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice));
    const CUtensorMap tmW = gd::makeTensorMap2D(dW, true, static_cast<uint64_t>(kTaps) * sh.C, sh.K, 64, BN);
    for (int N : batches) {
      if (sh.W == 224 && N > 8) continue;  // keep the sweep short
      const PatchGeometry g = PatchGeometry::of(N, sh.H, sh.W, sh.C, sh.K, BN);
      if (smemBytes(g) > 227 * 1024) {
        std::printf("%-8s %4d %4d %5d  skipped: %d bytes of shared memory\n", sh.name, sh.C, sh.K, N, smemBytes(g));
        continue;
      }
      const size_t xElems = static_cast<size_t>(N) * sh.H * sh.W * sh.C;
      const size_t yElems = static_cast<size_t>(N) * sh.H * sh.W * sh.K;
      std::vector<__nv_bfloat16> x(xElems);
      for (auto& v : x) v = __float2bfloat16(dist(rng));
      __nv_bfloat16 *dX, *dY, *dY2;
      CUDA_OK(cudaMalloc(&dX, xElems * 2));
      CUDA_OK(cudaMalloc(&dY, yElems * 2));
      CUDA_OK(cudaMalloc(&dY2, yElems * 2));
      CUDA_OK(cudaMemcpy(dX, x.data(), xElems * 2, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(dY, 0xff, yElems * 2));  // NaN until written
      CUDA_OK(cudaMemset(dY2, 0xff, yElems * 2));
      PatchParams pp{};
      pp.tmX = inputMap(dX, g);
      pp.tmW = tmW;
      pp.bias = dBias;
      pp.y = dY;
      pp.g = g;
      const int blocks = std::min(g.tiles, prop.multiProcessorCount);
      cusync_conv::Conv2dArgs ca;
      ca.N = N, ca.H = sh.H, ca.W = sh.W, ca.C = sh.C, ca.K = sh.K;
      ca.x = dX, ca.w = dW, ca.y = dY2, ca.bias = dBias;
      ca.epilogue = cusync_conv::ConvEpilogue::BiasRelu;
      auto runPatch = [&] {
        if (BN == 256)
          patchConvKernel<256><<<blocks, 384, smemBytes(g), stream>>>(pp);
        else if (BN == 128)
          patchConvKernel<128><<<blocks, 384, smemBytes(g), stream>>>(pp);
        else
          patchConvKernel<64><<<blocks, 384, smemBytes(g), stream>>>(pp);
        CUDA_OK(cudaGetLastError());
      };
      auto runConv = [&] { cusync_conv::conv2d(ca, stream); };
      runPatch();
      runConv();
      CUDA_OK(cudaStreamSynchronize(stream));
      std::vector<__nv_bfloat16> y(yElems), y2(yElems);
      CUDA_OK(cudaMemcpy(y.data(), dY, yElems * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(y2.data(), dY2, yElems * 2, cudaMemcpyDeviceToHost));
      double diffConv = 0;
      for (size_t k = 0; k < yElems; ++k) {
        const double d = std::fabs(static_cast<double>(bf(y[k])) - bf(y2[k]));
        diffConv = std::isnan(d) ? INFINITY : std::max(diffConv, d);
      }
      // The host product at 2000 random outputs, the image borders among them.
      double diffHost = 0;
      std::uniform_int_distribution<int> pick(0, 1 << 30);
      for (int k = 0; k < 2000; ++k) {
        const int n = pick(rng) % N, kk = pick(rng) % sh.K;
        const int pOut = k % 4 == 0 ? 0 : k % 4 == 1 ? sh.H - 1 : pick(rng) % sh.H;
        const int qOut = k % 3 == 0 ? sh.W - 1 : pick(rng) % sh.W;
        double sum = bf(bias[kk]);
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const int h = pOut + r - 1, ww = qOut + s - 1;
            if (h < 0 || h >= sh.H || ww < 0 || ww >= sh.W) continue;
            const __nv_bfloat16* xp = &x[((static_cast<size_t>(n) * sh.H + h) * sh.W + ww) * sh.C];
            const __nv_bfloat16* wp = &w[(static_cast<size_t>(kk) * kTaps + r * 3 + s) * sh.C];
            for (int c = 0; c < sh.C; ++c) sum += static_cast<double>(bf(xp[c])) * bf(wp[c]);
          }
        const double ref = std::max(sum, 0.0);
        const double got = bf(y[((static_cast<size_t>(n) * sh.H + pOut) * sh.W + qOut) * sh.K + kk]);
        const double d = std::fabs(got - ref) / std::max(1.0, std::fabs(ref));
        diffHost = std::isnan(d) ? INFINITY : std::max(diffHost, d);
      }
      const bool ok = diffConv < 0.05 && diffHost < 0.02;
      allOk = allOk && ok;
      // Both timed interleaved, run by run (bench_util.cuh).
      const bench::Timings t =
          bench::interleavedMediansMs({[&](int) { runPatch(); }, [&](int) { runConv(); }}, iters, stream, 5);
      const double mp = t.ms[0], mc = t.ms[1];
      std::printf("%-8s %4d %4d %5d %6d %3d x %-4d %9.4f %10.4f %13.3f %18.3g %16.3g%s\n", sh.name, sh.C, sh.K, N,
                  g.tiles, g.T, g.Wt, mp, mc, mc / mp, diffConv, diffHost, ok ? "" : "  WRONG");
      CUDA_OK(cudaFree(dX));
      CUDA_OK(cudaFree(dY));
      CUDA_OK(cudaFree(dY2));
    }
    CUDA_OK(cudaFree(dW));
    CUDA_OK(cudaFree(dBias));
  }
  std::printf("%s\n", allOk ? "every shape matches conv2d and the host product" : "some shape is WRONG");
  return allOk ? 0 : 1;
}
