// cusync-example: GEMM1 -> GEMM2 with the second GEMM synchronized tile by
// tile on the first, in every launch mode and policy; each result is checked
// against a plain serial run of the same kernels, then timed (CUDA events,
// warm-up, median of the timed runs).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cusync_cli.h"
#include "tiled_gemm.cuh"

using namespace cusync;
using cusync::examples::kTile;
using cusync::examples::tiledGemm;

namespace {

#define CHECK(expr)                                                                            \
  do {                                                                                         \
    cudaError_t e_ = (expr);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Problem {
  int M, K1, N1, N2;
  float *A, *B1, *B2, *C1, *C2;
};

template <class P>
double runVariant(const Problem& p, LaunchMode mode, const P& pol, const std::vector<float>& expect, int iters,
                  double* maxErr) {
  const Dim3 tile(kTile, kTile, kTile);
  Stage<policy::NoSync, P> s1("gemm1", Dim3(p.N1 / kTile, ceilDiv(p.M, kTile)), tile, {}, pol);
  Stage<P, policy::NoSync> s2("gemm2", Dim3(p.N2 / kTile, ceilDiv(p.M, kTile)), tile, pol);
  if constexpr (!policy::isNoSync<P>) pair(s1, s2);
  Pipeline pipe(mode);
  auto once = [&] {
    pipe.launch(s1, tiledGemm<typename decltype(s1)::View>, LaunchShape{dim3(s1.numTiles()), dim3(kTile, kTile)},
                p.A, p.B1, p.C1, p.M, p.N1, p.K1, p.K1);
    pipe.launch(s2, tiledGemm<typename decltype(s2)::View>, LaunchShape{dim3(s2.numTiles()), dim3(kTile, kTile)},
                p.C1, p.B2, p.C2, p.M, p.N2, p.N1, p.N1);
    pipe.finish();
  };
  CHECK(cudaMemset(p.C2, 0xFF, sizeof(float) * p.M * p.N2));
  once();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> got(expect.size());
  CHECK(cudaMemcpy(got.data(), p.C2, sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
  *maxErr = 0;
  for (size_t i = 0; i < got.size(); ++i)
    *maxErr = std::isnan(got[i]) ? INFINITY : std::max<double>(*maxErr, std::fabs(got[i] - expect[i]));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < iters + 3; ++i) {
    CHECK(cudaEventRecord(a));
    once();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int M = 1024, iters = 20;
  CLI::App app(
      "Runs GEMM1 [M x 1024 x 4096] -> GEMM2 [M x 4096 x 1024] (fp32 tiled kernels) in the serial, streams and pdl\n"
      "launch modes with TileSync and RowSync, checks each against the serial result and prints the median time\n"
      "of N runs. Runs on any CUDA GPU.",
      "cusync-example");
  app.add_option("--m", M, "rows M (1 to 65536)")->transform(cusync_cli::wholeNumber(1, 65536))->type_name("M")
      ->capture_default_str();
  app.add_option("--iters", iters, "timed runs per median (1 to 100000)")
      ->transform(cusync_cli::wholeNumber(1, 100000))
      ->type_name("N")
      ->capture_default_str();
  app.footer("Exit status: 0 every variant matches the serial result; 1 a mismatch or a CUDA error; 2 bad usage;\n"
             "3 no CUDA GPU here.");
  if (const int status = cusync_cli::parse(app, argc, argv); status >= 0) return status;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "cusync-example: needs a CUDA GPU; without one, run the tests: ctest --test-dir build -L cpu\n");
    return cusync_cli::kNoGpu;
  }
  Problem p{M, 1024, 4096, 1024};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1, 1);
  auto make = [&](float** ptr, size_t count, bool fill) {
    CHECK(cudaMalloc(ptr, count * sizeof(float)));
    if (!fill) return;
    std::vector<float> h(count);
    for (float& x : h) x = d(rng);
    CHECK(cudaMemcpy(*ptr, h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  };
  make(&p.A, size_t(M) * p.K1, true);
  make(&p.B1, size_t(p.K1) * p.N1, true);
  make(&p.B2, size_t(p.N1) * p.N2, true);
  make(&p.C1, size_t(M) * p.N1, false);
  make(&p.C2, size_t(M) * p.N2, false);

  double err = 0;
  std::vector<float> expect(size_t(M) * p.N2);
  // The serial run without synchronization is the reference the others must match exactly.
  runVariant(p, LaunchMode::Serial, policy::NoSync{}, expect, 1, &err);
  CHECK(cudaMemcpy(expect.data(), p.C2, sizeof(float) * expect.size(), cudaMemcpyDeviceToHost));
  std::printf("cusync-example: M=%d, GEMM1 %dx%dx%d -> GEMM2 %dx%dx%d (fp32 tiled kernels)\n", M, M, p.K1, p.N1, M,
              p.N1, p.N2);
  std::printf("%-10s %-9s %10s %12s %s\n", "policy", "mode", "median ms", "max |diff|", "speedup vs no sync");
  // Baseline: the same kernels with no synchronization at all, in stream order.
  const double baseMs = runVariant(p, LaunchMode::Serial, policy::NoSync{}, expect, iters, &err);
  bool ok = err == 0;
  std::printf("%-10s %-9s %10.4f %12.3g %.3fx\n", "NoSync", "serial", baseMs, err, 1.0);
  for (LaunchMode mode : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl}) {
    for (int which = 0; which < 2; ++which) {
      const double ms = which == 0 ? runVariant(p, mode, policy::TileSync{}, expect, iters, &err)
                                   : runVariant(p, mode, policy::RowSync{}, expect, iters, &err);
      ok = ok && err == 0;
      std::printf("%-10s %-9s %10.4f %12.3g %.3fx\n", which == 0 ? "TileSync" : "RowSync", toString(mode), ms, err,
                  baseMs / ms);
    }
  }
  std::printf("cusync-example: %s\n", ok ? "all variants match the serial result" : "MISMATCH");
  return ok ? 0 : 1;
}
