// weight-stream: how fast blocks can stream a weight matrix out of DRAM
// through TMA tile loads, in the GEMM's pattern, with nothing else in the way
// (no MMA, no A operand, no stores). A small-M GEMM is bound by this stream,
// so this is its ceiling, by the choices the GEMM makes:
//   blocks   how many blocks stream at once (one 64-row tile per block: the
//            tile count times the split parts);
//   rows     rows of B per load (the tile's width: 64 ... 256);
//   kboxes   64-wide k-boxes per ring slot (1: the GEMM's 128 bytes of each
//            row per load; 2 or 4: 256 or 512 contiguous bytes of a row);
//   slots    ring slots, so slots x rows x 128 x kboxes bytes in flight;
//   promo    the tensor map's L2 promotion (none, 64, 128, 256 bytes);
//   hint     the loads' L2 policy (normal, or evict-first as the GEMM's B);
//   hold     clocks a consumer keeps each slot before freeing it (the MMAs);
//   placement  where the streaming blocks run: as the GPU places the grid,
//            or on chosen SMs (one per TPC first, or both SMs of a TPC).
// Each block walks units of (row band, k part) along K, units dealt out round
// robin; a "linear" line reads the same bytes with 1-D bulk copies of
// contiguous chunks, the reference rate of this GPU. Every option takes a
// comma list; the lines are their product.
//
//   weight-stream [--shape N,K] [--blocks L] [--rows L] [--kboxes L] [--slots L]
//                 [--promo L] [--hint L] [--hold L] [--placement L] [--tpc-map] [--reps N]
//
// Exit status 0 when it measured (or found no Hopper GPU: it says so), 1 on
// a CUDA error, 2 on bad usage.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda/ptx>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_util.cuh"  // CUDA_OK, commaList, findHopper
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/kernel/sm90.cuh"

namespace {

namespace gd = cusync_gemm::detail;

constexpr int kSmemLimit = 227 * 1024;
constexpr int kBarrierBytes = 1024;

struct StreamParams {
  CUtensorMap map;          // [N, K] bf16, box {64, rows}
  CUtensorMap mapA;         // [aRows, K] bf16, box {64, aRows}: the GEMM's A, read from L2 by every block
  int aRows;
  const unsigned char* src;  // the same bytes, for linear copies
  int bands, parts, kBlocksPerPart, rows, kBoxes, slots;
  int linear, evictFirst;
  int placement, active;  // 0: the grid's blocks as placed; 1, 2: one block per SM, active by rank of SM
  int sms;
  long long holdClocks;
  unsigned int* sink;
};

__global__ void __launch_bounds__(64, 1) streamKernel(const __grid_constant__ StreamParams p) {
#if CUSYNC_GEMM_SM90A
  extern __shared__ __align__(1024) unsigned char raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
  const int slotBytes = (p.rows + p.aRows) * 128 * p.kBoxes;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + p.slots * slotBytes);
  uint64_t* empty = full + p.slots;
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.slots; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], 1);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  // Which blocks stream: all of the grid, or `active` of the blocks on one
  // SM each, ranked by SM: spread ranks first SMs of the TPCs (even SM ids)
  // before the second ones, pairs ranks by SM id.
  int me = static_cast<int>(blockIdx.x);
  if (p.placement != 0) {
    const int sm = static_cast<int>(gd::smId());
    me = p.placement == 1 ? (sm % 2) * ((p.sms + 1) / 2) + sm / 2 : sm;
    if (me >= p.active) return;
  }
  const int stride = p.placement != 0 ? p.active : static_cast<int>(gridDim.x);
  const int units = p.bands * p.parts;
  const int steps = p.kBlocksPerPart / p.kBoxes;
  if (threadIdx.x == 0) {
    const uint64_t policy = p.evictFirst ? gd::evictFirstPolicy() : 0;
    int stage = 0;
    uint32_t phase = 0;
    for (int u = me; u < units; u += stride) {
      const int band = u / p.parts, part = u % p.parts;
      for (int step = 0; step < steps; ++step) {
        gd::mbarWait(&empty[stage], phase ^ 1);
        unsigned char* dst = smem + stage * slotBytes;
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &full[stage], static_cast<uint32_t>(slotBytes));
        const int kb0 = part * p.kBlocksPerPart + step * p.kBoxes;
        if (p.linear) {
          // The unit's bytes as one contiguous range, slot by slot.
          const size_t unitBytes = static_cast<size_t>(p.rows) * 128 * p.kBlocksPerPart;
          const unsigned char* from = p.src + static_cast<size_t>(u) * unitBytes + static_cast<size_t>(step) * slotBytes;
          cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, from,
                                   static_cast<uint32_t>(slotBytes), &full[stage]);
        } else {
          for (int j = 0; j < p.kBoxes; ++j) {
            const int32_t c[2] = {(kb0 + j) * 64, band * p.rows};
            if (p.aRows > 0) {
              const int32_t ca[2] = {(kb0 + j) * 64, 0};
              cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                              dst + p.kBoxes * p.rows * 128 + j * p.aRows * 128, &p.mapA, ca,
                                              &full[stage]);
            }
            if (p.evictFirst)
              gd::tmaLoadHinted(dst + j * p.rows * 128, &p.map, c, &full[stage], policy);
            else
              cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                              dst + j * p.rows * 128, &p.map, c, &full[stage]);
          }
        }
        if (++stage == p.slots) stage = 0, phase ^= 1;
      }
    }
  } else if (threadIdx.x == 32) {
    int stage = 0;
    uint32_t phase = 0;
    unsigned int acc = 0;
    for (int u = me; u < units; u += stride) {
      for (int step = 0; step < steps; ++step) {
        gd::mbarWait(&full[stage], phase);
        acc += *reinterpret_cast<const unsigned int*>(smem + stage * slotBytes);
        if (p.holdClocks > 0) {
          const long long t0 = clock64();
          while (clock64() - t0 < p.holdClocks) {
          }
        }
        cuda::ptx::mbarrier_arrive(&empty[stage]);
        if (++stage == p.slots) stage = 0, phase ^= 1;
      }
    }
    if (acc == 0x12345678u) p.sink[blockIdx.x] = acc;  // keeps the reads
  }
