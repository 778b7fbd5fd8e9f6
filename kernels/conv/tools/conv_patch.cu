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
// nine descriptors, one load. The filter (9 k-blocks of 64 x 64) stays
// resident; two patch buffers let the next tile's patch land while this one
// is multiplied. C = K = 64 only (one channel block, one 64-wide column tile).
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

#include "bench/bench_util.cuh"  // CUDA_OK
#include "kernels/conv/conv.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/kernel/sm90.cuh"

namespace {

namespace gd = cusync_gemm::detail;

constexpr int kC = 64, kK = 64, kTaps = 9;
constexpr int kTapBytes = kK * kC * 2;  // one filter position's k-block: 64 rows of 128 bytes
constexpr int kFilterBytes = kTaps * kTapBytes;
constexpr int kMaxSegment = 126;        // Wt + 2 <= 128 rows: one output row fits a 128-row tile

// Tile geometry of one layer.
struct PatchGeometry {
  int N, H, W;
  int Wt;      // output pixels per tile row
  int pitch;   // Wt + 2: patch rows per input row
  int T;       // output rows per tile
  int segs;    // tiles across a row
  int rowTiles;
  int tiles;
  int bufRows;  // rows of one patch buffer (the box plus what the last m's reads run past it)
  int boxBytes;

  static PatchGeometry of(int N, int H, int W) {
    PatchGeometry g{};
    g.N = N, g.H = H, g.W = W;
    g.Wt = std::min(W, kMaxSegment);
    g.pitch = g.Wt + 2;
    g.T = std::max(1, std::min(H, 128 / g.pitch));
    g.segs = (W + g.Wt - 1) / g.Wt;
    g.rowTiles = (H + g.T - 1) / g.T;
    g.tiles = N * g.rowTiles * g.segs;
    const int boxRows = (g.T + 2) * g.pitch;
    g.bufRows = (std::max(boxRows, 128 + 2 * g.pitch + 2) + 7) / 8 * 8;
    g.boxBytes = boxRows * 128;
    return g;
  }
  __host__ __device__ int bufBytes() const { return bufRows * 128; }
  int smemBytes() const { return kFilterBytes + 2 * bufBytes() + 64 + 1024; }
};

struct PatchParams {
  CUtensorMap tmX;  // [N, H, W, C] as 4-D {C, W, H, N}, box {64, pitch, T + 2, 1}
  CUtensorMap tmW;  // [K, 9 C] as 2-D, box {64, 64}
  const __nv_bfloat16* bias;
  __nv_bfloat16* y;
  PatchGeometry g;
};

__global__ void __launch_bounds__(384, 1) patchConvKernel(const __grid_constant__ PatchParams p) {
#if CUSYNC_GEMM_SM90A
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  const PatchGeometry& g = p.g;
  unsigned char* filter = smem;
  unsigned char* patch[2] = {smem + kFilterBytes, smem + kFilterBytes + g.bufBytes()};
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kFilterBytes + 2 * g.bufBytes());
  uint64_t* filterFull = bars;
  uint64_t* full = bars + 1;   // [2]
  uint64_t* empty = bars + 3;  // [2]
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(filterFull, 1);
    for (int s = 0; s < 2; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], 256);  // every consumer thread
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  }
  __syncthreads();
  auto tileOf = [&](int t, int& n, int& p0, int& q0) {
    n = t / (g.rowTiles * g.segs);
    p0 = (t / g.segs) % g.rowTiles * g.T;
    q0 = t % g.segs * g.Wt;
  };
  if (wg == 0) {
    if (threadIdx.x == 0) {
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           filterFull, static_cast<uint32_t>(kFilterBytes));
      for (int rs = 0; rs < kTaps; ++rs) {
        const int32_t c[2] = {rs * kC, 0};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, filter + rs * kTapBytes,
                                        &p.tmW, c, filterFull);
      }
      int i = 0;
      for (int t = blockIdx.x; t < g.tiles; t += gridDim.x, ++i) {
        const int s = i & 1;
        gd::mbarWait(&empty[s], ((i >> 1) & 1) ^ 1);
        int n, p0, q0;
        tileOf(t, n, p0, q0);
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &full[s], static_cast<uint32_t>(g.boxBytes));
        const int32_t c[4] = {0, q0 - 1, p0 - 1, n};
        cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, patch[s], &p.tmX, c,
                                        &full[s]);
      }
    }
    return;
  }
  const int cw = wg - 1;  // this warpgroup's 64 GEMM rows of the tile: m0 = 64 cw
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  float biasOf[16];
#pragma unroll
  for (int gq = 0; gq < 8; ++gq)
