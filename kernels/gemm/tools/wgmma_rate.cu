// wgmma-rate: how fast the GEMM kernel's mainloop can run on this GPU, per
// tile width, with nothing else in the way. One block per SM runs the
// kernel's ring protocol (full / empty mbarriers, one wgmma group in flight,
// 64-wide k-blocks, 128-byte swizzle descriptors) for a fixed number of
// k-blocks, and reports clocks per k-block:
//   mma:  the producer only signals the slots (no loads): wgmma alone;
//   l2:   each slot filled by bulk copies from a buffer that stays in L2;
//   dram: the same from a buffer 8x larger than L2.
// The values computed are not checked (no tile is stored): this measures
// rates, the kernel's tests measure correctness.
//
//   wgmma-rate [--kblocks N] [--widths 96,128,...] [--consumers 1|2|both]
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda/ptx>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.cuh"  // CUDA_OK, commaList, findHopper
#include "kernels/gemm/kernel/sm90.cuh"

namespace {

using cusync_gemm::detail::fenceRegs;
using cusync_gemm::detail::mbarWait;
using cusync_gemm::detail::mma16;
using cusync_gemm::detail::MovingDesc;
using cusync_gemm::detail::smemDesc;
using cusync_gemm::detail::wgmmaCommit;
using cusync_gemm::detail::wgmmaFence;
using cusync_gemm::detail::wgmmaWait;

constexpr int kSmemLimit = 227 * 1024;

template <int BN, int NC>
struct Layout {
  static constexpr int kA = NC * 64 * 128;  // NC x 64 rows of 64 bf16
  static constexpr int kB = BN * 128;
  static constexpr int kStage = (kA + kB + 1023) / 1024 * 1024;
  static constexpr int kStages = std::min(8, (kSmemLimit - 2048) / kStage);
  static constexpr int kBytes = kStages * kStage + 2 * kStages * 8 + 1024;
};

// mode 0: no loads; mode 1: bulk copies of each slot from src (srcBytes, a
// multiple of the stage size, walked so that blocks read different lines).
template <int BN, int NC>
__global__ void __launch_bounds__(128 * (NC + 1), 1)
    rateKernel(const unsigned char* src, size_t srcBytes, int mode, int kBlocks, unsigned long long* clocks,
               float* sink) {
#if CUSYNC_GEMM_SM90A
  using L = Layout<BN, NC>;
  constexpr int S = L::kStages;
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + S * L::kStage);
  uint64_t* empty = full + S;
  const int wg = threadIdx.x / 128;
  for (int i = threadIdx.x; i < S * L::kStage / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(smem)[i] = make_uint4(0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], NC);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x != 0) return;
    const size_t slots = srcBytes / L::kStage;
    size_t at = (static_cast<size_t>(blockIdx.x) * 7919u) % slots;
    int stage = 0;
    uint32_t phase = 0;
    for (int kb = 0; kb < kBlocks; ++kb) {
      mbarWait(&empty[stage], phase ^ 1);
      unsigned char* dst = smem + stage * L::kStage;
      if (mode == 0) {
        cuda::ptx::mbarrier_arrive(&full[stage]);
      } else {
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &full[stage], static_cast<uint32_t>(L::kA + L::kB));
        const unsigned char* from = src + at * L::kStage;
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, from,
                                 static_cast<uint32_t>(L::kA), &full[stage]);
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst + L::kA, from + L::kA,
                                 static_cast<uint32_t>(L::kB), &full[stage]);
        if (++at == slots) at = 0;
      }
      if (++stage == S) stage = 0, phase ^= 1;
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1;
    float acc[BN / 2];  // set by the first k-block's scale-d 0 (a zero fill here would serialize the wgmmas)
    int stage = 0;
    uint32_t phase = 0;
    int prev = -1;
    // The kernel's consumer form (kernel.cuh): descriptors built once, moved by constants.
    static_assert(L::kStage % 1024 == 0, "slots keep the 128-byte swizzle's 1 KiB alignment");
    const MovingDesc descA(smemDesc(smem + __shfl_sync(0xffffffffu, cw, 0) * 64 * 128, 16, 1024));
    const MovingDesc descB(smemDesc(smem + L::kA, 16, 1024));
    const unsigned long long t0 = clock64();
    for (int kb = 0; kb < kBlocks; ++kb) {
      mbarWait(&full[stage], phase);
      const uint32_t slot = static_cast<uint32_t>(stage * (L::kStage / 16));
      wgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        mma16<__nv_bfloat16, BN, 0>(acc, descA.plus(slot + kk * 2), descB.plus(slot + kk * 2), kb > 0 || kk > 0);
      wgmmaCommit();
      wgmmaWait<1>();
      if (prev >= 0 && threadIdx.x % 128 == 0) cuda::ptx::mbarrier_arrive(&empty[prev]);
      prev = stage;
      if (++stage == S) stage = 0, phase ^= 1;
    }
    wgmmaWait<0>();
    fenceRegs(acc);
    const unsigned long long t1 = clock64();
    if (threadIdx.x % 128 == 0) clocks[blockIdx.x * NC + cw] = t1 - t0;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) s += acc[i];
    if (s == 12345.f) sink[threadIdx.x] = s;  // keeps the accumulators live
  }