#endif
}

// Where the two blocks of each 2-block cluster run: a cluster sits on one
// TPC, so this shows which SM ids share a TPC.
__global__ void __cluster_dims__(2, 1, 1) tpcMapKernel(int* sm) {
  if (threadIdx.x == 0) sm[blockIdx.x] = static_cast<int>(gd::smId());
}

struct Line {
  int blocks, rows, kBoxes, slots, promo, evictFirst, linear, placement, aRows;
  long long hold;
};

CUtensorMapL2promotion promoOf(int bytes) {
  switch (bytes) {
    case 0:
      return CU_TENSOR_MAP_L2_PROMOTION_NONE;
    case 64:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case 128:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    default:
      return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
}

// The matrix [n, k] as the GEMM maps B (cusync_gemm's makeTensorMap2D), box
// {64, rows}, with L2 promotion `promo` (bytes).
CUtensorMap weightMap(const void* base, uint64_t n, uint64_t k, uint32_t rows, int promo) {
  try {
    return gd::makeTensorMap2D(base, true, k, n, 64, rows, promoOf(promo));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weight-stream: %s\n", e.what());
    std::exit(1);
  }
}

std::vector<int> intList(const std::string& flag, const std::string& v) {
  std::vector<int> out;
  for (const std::string& s : bench::commaList(v)) {
    char* end = nullptr;
    const long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || x < 0) {
      std::fprintf(stderr, "weight-stream: %s takes non-negative integers, not '%s'\n", flag.c_str(), s.c_str());
      std::exit(2);
    }
    out.push_back(static_cast<int>(x));
  }
  return out;
}

// intList, each value passing `ok`; else "FLAG takes TAKES" and exit 2.
std::vector<int> intListWhere(const std::string& flag, const std::string& v, bool (*ok)(int), const char* takes) {
  std::vector<int> out = intList(flag, v);
  for (int x : out)
    if (!ok(x)) {
      std::fprintf(stderr, "weight-stream: %s takes %s\n", flag.c_str(), takes);
      std::exit(2);
    }
  return out;
}