#pragma unroll
    for (int j = 0; j < 2; ++j) biasOf[2 * gq + j] = __bfloat162float(p.bias[8 * gq + 2 * (lane % 4) + j]);
  gd::mbarWait(filterFull, 0);
  const uint64_t descB0 = gd::smemDesc(filter, 16, 1024);
  int i = 0;
  for (int t = blockIdx.x; t < g.tiles; t += gridDim.x, ++i) {
    const int s = i & 1;
    gd::mbarWait(&full[s], (i >> 1) & 1);
    float acc[kK / 2];
    gd::wgmmaFence();
#pragma unroll
    for (int rs = 0; rs < kTaps; ++rs) {
      const int r = rs / 3, sc = rs % 3;
      const uint64_t descA = gd::smemDesc(patch[s] + (64 * cw + r * g.pitch + sc) * 128, 16, 1024);
      const uint64_t descB = descB0 + static_cast<uint64_t>(rs * kTapBytes / 16);
#pragma unroll
      for (int kk = 0; kk < kC / 16; ++kk)
        gd::mma16<__nv_bfloat16, kK, 0>(acc, descA + 2 * kk, descB + 2 * kk, (rs > 0 || kk > 0) ? 1 : 0);
    }
    gd::wgmmaCommit();
    gd::wgmmaWait<0>();
    gd::fenceRegs(acc);
    cuda::ptx::mbarrier_arrive(&empty[s]);
    int n, p0, q0;
    tileOf(t, n, p0, q0);
    // Accumulator layout of wgmma m64nNk16: group gq, half h holds row
    // 16 warp + lane / 4 + 8 h, columns 8 gq + 2 (lane % 4) + {0, 1}.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 64 * cw + 16 * warp + lane / 4 + 8 * h;
      const int pr = m / g.pitch, qc = m % g.pitch;
      const int pOut = p0 + pr, qOut = q0 + qc;
      if (pr >= g.T || qc >= g.Wt || pOut >= g.H || qOut >= g.W) continue;
      __nv_bfloat16* row = p.y + ((static_cast<int64_t>(n) * g.H + pOut) * g.W + qOut) * kK;
#pragma unroll
      for (int gq = 0; gq < 8; ++gq) {
        const int col = 8 * gq + 2 * (lane % 4);
        const float v0 = fmaxf(acc[4 * gq + 2 * h] + biasOf[2 * gq], 0.f);
        const float v1 = fmaxf(acc[4 * gq + 2 * h + 1] + biasOf[2 * gq + 1], 0.f);
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
  const cuuint64_t dims[4] = {kC, static_cast<cuuint64_t>(g.W), static_cast<cuuint64_t>(g.H),
                              static_cast<cuuint64_t>(g.N)};
  const cuuint64_t strides[3] = {kC * 2ull, kC * 2ull * g.W, kC * 2ull * g.W * g.H};
  const cuuint32_t box[4] = {kC, static_cast<cuuint32_t>(g.pitch), static_cast<cuuint32_t>(g.T + 2), 1};
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
  int H, W;
};

}  // namespace