#endif
}

struct Row {
  int bn, nc, mode;
  double clkMedian, clkMax, usWall, tflops;
};

template <int BN, int NC>
Row measure(int mode, const unsigned char* src, size_t srcBytes, int kBlocks, int sms, unsigned long long* dClk,
            float* dSink) {
  using L = Layout<BN, NC>;
  auto k = rateKernel<BN, NC>;
  CUDA_OK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kBytes));
  const size_t usable = srcBytes / L::kStage * L::kStage;
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  std::vector<float> walls;
  std::vector<unsigned long long> clk(static_cast<size_t>(sms) * NC);
  for (int rep = 0; rep < 7; ++rep) {
    CUDA_OK(cudaEventRecord(e0));
    k<<<sms, 128 * (NC + 1), L::kBytes>>>(src, usable, mode, kBlocks, dClk, dSink);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(e1));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (rep > 0) walls.push_back(ms);
  }
  CUDA_OK(cudaMemcpy(clk.data(), dClk, clk.size() * sizeof(clk[0]), cudaMemcpyDeviceToHost));
  std::sort(clk.begin(), clk.end());
  std::sort(walls.begin(), walls.end());
  Row r;
  r.bn = BN;
  r.nc = NC;
  r.mode = mode;
  r.clkMedian = static_cast<double>(clk[clk.size() / 2]) / kBlocks;
  r.clkMax = static_cast<double>(clk.back()) / kBlocks;
  r.usWall = walls[walls.size() / 2] * 1e3;
  r.tflops = 2.0 * 64 * NC * BN * 64.0 * kBlocks * sms / (r.usWall * 1e-6) / 1e12;
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return r;
}

template <int NC>
bool runWidth(int bn, int mode, const unsigned char* src, size_t srcBytes, int kBlocks, int sms,
              unsigned long long* dClk, float* dSink, Row& out) {
  switch (bn) {
#define CASE(W)                                                             \
  case W:                                                                   \
    out = measure<W, NC>(mode, src, srcBytes, kBlocks, sms, dClk, dSink); \
    return true;
    CASE(64)
    CASE(96)
    CASE(128)
    CASE(144)
    CASE(168)
    CASE(176)
    CASE(192)
    CASE(256)
#undef CASE
    default:
      return false;
  }
}

void usage() {
  std::printf(
      "wgmma-rate: the GEMM mainloop's clocks per 64-wide k-block, per tile width, with no\n"
      "tile stores (one block per SM, the kernel's ring protocol and wgmma issue order).\n\n"
      "  --kblocks N        k-blocks per block (default 2048)\n"
      "  --widths LIST      tile widths (default 96,128,144,168,176,192,256; also 64)\n"
      "  --consumers 1|2|both  consumer warpgroups of 64 rows (default both)\n"
      "  --modes LIST       mma,l2,dram (default all): no loads / bulk copies from an\n"
      "                     L2-resident buffer / from a buffer 8x the L2\n"
      "  -h, --help         this text\n");
}

}  // namespace

