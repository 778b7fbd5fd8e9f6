// cusync-bench gemm: our Hopper GEMM and cuBLASLt side by side in one process.
// Median of per-launch event timings after warm-up; operands rotate among
// copies so that the working set exceeds L2; random data; error against an
// fp32 reference on a sample of rows.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_gemm.h"
#include "bench_output.h"
#include "bench_util.cuh"
#include "kernels/baseline/cublaslt_gemm.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp.h"
#include "kernels/testing/activation_ref.h"

using namespace cusync_gemm;

namespace {


struct Shape {
  const char* name;
  int64_t N, K;
};
const Shape kShapes[] = {
    {"gpt3-mlp1", 6144, 12288},  {"gpt3-mlp2", 12288, 6144}, {"llama-mlp1", 5504, 8192}, {"llama-mlp2", 8192, 2752},
    {"gpt3-qkv", 4608, 12288},   {"gpt3-wo", 12288, 1536},   {"llama-qkv", 3072, 8192},  {"llama-wo", 8192, 1024},
};

__global__ void fillRandom(__nv_bfloat16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    const float u = (float)(x >> 40) / (float)(1u << 24) * 2.f - 1.f;
    p[i] = __float2bfloat16(u * scale);
  }
}

// The check: the largest error on the sampled rows over the largest reference
// value; bf16 rounding of the result alone gives up to 2^-8.
constexpr double kMaxErr = 2e-2;

// Output n of a reference row d (N pre-activation values) under epilogue e
// (Identity, Gelu, or SwiGLU over gate/up columns interleaved in blocks of 8).
double epilogueRef(Epilogue e, const float* d, int64_t n) {
  const uint32_t j = static_cast<uint32_t>(n);
  switch (e) {
    case Epilogue::Gelu: return cusync_testing::gelu(d[n]);
    case Epilogue::SwiGLU:
      return cusync_testing::silu(d[swigluInterleavedRow(j, false)]) * d[swigluInterleavedRow(j, true)];
    default: return d[n];
  }
}

// Reference rows: D[r][n] = sum_k A[rows[r]][k] * B[n][k] in fp32.
__global__ void refRows(const __nv_bfloat16* A, const __nv_bfloat16* B, const int* rows, float* D, int R, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y;
  if (n >= N || r >= R) return;
  const __nv_bfloat16* a = A + (size_t)rows[r] * K;
  const __nv_bfloat16* b = B + (size_t)n * K;
  float s = 0.f;
  for (int k = 0; k < K; ++k) s += __bfloat162float(a[k]) * __bfloat162float(b[k]);
  D[(size_t)r * N + n] = s;
}

}  // namespace

std::vector<std::string> gemmBenchShapes() {
  std::vector<std::string> names;
  for (const Shape& sh : kShapes) names.push_back(sh.name);
  return names;
}

std::vector<std::string> gemmBenchConfigs() {
  std::vector<std::string> names = {toString(TileConfig::Auto)};
  for (const TileConfigRow& r : kTileConfigs)
    if (runsAsGemm(r.config)) names.push_back(r.name);
  return names;
}

