// wgmma-offset: whether the A operand of a wgmma may start at any 128-byte
// row of a 128-byte-swizzled shared-memory buffer rather than only at the
// start of an 8-row swizzle atom (1024 bytes), and what its descriptor must
// then say. The patch-once A loader sketched for stride-1 3x3 convolutions
// (docs/conv.md, next steps) keeps a tile's input patch in shared memory
// once and reads filter position (r, s) as the patch from row
// (p + r)(segment + 2) + s on: an arbitrary row.
//
// For every start row 0-23 it multiplies the 64 x 64 A that starts there
// (four k16 steps, the mainloop's descriptors and steps) by a 64 x 64 B,
// once with the descriptor's base-offset field (bits 49-51) left 0 and once
// set to the start's row within its atom ((address >> 7) & 7), and compares
// each product with the host's. Exit status 0 when every start row has an
// encoding that computes the right product, 1 otherwise.
//
//   wgmma-offset
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

#include "bench/bench_util.cuh"  // CUDA_OK, findHopper
#include "kernels/gemm/kernel/sm90.cuh"

namespace {

namespace gd = cusync_gemm::detail;  // the GEMM's sm_90a primitives (kernel/sm90.cuh)

constexpr int kARows = 96;  // start rows 0-23 plus 64 rows each, rounded to whole atoms
constexpr int kK = 64, kN = 64, kM = 64;
constexpr int kMaxStart = 24;

// Row r's 16-byte chunk j of a 128-byte-swizzled buffer that starts on a
// 1024-byte boundary (the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B).
__device__ __forceinline__ int swizzled(int r, int j) { return r * 128 + ((j ^ (r & 7)) * 16); }

// One warpgroup: C (64 x 64, fp32, row-major) = A[start .. start + 64) x B^T,
// A as [rows, 64] and B as [64 (N), 64 (K)], both K-major bf16.
__global__ void __launch_bounds__(128, 1)
    offsetKernel(const __nv_bfloat16* a, const __nv_bfloat16* b, int start, int encodeOffset, float* c) {
#if CUSYNC_GEMM_SM90A
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sA = smem;
  unsigned char* sB = smem + kARows * 128;
  const int t = threadIdx.x;
  for (int i = t; i < kARows * 8; i += 128)
    *reinterpret_cast<uint4*>(sA + swizzled(i / 8, i % 8)) = reinterpret_cast<const uint4*>(a)[i];
  for (int i = t; i < kN * 8; i += 128)
    *reinterpret_cast<uint4*>(sB + swizzled(i / 8, i % 8)) = reinterpret_cast<const uint4*>(b)[i];
  // The generic-proxy writes above, before the async proxy's wgmma reads.
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();

  const unsigned char* aStart = sA + start * 128;
  uint64_t descA = gd::smemDesc(aStart, 16, 1024);
  if (encodeOffset) {
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(aStart));
    descA |= static_cast<uint64_t>((addr >> 7) & 7) << 49;
  }
  const uint64_t descB = gd::smemDesc(sB, 16, 1024);
  float acc[kN / 2];
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.f;
  gd::wgmmaFence();
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk)  // a k16 step: 32 bytes along the rows of A and of B
    gd::mma16<__nv_bfloat16, kN, 0>(acc, descA + 2 * kk, descB + 2 * kk, kk > 0 ? 1 : 0);
  gd::wgmmaCommit();
  gd::wgmmaWait<0>();
  gd::fenceRegs(acc);
  // The accumulator layout of wgmma m64nNk16: group g, half h holds row
  // 16 warp + lane / 4 + 8 h, columns 8 g + 2 (lane % 4) + {0, 1}.
  const int warp = t / 32, lane = t % 32;
  for (int g = 0; g < kN / 8; ++g)
    for (int h = 0; h < 2; ++h) {
      const int row = 16 * warp + lane / 4 + 8 * h, col = 8 * g + 2 * (lane % 4);
      c[row * kN + col] = acc[4 * g + 2 * h];
      c[row * kN + col + 1] = acc[4 * g + 2 * h + 1];
    }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::printf(
        "wgmma-offset: checks whether a wgmma A operand may start at any row of a 128-byte-swizzled buffer, with\n"
        "the descriptor's base-offset field left 0 or set to the row within its 8-row atom. No options.\n");
    return argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") ? 0 : 2;
  }
  cudaDeviceProp prop{};
  if (const std::string why = bench::findHopper(&prop); !why.empty()) {
    std::printf("wgmma-offset: %s; it needs a Hopper GPU (sm_90a)\n", why.c_str());
    return 2;
  }
  std::mt19937 rng(20261128);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<__nv_bfloat16> a(kARows * kK), b(kN * kK);
  for (auto& x : a) x = __float2bfloat16(dist(rng));
  for (auto& x : b) x = __float2bfloat16(dist(rng));
  __nv_bfloat16 *dA, *dB;
  float* dC;
  CUDA_OK(cudaMalloc(&dA, a.size() * sizeof(a[0])));
  CUDA_OK(cudaMalloc(&dB, b.size() * sizeof(b[0])));
  CUDA_OK(cudaMalloc(&dC, kM * kN * sizeof(float)));
  CUDA_OK(cudaMemcpy(dA, a.data(), a.size() * sizeof(a[0]), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dB, b.data(), b.size() * sizeof(b[0]), cudaMemcpyHostToDevice));
  const int smem = (kARows + kN) * 128 + 1024;
  CUDA_OK(cudaFuncSetAttribute(offsetKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<float> c(kM * kN);
  bool allFound = true;
  std::printf("%s: max |error| of the 64 x 64 x 64 product, A from start row s\n", prop.name);
  std::printf("start  base offset 0       base offset (addr >> 7) & 7\n");
  std::vector<double> ref(kM * kN);
  for (int start = 0; start < kMaxStart; ++start) {
    // The host's product for this start row, which both encodings must compute.
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) {
        double sum = 0;
        for (int k = 0; k < kK; ++k)
          sum += static_cast<double>(__bfloat162float(a[(start + m) * kK + k])) * __bfloat162float(b[n * kK + k]);
        ref[m * kN + n] = sum;
      }
    double err[2];
    for (int enc = 0; enc < 2; ++enc) {
      CUDA_OK(cudaMemset(dC, 0xff, kM * kN * sizeof(float)));  // NaN until written
      offsetKernel<<<1, 128, smem>>>(dA, dB, start, enc, dC);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(c.data(), dC, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
      double worst = 0;
      for (int i = 0; i < kM * kN; ++i) {
        const double e = std::fabs(ref[i] - c[i]);
        worst = std::isnan(e) ? INFINITY : std::max(worst, e);
      }
      err[enc] = worst;
    }
    constexpr double kTol = 1e-3;  // fp32 accumulation of 64 bf16 products of magnitude <= 1
    std::printf("%5d  %-8s %9.2e    %-8s %9.2e\n", start, err[0] < kTol ? "right" : "WRONG", err[0],
                err[1] < kTol ? "right" : "WRONG", err[1]);
    allFound = allFound && (err[0] < kTol || err[1] < kTol);
  }
  CUDA_OK(cudaFree(dA));
  CUDA_OK(cudaFree(dB));
  CUDA_OK(cudaFree(dC));
  std::printf("%s\n", allFound ? "every start row has an encoding that computes the right product"
                               : "some start row computes a wrong product with both encodings");
  return allFound ? 0 : 1;
}