void usage() {
  std::printf(
      "weight-stream: the read rate of a weight matrix [N, K] (bf16) streamed through TMA\n"
      "tile loads in the GEMM's pattern, without MMAs; every option takes a comma list and\n"
      "the lines are their product (a 'linear' line per block count reads the same bytes\n"
      "as contiguous 1-D bulk copies).\n\n"
      "  --shape N,K     the matrix (default 6144,12288: gpt3-mlp1's weights, 151 MB)\n"
      "  --blocks L      blocks streaming at once (default 48,96,132; 0 = one per SM)\n"
      "  --rows L        rows of B per load, 64..256 (default 128)\n"
      "  --kboxes L      64-wide k-boxes per ring slot (default 1,2)\n"
      "  --slots L       ring slots (default 4,8,12; lines over 227 KiB are skipped)\n"
      "  --promo L       L2 promotion in bytes: 0,64,128,256 (default 256,0)\n"
      "  --hint L        normal,first: the loads' L2 policy (default first,normal)\n"
      "  --hold L        clocks the consumer keeps a slot (default 0)\n"
      "  --placement L   hw,spread,pairs: the grid's blocks where the GPU puts them (hw), or a\n"
      "                  block on every SM of which the first blocks count (by rank of SM:\n"
      "                  spread, even SM ids first; pairs, by SM id) (default hw)\n"
      "  --a-rows L      rows of an A operand (L2-resident, as the GEMM's) loaded with each\n"
      "                  k-box (default 0: B alone; its bytes are not counted in TB/s)\n"
      "  --tpc-map       first print the SM ids of each 2-block cluster (one TPC each)\n"
      "  --reps N        timed launches per line, median (default 7)\n"
      "  -h, --help      this text\n");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t N = 6144, K = 12288;
  std::vector<int> blocksList = {48, 96, 132}, rowsList = {128}, kboxList = {1, 2}, slotList = {4, 8, 12},
                   promoList = {256, 0}, hintList = {1, 0}, holdList = {0};
  std::vector<int> placeList = {0}, aRowsList = {0};
  bool tpcMap = false;
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weight-stream: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--shape") {
      const std::vector<int> v = intList(a, next());
      if (v.size() != 2 || v[0] < 256 || v[1] < 512 || v[0] % 256 != 0 || v[1] % 512 != 0) {
        std::fprintf(stderr, "weight-stream: --shape takes N,K with N a multiple of 256 and K of 512\n");
        return 2;
      }
      N = static_cast<uint64_t>(v[0]);
      K = static_cast<uint64_t>(v[1]);
    } else if (a == "--blocks") {
      blocksList = intList(a, next());
    } else if (a == "--rows") {
      rowsList = intListWhere(a, next(), [](int r) { return r >= 8 && r <= 256 && r % 8 == 0; },
                              "multiples of 8 from 8 to 256");
    } else if (a == "--kboxes") {
      kboxList = intListWhere(a, next(), [](int b) { return b == 1 || b == 2 || b == 4 || b == 8; }, "1, 2, 4 or 8");
    } else if (a == "--slots") {
      slotList = intListWhere(a, next(), [](int n) { return n >= 1 && n <= 64; }, "1 to 64");
    } else if (a == "--promo") {
      promoList = intListWhere(a, next(), [](int p) { return p == 0 || p == 64 || p == 128 || p == 256; },
                               "0, 64, 128 or 256");
    } else if (a == "--hint") {
      hintList.clear();
      for (const std::string& h : bench::commaList(next())) {
        if (h == "first") hintList.push_back(1);
        else if (h == "normal") hintList.push_back(0);
        else {
          std::fprintf(stderr, "weight-stream: --hint takes normal or first, not '%s'\n", h.c_str());
          return 2;
        }
      }
    } else if (a == "--placement") {
      placeList.clear();
      for (const std::string& v : bench::commaList(next())) {
        if (v == "hw") placeList.push_back(0);
        else if (v == "spread") placeList.push_back(1);
        else if (v == "pairs") placeList.push_back(2);
        else {
          std::fprintf(stderr, "weight-stream: --placement takes hw, spread or pairs, not '%s'\n", v.c_str());
          return 2;
        }
      }
    } else if (a == "--a-rows") {
      aRowsList = intListWhere(a, next(), [](int r) { return r <= 256 && r % 8 == 0; }, "multiples of 8 up to 256");
    } else if (a == "--tpc-map") {
      tpcMap = true;
    } else if (a == "--hold") {
      holdList = intList(a, next());
    } else if (a == "--reps") {
      const std::vector<int> v = intList(a, next());
      if (v.size() != 1 || v[0] < 1) {
        std::fprintf(stderr, "weight-stream: --reps takes one positive count\n");
        return 2;
      }
      reps = v[0];
    } else {
      std::fprintf(stderr, "weight-stream: unknown argument '%s' (--help lists them)\n", a.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop{};
  if (const std::string why = bench::findHopper(&prop); !why.empty()) {
    std::printf("weight-stream: %s; nothing measured\n", why.c_str());
    return 0;
  }
  const int sms = prop.multiProcessorCount;
  const size_t bytes = N * K * 2;
  // Two copies, alternated, each larger than L2 where the shape is: a launch
  // finds none of its bytes left in L2 by the launch before.
  const int copies = bytes >= static_cast<size_t>(prop.l2CacheSize) ? 2 : 1;
  if (copies == 1)
    std::printf("weight-stream: note: %zu MB fits the %d MB L2; the rates include L2 hits\n", bytes >> 20,
                prop.l2CacheSize >> 20);
  std::vector<unsigned char*> src(copies);
  for (auto& s : src) {
    CUDA_OK(cudaMalloc(&s, bytes));
    CUDA_OK(cudaMemset(s, 0x3c, bytes));
  }
  // The A operand: 256 rows of K, small enough to stay in L2.
  unsigned char* aSrc = nullptr;
  CUDA_OK(cudaMalloc(&aSrc, 256 * K * 2));
  CUDA_OK(cudaMemset(aSrc, 0x3c, 256 * K * 2));
  unsigned int* sink = nullptr;
  CUDA_OK(cudaMalloc(&sink, sizeof(unsigned int) * 4096));
  CUDA_OK(cudaFuncSetAttribute(streamKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemLimit));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  std::printf("device: %s, %d SMs, L2 %d MB; matrix %llu x %llu bf16 (%.1f MB), %d copies\n", prop.name, sms,
              prop.l2CacheSize >> 20, static_cast<unsigned long long>(N), static_cast<unsigned long long>(K),
              bytes / 1e6, copies);
  std::printf("%-7s %-6s %6s %5s %5s %6s %5s %9s %5s %6s %6s %10s %8s\n", "mode", "place", "blocks", "rows", "arows", "kboxes", "slots",
              "inflight", "promo", "hint", "hold", "us", "TB/s");
  auto run = [&](const Line& l) {
    const int slotBytes = (l.rows + (l.linear ? 0 : l.aRows)) * 128 * l.kBoxes;
    int smem = l.slots * slotBytes + kBarrierBytes + 1024;
    if (smem > kSmemLimit) return;
    // A block per SM where blocks are ranked by SM: more shared memory than
    // half an SM's keeps a second block off it.
    if (l.placement != 0) smem = std::max(smem, kSmemLimit / 2 + 1024);
    const uint64_t kBlocks = K / 64;
    // Parts along K so that the units cover the blocks (rounded to whole k-box groups).
    const int bands = static_cast<int>(N / static_cast<uint64_t>(l.rows));
    auto splitsEvenly = [&](uint64_t n) { return kBlocks % n == 0 && kBlocks / n % l.kBoxes == 0; };
    uint64_t parts = static_cast<uint64_t>(std::max(1, (l.blocks + bands - 1) / bands));
    while (parts <= kBlocks && !splitsEvenly(parts)) ++parts;
    if (parts > kBlocks || N % static_cast<uint64_t>(l.rows) != 0) return;
    std::vector<StreamParams> ps(copies);
    for (int c = 0; c < copies; ++c) {
      StreamParams& p = ps[c];
      p.map = weightMap(src[c], N, K, static_cast<uint32_t>(l.rows), l.promo);
      p.src = src[c];
      p.bands = bands;
      p.parts = static_cast<int>(parts);
      p.kBlocksPerPart = static_cast<int>(kBlocks / parts);
      p.rows = l.rows;
      p.kBoxes = l.kBoxes;
      p.slots = l.slots;
      p.linear = l.linear;
      p.evictFirst = l.evictFirst;
      p.holdClocks = l.hold;
      p.placement = l.placement;
      p.aRows = l.linear ? 0 : l.aRows;
      if (p.aRows > 0) p.mapA = weightMap(aSrc, static_cast<uint64_t>(p.aRows), K, static_cast<uint32_t>(p.aRows), 256);
      p.active = l.blocks;
      p.sms = sms;
      p.sink = sink;
    }
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
      CUDA_OK(cudaEventRecord(e0));
      streamKernel<<<l.placement != 0 ? sms : l.blocks, 64, smem>>>(ps[r % copies]);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaEventRecord(e1));
      CUDA_OK(cudaEventSynchronize(e1));
      float t = 0;
      CUDA_OK(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[ms.size() / 2] * 1e3;
    const double read = static_cast<double>(bands) * l.rows * 128.0 * static_cast<double>(kBlocks);
    const char* placeNames[] = {"hw", "spread", "pairs"};
    std::printf("%-7s %-6s %6d %5d %5d %6d %5d %8dK %5d %6s %6lld %10.1f %8.2f\n", l.linear ? "linear" : "tensor",
                placeNames[l.placement], l.blocks, l.rows, l.linear ? 0 : l.aRows, l.kBoxes, l.slots, l.slots * slotBytes / 1024, l.promo, l.evictFirst ? "first" : "normal",
                l.hold, us, read / (us * 1e-6) / 1e12);
    std::fflush(stdout);
  };
  if (tpcMap) {
    int* dSm = nullptr;
    CUDA_OK(cudaMalloc(&dSm, sizeof(int) * sms));
    const int clusters = sms / 2;
    tpcMapKernel<<<clusters * 2, 32>>>(dSm);
    CUDA_OK(cudaGetLastError());
    std::vector<int> h(static_cast<size_t>(clusters) * 2);
    CUDA_OK(cudaMemcpy(h.data(), dSm, sizeof(int) * h.size(), cudaMemcpyDeviceToHost));
    int evenOdd = 0;
    std::printf("TPCs (SM ids of each 2-block cluster):");
    for (int c = 0; c < clusters; ++c) {
      std::printf(" %d/%d", h[2 * c], h[2 * c + 1]);
      if ((h[2 * c] ^ 1) == h[2 * c + 1]) ++evenOdd;
    }
    std::printf("\n%d of %d clusters on SM ids 2k and 2k + 1\n", evenOdd, clusters);
    CUDA_OK(cudaFree(dSm));
  }
  for (int b : blocksList) {
    const int blocks = b == 0 ? sms : b;
    for (int place : placeList)
      for (int hold : holdList) {
        run(Line{blocks, 128, 1, 8, 256, 0, 1, place, 0, hold});
        for (int rows : rowsList)
          for (int kb : kboxList)
            for (int slots : slotList)
              for (int promo : promoList)
                for (int hint : hintList)
                  for (int aRows : aRowsList) run(Line{blocks, rows, kb, slots, promo, hint, 0, place, aRows, hold});
      }
  }
  CUDA_OK(cudaDeviceSynchronize());
  std::printf("weight-stream: done\n");
  for (auto& s : src) CUDA_OK(cudaFree(s));
  CUDA_OK(cudaFree(sink));
  CUDA_OK(cudaFree(aSrc));
  return 0;
}