int main(int argc, char** argv) {
  int iters = 50;
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    if (s == "--help" || s == "-h") {
      std::printf(
          "conv-patch: a prototype of the patch-once A loader for stride-1 3x3 convolutions of 64 channels\n"
          "(docs/conv.md): checks it against our conv2d and a float64 host product, then times both\n"
          "interleaved. Options: --iters N (timed runs per median, default 50).\n");
      return 0;
    }
    if (s == "--iters" && a + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++a]));
    } else {
      std::fprintf(stderr, "conv-patch: unknown argument '%s' (see --help)\n", s.c_str());
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("conv-patch: no CUDA GPU here; it needs a Hopper GPU (sm_90a)\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9) {
    std::printf("conv-patch: needs a Hopper GPU (sm_90a); found %s\n", prop.name);
    return 2;
  }
  const Shape shapes[] = {{"res56", 56, 56}, {"vgg224", 224, 224}, {"odd13", 13, 13}, {"wide130", 5, 130}};
  const int batches[] = {1, 4, 8, 16, 32};
  std::mt19937 rng(20261128);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> w(kK * kTaps * kC), bias(kK);
  for (auto& v : w) v = __float2bfloat16(dist(rng) / 24.f);
  for (auto& v : bias) v = __float2bfloat16(dist(rng) * 0.1f);
  __nv_bfloat16 *dW, *dBias;
  CUDA_OK(cudaMalloc(&dW, w.size() * 2));
  CUDA_OK(cudaMalloc(&dBias, bias.size() * 2));
  CUDA_OK(cudaMemcpy(dW, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dBias, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice));
  const CUtensorMap tmW = gd::makeTensorMap2D(dW, true, kTaps * kC, kK, 64, 64);
  CUDA_OK(cudaFuncSetAttribute(patchConvKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  bool allOk = true;
  std::printf("%s: conv 3x3 stride 1, C = K = 64, bias + ReLU; ms are medians of %d runs, interleaved\n", prop.name,
              iters);
  std::printf("shape     batch  tiles  T x Wt   patch_ms  conv2d_ms  conv2d/patch  max|patch-conv2d|  max|patch-host|\n");
  for (const Shape& sh : shapes)
    for (int N : batches) {
      if (sh.H * sh.W * N > 224 * 224 * 8 && sh.W == 224 && N > 8) continue;  // keep the sweep short
      const PatchGeometry g = PatchGeometry::of(N, sh.H, sh.W);
      const size_t xElems = static_cast<size_t>(N) * sh.H * sh.W * kC, yElems = xElems;
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
      ca.N = N, ca.H = sh.H, ca.W = sh.W, ca.C = kC, ca.K = kK;
      ca.x = dX, ca.w = dW, ca.y = dY2, ca.bias = dBias;
      ca.epilogue = cusync_conv::ConvEpilogue::BiasRelu;
      auto runPatch = [&] {
        patchConvKernel<<<blocks, 384, g.smemBytes(), stream>>>(pp);
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
        const int n = pick(rng) % N, kk = pick(rng) % kK;
        const int pOut = k % 4 == 0 ? 0 : k % 4 == 1 ? sh.H - 1 : pick(rng) % sh.H;
        const int qOut = k % 3 == 0 ? sh.W - 1 : pick(rng) % sh.W;
        double sum = bf(bias[kk]);
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const int h = pOut + r - 1, ww = qOut + s - 1;
            if (h < 0 || h >= sh.H || ww < 0 || ww >= sh.W) continue;
            const __nv_bfloat16* xp = &x[((static_cast<size_t>(n) * sh.H + h) * sh.W + ww) * kC];
            const __nv_bfloat16* wp = &w[(static_cast<size_t>(kk) * kTaps + r * 3 + s) * kC];
            for (int c = 0; c < kC; ++c) sum += static_cast<double>(bf(xp[c])) * bf(wp[c]);
          }
        const double ref = std::max(sum, 0.0);
        const double got = bf(y[((static_cast<size_t>(n) * sh.H + pOut) * sh.W + qOut) * kK + kk]);
        const double d = std::fabs(got - ref) / std::max(1.0, std::fabs(ref));
        diffHost = std::isnan(d) ? INFINITY : std::max(diffHost, d);
      }
      const bool ok = diffConv < 0.05 && diffHost < 0.02;
      allOk = allOk && ok;
      // Interleaved timing: patch, conv2d, patch, ...
      std::vector<float> tp, tc;
      for (int it = 0; it < iters + 5; ++it)
        for (int which = 0; which < 2; ++which) {
          CUDA_OK(cudaEventRecord(e0, stream));
          which == 0 ? runPatch() : runConv();
          CUDA_OK(cudaEventRecord(e1, stream));
          CUDA_OK(cudaEventSynchronize(e1));
          float ms = 0;
          CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
          if (it >= 5) (which == 0 ? tp : tc).push_back(ms);
        }
      std::sort(tp.begin(), tp.end());
      std::sort(tc.begin(), tc.end());
      const float mp = tp[tp.size() / 2], mc = tc[tc.size() / 2];
      std::printf("%-8s %6d %6d %3d x %-4d %9.4f %10.4f %13.3f %18.3g %16.3g%s\n", sh.name, N, g.tiles, g.T, g.Wt, mp,
                  mc, mc / mp, diffConv, diffHost, ok ? "" : "  WRONG");
      CUDA_OK(cudaFree(dX));
      CUDA_OK(cudaFree(dY));
      CUDA_OK(cudaFree(dY2));
    }
  std::printf("%s\n", allOk ? "every shape matches conv2d and the host product" : "some shape is WRONG");
  return allOk ? 0 : 1;
}