int benchGemm(const GemmBenchOptions& o) {
  // The command line checked the names; here they become shapes and configurations.
  std::vector<Shape> shapes;
  for (const Shape& sh : kShapes)
    if (o.shapes.empty() || std::find(o.shapes.begin(), o.shapes.end(), sh.name) != o.shapes.end()) shapes.push_back(sh);
  std::vector<TileConfig> cfgs;
  for (const std::string& c : o.configs) cfgs.push_back(parseTileConfig(c.c_str()));
  const std::vector<int64_t>& ms = o.ms;
  const std::vector<int>& splits = o.splits;
  const int iters = o.iters;
  const std::string& csv = o.csv;
  const bool traceStats = o.trace;
  const Epilogue epilogue = o.epilogue == "gelu"     ? Epilogue::Gelu
                            : o.epilogue == "swiglu" ? Epilogue::SwiGLU
                                                     : Epilogue::Identity;
  cudaDeviceProp prop{};
  if (!bench::commandFindsHopper("gemm", &prop)) return 3;
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  std::ofstream out(csv);
  out << bench::csvRow({"shape", "M", "N", "K", "config", "ours_ms", "cublas_ms", "ours_tflops", "cublas_tflops",
                        "ratio", "ours_err", "cublas_err", "ours_host_us", "cublas_host_us", "cublas_algo", "epilogue"})
      << std::flush;
  if (!out) {
    std::fprintf(stderr, "cusync-bench gemm: cannot write %s: %s\n", csv.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("%-11s %5s %6s %6s %10s %9s %9s %8s %8s %7s %9s %9s %6s %6s\n", "shape", "M", "N", "K", "config",
              "ours_ms", "cublas_ms", "ours_TF", "cublas_TF", "ratio", "ours_err", "cublas_err", "host", "hostC");
  std::printf("  (last column: cuBLASLt's algorithm id, tile in its column-major terms, cluster, split-K)\n");
  if (epilogue != Epilogue::Identity)
    std::printf("  epilogue: %s on both sides%s\n", o.epilogue.c_str(),
                epilogue == Epilogue::SwiGLU ? " (N gate/up columns -> N / 2 outputs; cuBLAS: GEMM, then the MLP's "
                                               "SwiGLU kernel)"
                                             : " (cuBLASLt's GELU epilogue)");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cusync_baseline::LtContext lt;
  const size_t l2 = prop.l2CacheSize;
  int misses = 0, overRound = 0, wrong = 0;
  for (const Shape& sh : shapes)
    for (int64_t M : ms) {
      const int64_t N = sh.N, K = sh.K;
      const int64_t nOut = epilogue == Epilogue::SwiGLU ? N / 2 : N;  // output columns
      const size_t aBytes = M * K * 2, bBytes = N * K * 2, cBytes = M * nOut * 2;
      const size_t setBytes = aBytes + bBytes + cBytes;
      const int copies = (int)std::min<size_t>(8, std::max<size_t>(1, (3 * l2 + setBytes - 1) / setBytes));
      std::vector<void*> A(copies), B(copies), C(copies), C2(copies);
      for (int c = 0; c < copies; ++c) {
        CUDA_OK(cudaMalloc(&A[c], aBytes));
        CUDA_OK(cudaMalloc(&B[c], bBytes));
        CUDA_OK(cudaMalloc(&C[c], cBytes));
        CUDA_OK(cudaMalloc(&C2[c], cBytes));
        fillRandom<<<1024, 256, 0, s>>>((__nv_bfloat16*)A[c], M * K, 1000 + c, 1.f);
        fillRandom<<<1024, 256, 0, s>>>((__nv_bfloat16*)B[c], N * K, 2000 + c, 1.f);
        CUDA_OK(cudaMemsetAsync(C[c], 0xFF, cBytes, s));
        CUDA_OK(cudaMemsetAsync(C2[c], 0xFF, cBytes, s));
      }
      const cusync_baseline::LtGemm plan(
          lt, M, N, K,
          epilogue == Epilogue::Gelu ? cusync_baseline::LtEpilogue::Gelu : cusync_baseline::LtEpilogue::None);
      // SwiGLU after cuBLAS: the GEMM's [M, N] goes through one scratch buffer.
      void* gateUp = nullptr;
      if (epilogue == Epilogue::SwiGLU) CUDA_OK(cudaMalloc(&gateUp, size_t(M) * N * 2));
      auto cub = [&](int i) {
        if (epilogue == Epilogue::SwiGLU) {
          plan.run(A[i % copies], B[i % copies], gateUp, s);
          cusync_mlp::swiglu(gateUp, C2[i % copies], M, N, s);
        } else {
          plan.run(A[i % copies], B[i % copies], C2[i % copies], s);
        }
      };
      for (TileConfig cfg : cfgs)
      for (int splitK : splits)
      for (int groups : o.kCutGroups) {
      GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.config = cfg, g.splitK = splitK, g.kCutGroups = groups;
      g.epilogue = epilogue;
      // Part and group counts only vary the configurations they apply to (auto may resolve to one).
      if (splitK != splits.front() && cfg != TileConfig::Auto && !splitsK(cfg)) continue;
      if (groups != o.kCutGroups.front() && cfg != TileConfig::Auto && scheduleOf(cfg) != Schedule::KCut) continue;
      const TileConfig used = resolveConfig(g, prop.multiProcessorCount, LaunchContext::Standalone);
      // Split configurations print their tile and part count: 64x128/s2, 128x192/t3;
      // KCut configurations their group count: 128x192/g33.
      std::string usedName = toString(used);
      const TileShape ts = tileShape(used);
      const std::string tileName = std::to_string(ts.bm) + "x" + std::to_string(ts.bn);
      if (scheduleOf(used) == Schedule::KCut)
        usedName = tileName + "/g" + std::to_string(kCutGroups(g, used, prop.multiProcessorCount));
      if (splitsK(used))
        usedName = tileName + (scheduleOf(used) == Schedule::TailSplit ? "/t" : "/s") +
                   std::to_string(splitCount(g, used, prop.multiProcessorCount));
      auto ours = [&](int i) {
        GemmArgs a = g;
        a.A = A[i % copies], a.B = B[i % copies], a.C = C[i % copies];
        gemm(a, s);
      };
      CUDA_OK(cudaMemsetAsync(C[0], 0xFF, cBytes, s));  // poison: the check below reads what this config wrote
      // Interleaved run by run, so that both see the same clock states.
      const bench::Timings t = bench::interleavedMediansMs({ours, cub}, iters, s, 10);
      for (const std::string& e : t.errors)
        if (!e.empty()) throw std::runtime_error(e);
      const double tOurs = t.ms[0], tCub = t.ms[1];
      const double hostOurs = bench::hostUsPerLaunch(ours, iters, s), hostCub = bench::hostUsPerLaunch(cub, iters, s);
      CUDA_OK(cudaGetLastError());
      // Error on a sample of rows of copy 0 (both wrote it during warm-up).
      const int R = (int)std::min<int64_t>(M, 64);
      std::vector<int> rows(R);
      for (int r = 0; r < R; ++r) rows[r] = (int)((int64_t)r * (M - 1) / std::max(1, R - 1));
      int* dRows;
      float* dD;
      CUDA_OK(cudaMalloc(&dRows, R * sizeof(int)));
      CUDA_OK(cudaMalloc(&dD, (size_t)R * N * 4));
      CUDA_OK(cudaMemcpy(dRows, rows.data(), R * sizeof(int), cudaMemcpyHostToDevice));
      refRows<<<dim3((N + 127) / 128, R), 128, 0, s>>>((const __nv_bfloat16*)A[0], (const __nv_bfloat16*)B[0], dRows,
                                                        dD, R, (int)N, (int)K);
      bench::drain(s, "the reference rows");
      std::vector<float> ref((size_t)R * N);
      CUDA_OK(cudaMemcpy(ref.data(), dD, ref.size() * 4, cudaMemcpyDeviceToHost));
      const std::vector<float> oursOut = bench::downloadBf16(C[0], M * nOut), c2 = bench::downloadBf16(C2[0], M * nOut);
      std::vector<double> want((size_t)R * nOut);
      double maxRef = 0, eO = 0, eC = 0;
      for (int r = 0; r < R; ++r)
        for (int64_t n = 0; n < nOut; ++n) {
          want[(size_t)r * nOut + n] = epilogueRef(epilogue, &ref[(size_t)r * N], n);
          maxRef = std::max(maxRef, std::fabs(want[(size_t)r * nOut + n]));
        }
      for (int r = 0; r < R; ++r)
        for (int64_t n = 0; n < nOut; ++n) {
          const double w = want[(size_t)r * nOut + n];
          const double a = oursOut[(size_t)rows[r] * nOut + n], b = c2[(size_t)rows[r] * nOut + n];
          eO = std::max(eO, std::isfinite(a) ? std::fabs(a - w) / maxRef : INFINITY);
          eC = std::max(eC, std::isfinite(b) ? std::fabs(b - w) / maxRef : INFINITY);
        }
      cudaFree(dRows);
      cudaFree(dD);
      const double flop = 2.0 * M * N * K;
      const double ratio = tOurs / tCub;
      // The target as issue 3 defines it: cuBLAS time / ours at least 0.95 at
      // M >= 512 (ratio up to 1/0.95 = 1.0526), at least 0.90 below (1.1111).
      const bool miss = tCub / tOurs < (M >= 512 ? 0.95 : 0.90);
      misses += miss;
      overRound += ratio > (M >= 512 ? 1.05 : 1.10);  // the stricter reading, reported beside it
      // A result over the error bound (or not finite) fails the run: ours, or
      // cuBLAS's, against which nothing would then be measured.
      const bool wrongOurs = !(eO < kMaxErr), wrongCub = !(eC < kMaxErr);
      wrong += wrongOurs || wrongCub;
      std::printf("%-11s %5lld %6lld %6lld %10s %9.4f %9.4f %8.1f %8.1f %7.3f %9.2e %9.2e %6.1f %6.1f  %s%s%s\n", sh.name,
                  (long long)M, (long long)N, (long long)K, usedName.c_str(), tOurs, tCub, flop / tOurs / 1e9,
                  flop / tCub / 1e9, ratio, eO, eC, hostOurs, hostCub, plan.describe().c_str(),
                  wrongOurs ? "  WRONG" : (wrongCub ? "  CUBLAS-WRONG" : ""), miss ? "  MISS" : "");
      out << bench::csvRow({sh.name, std::to_string(M), std::to_string(N), std::to_string(K), usedName,
                            bench::num("%.5f", tOurs), bench::num("%.5f", tCub), bench::num("%.1f", flop / tOurs / 1e9),
                            bench::num("%.1f", flop / tCub / 1e9), bench::num("%.4f", ratio), bench::num("%.3e", eO),
                            bench::num("%.3e", eC), bench::num("%.2f", hostOurs), bench::num("%.2f", hostCub),
                            plan.describe(), o.epilogue})
          << std::flush;
      if (!out) {
        std::fprintf(stderr, "cusync-bench gemm: cannot write %s: %s\n", csv.c_str(), std::strerror(errno));
        return 1;
      }
      std::fflush(stdout);
      if (traceStats) {
        const uint32_t nt = stageGrid(g, used).count();
        TileTrace* dT;
        CUDA_OK(cudaMalloc(&dT, nt * sizeof(TileTrace)));
        CUDA_OK(cudaMemset(dT, 0, nt * sizeof(TileTrace)));
        GemmArgs a = g;
        a.A = A[0], a.B = B[0], a.C = C[0], a.trace = dT;
        gemm(a, s);
        bench::drain(s, "a traced run");
        std::vector<TileTrace> tr(nt);
        CUDA_OK(cudaMemcpy(tr.data(), dT, nt * sizeof(TileTrace), cudaMemcpyDeviceToHost));
        cudaFree(dT);
        // Per tile: MMA time, epilogue, and the gap before the next tile's
        // first k-block on the same SM (all medians over the tiles).
        std::vector<double> mma, epi, gap;
        std::vector<std::vector<const TileTrace*>> bySm(prop.multiProcessorCount);
        unsigned long long t0 = ~0ull, t1 = 0, tIn = ~0ull, tOut = 0;
        // A block's first tile (the one whose record has setupNs): entry to its
        // ticket decoded, then to its first MMA.
        std::vector<double> toTicket, toMma, setup;
        for (const TileTrace& t : tr) {
          if (t.end == 0 || t.mmaStart == 0 || t.sm >= bySm.size()) continue;
          mma.push_back(t.mmaNs / 1e3);
          epi.push_back((double)(t.end - t.mmaStart - t.mmaNs) / 1e3);
          bySm[t.sm].push_back(&t);
          t0 = std::min(t0, t.mmaStart), t1 = std::max(t1, t.end);
          if (t.blockEntry != 0) tIn = std::min(tIn, t.blockEntry);
          if (t.setupNs != 0 && t.blockEntry != 0 && t.start >= t.blockEntry && t.mmaStart >= t.start)
            toTicket.push_back((t.start - t.blockEntry) / 1e3), toMma.push_back((t.mmaStart - t.start) / 1e3),
                setup.push_back(t.setupNs / 1e3);
          if (t.blockExit != 0) tOut = std::max(tOut, t.blockExit);
        }
        // MMA time of each SM's first tile and of its later ones (a later
        // wave runs beside other blocks' epilogues and loads).
        std::vector<double> mmaFirst, mmaLater;
        for (auto& v : bySm) {
          std::sort(v.begin(), v.end(), [](const TileTrace* x, const TileTrace* y) { return x->mmaStart < y->mmaStart; });
          for (size_t i = 1; i < v.size(); ++i) gap.push_back((double)(v[i]->mmaStart - v[i - 1]->end) / 1e3);
          for (size_t i = 0; i < v.size(); ++i) (i == 0 ? mmaFirst : mmaLater).push_back(v[i]->mmaNs / 1e3);
        }
        auto med = [](std::vector<double> v) {
          if (v.empty()) return 0.0;
          std::sort(v.begin(), v.end());
          return v[v.size() / 2];
        };
        std::printf("  trace: %zu tiles; per tile (median) MMA %.2f us, epilogue %.2f us, gap to the next tile %.2f us; "
                    "first MMA to last store %.1f us\n",
                    mma.size(), med(mma), med(epi), med(gap), (t1 - t0) / 1e3);
        if (!mmaLater.empty())
          std::printf("  trace: MMA of each SM's first tile %.2f us (median), of its later tiles %.2f us\n", med(mmaFirst),
                      med(mmaLater));
        if (tIn <= t0 && tOut >= t1)
          std::printf("  inside the launch: first block start to first MMA %.1f us (median first tile: %.2f us to its "
                      "ticket (%.2f us of set-up before the atomic), %.2f us more to its first MMA), MMAs to last "
                      "store %.1f us, last store to last block exit %.1f us\n",
                      (t0 - tIn) / 1e3, med(toTicket), med(setup), med(toMma), (t1 - t0) / 1e3, (tOut - t1) / 1e3);
      }
      }
      if (gateUp != nullptr) cudaFree(gateUp);
      for (int c = 0; c < copies; ++c) {
        cudaFree(A[c]);
        cudaFree(B[c]);
        cudaFree(C[c]);
        cudaFree(C2[c]);
      }
    }
  out.close();
  if (!out) {
    std::fprintf(stderr, "cusync-bench gemm: cannot write %s: %s\n", csv.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("ratio = ours / cuBLAS time; MISS: cuBLAS time / ours below the target (0.95 at M >= 512, 0.90 below; "
              "ratio over 1.0526 / 1.1111); host, hostC: host microseconds to enqueue one launch (ours, cuBLAS). "
              "%d misses (%d points over ratio 1.05 / 1.10). CSV: %s\n",
              misses, overRound, csv.c_str());
  if (wrong > 0) {
    std::fprintf(stderr,
                 "cusync-bench gemm: %d results failed their check (error over %.0e of the largest reference value; "
                 "WRONG: ours, CUBLAS-WRONG: cuBLAS's)\n",
                 wrong, kMaxErr);
    return 1;
  }
  return 0;
}