int main(int argc, char** argv) {
  int kBlocks = 2048;
  std::vector<int> widths = {96, 128, 144, 168, 176, 192, 256};
  std::vector<int> ncs = {1, 2};
  std::vector<int> modes = {0, 1, 2};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "wgmma-rate: %s needs a value\n", a.c_str());
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--kblocks") {
      kBlocks = std::atoi(next().c_str());
      if (kBlocks < 8) {
        std::fprintf(stderr, "wgmma-rate: --kblocks must be >= 8\n");
        return 1;
      }
    } else if (a == "--widths") {
      widths.clear();
      for (auto& w : bench::commaList(next())) widths.push_back(std::atoi(w.c_str()));
    } else if (a == "--consumers") {
      std::string v = next();
      if (v == "1") ncs = {1};
      else if (v == "2") ncs = {2};
      else if (v == "both") ncs = {1, 2};
      else {
        std::fprintf(stderr, "wgmma-rate: --consumers takes 1, 2 or both\n");
        return 1;
      }
    } else if (a == "--modes") {
      modes.clear();
      for (auto& m : bench::commaList(next())) {
        if (m == "mma") modes.push_back(0);
        else if (m == "l2") modes.push_back(1);
        else if (m == "dram") modes.push_back(2);
        else {
          std::fprintf(stderr, "wgmma-rate: unknown mode '%s' (mma, l2, dram)\n", m.c_str());
          return 1;
        }
      }
    } else {
      std::fprintf(stderr, "wgmma-rate: unknown argument '%s' (--help lists them)\n", a.c_str());
      return 1;
    }
  }
  cudaDeviceProp prop{};
  if (const std::string why = bench::findHopper(&prop); !why.empty()) {
    std::printf("wgmma-rate: %s; nothing measured\n", why.c_str());
    return 0;
  }
  const int sms = prop.multiProcessorCount;
  const size_t l2Bytes = static_cast<size_t>(prop.l2CacheSize);
  const size_t smallBytes = l2Bytes / 4, bigBytes = l2Bytes * 8;
  unsigned char* src = nullptr;
  unsigned long long* dClk = nullptr;
  float* dSink = nullptr;
  CUDA_OK(cudaMalloc(&src, bigBytes));
  CUDA_OK(cudaMemset(src, 0x3c, bigBytes));  // bf16 0x3c3c ~ 1.0: finite values
  CUDA_OK(cudaMalloc(&dClk, sizeof(unsigned long long) * sms * 2));
  CUDA_OK(cudaMalloc(&dSink, sizeof(float) * 384));
  int clockKHz = 0;
  CUDA_OK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, 0));
  std::printf("device: %s, %d SMs, L2 %zu MiB; %d k-blocks per block\n", prop.name, sms, l2Bytes >> 20, kBlocks);
  std::printf("%-5s %5s %4s %10s %10s %10s %9s %12s\n", "mode", "tile", "wgs", "clk/kb", "clk/kb max", "us/launch",
              "TFLOP/s", "FMA/clk/SM");
  const char* names[] = {"mma", "l2", "dram"};
  for (int mode : modes) {
    for (int nc : ncs) {
      for (int w : widths) {
        Row r{};
        const size_t bytes = mode == 2 ? bigBytes : smallBytes;
        const bool ok = nc == 1 ? runWidth<1>(w, mode == 0 ? 0 : 1, src, bytes, kBlocks, sms, dClk, dSink, r)
                                : runWidth<2>(w, mode == 0 ? 0 : 1, src, bytes, kBlocks, sms, dClk, dSink, r);
        if (!ok) {
          std::fprintf(stderr, "wgmma-rate: width %d is not built (64, 96, 128, 144, 168, 176, 192, 256)\n", w);
          return 1;
        }
        std::printf("%-5s %2dx%-3d %4d %10.1f %10.1f %10.1f %9.1f %12.0f\n", names[mode], 64 * nc, w, nc,
                    r.clkMedian, r.clkMax, r.usWall, r.tflops, 64.0 * nc * w * 64 / r.clkMedian);
      }
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
  std::printf("wgmma-rate: done (clock attribute %d MHz)\n", clockKHz / 1000);
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFree(dClk));
  CUDA_OK(cudaFree(dSink));
  return 0;
}
