// Two chained tiled GEMMs on the GPU through cusync, for every policy x flag
// x launch mode, one and several runs, outside and inside a CUDA graph,
// against a float64 host reference with fresh random inputs and poisoned
// outputs.
#include <map>

#include "gpu_util.h"
#include "tiled_gemm.cuh"

using namespace cusync;
using cusync::examples::kTile;
using cusync::examples::tiledGemm;

namespace {

struct Variant {
  LaunchMode mode;
  int opts;
  bool persistentConsumer;
  bool graph;
  int runs;
};

std::string name(const Variant& v, const char* policy) {
  return std::string(policy) + " mode=" + toString(v.mode) + " opts=" + std::to_string(v.opts) +
         (v.persistentConsumer ? " persistent" : "") + (v.graph ? " graph" : "") + " runs=" + std::to_string(v.runs);
}

constexpr int kM = 500, kK1 = 256, kN2 = 256;  // M is ragged: the last row tile is partial

// Random inputs with their float64 references. A test draws a few sets once
// and its variants cycle through them, so every run of a variant sees other
// data than the run before while the host reference is computed only once.
struct InputSet {
  std::vector<float> A, B1, B2;
  std::vector<double> r1, r2;
};

const std::vector<InputSet>& inputSets(int N1, int K2) {
  static std::map<std::pair<int, int>, std::vector<InputSet>> cache;
  auto& sets = cache[{N1, K2}];
  if (sets.empty()) {
    std::mt19937 rng(42 + N1 + K2);
    for (int i = 0; i < 4; ++i) {
      InputSet s;
      s.A = randomFloats(size_t(kM) * kK1, rng);
      s.B1 = randomFloats(size_t(kK1) * N1, rng);
      s.B2 = randomFloats(size_t(K2) * kN2, rng);
      const std::vector<double> dA(s.A.begin(), s.A.end());
      s.r1 = hostGemm(dA, s.B1, kM, N1, kK1, kK1);
      s.r2 = hostGemm(s.r1, s.B2, kM, kN2, K2, N1);
      sets.push_back(std::move(s));
    }
  }
  return sets;
}

// C1 = A * B1 (NoSync -> P), C2 = C1[:, :K2] * B2 (P -> NoSync).
template <class P>
void runChain(const P& pol, const char* policyName, const Variant& var, int N1, int K2) {
  SCOPED_TRACE(name(var, policyName));
  const int M = kM, K1 = kK1, N2 = kN2;
  const Dim3 g1(N1 / kTile, ceilDiv(M, kTile)), g2(N2 / kTile, ceilDiv(M, kTile));
  const Dim3 tile(kTile, kTile, kTile);
  Stage<policy::NoSync, P> s1("gemm1", g1, tile, {}, pol, var.opts & ~AvoidWaitKernel);
  Stage<P, policy::NoSync> s2("gemm2", g2, tile, pol, {}, var.opts & ~NoAtomicAdd);
  pair(s1, s2);

  const auto& sets = inputSets(N1, K2);
  static int rotation = 0;
  DeviceBuffer<float> A(size_t(M) * K1), B1(size_t(K1) * N1), B2(size_t(K2) * N2), C1(size_t(M) * N1),
      C2(size_t(M) * N2);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Pipeline pipe(var.mode, stream);
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const dim3 block(kTile, kTile);
  auto enqueue = [&] {
    pipe.launch(s1, tiledGemm<typename decltype(s1)::View>, LaunchShape{dim3(g1.count()), block}, A.ptr, B1.ptr,
                C1.ptr, M, N1, K1, K1);
    LaunchShape l2{dim3(g2.count()), block};
    if (var.persistentConsumer) l2 = LaunchShape{dim3(sms / 2), block, 0, true};
    pipe.launch(s2, tiledGemm<typename decltype(s2)::View>, l2, C1.ptr, B2.ptr, C2.ptr, M, N2, K2, N1);
    pipe.finish();
  };

  cudaGraphExec_t exec = nullptr;
  if (var.graph) {
    cudaGraph_t graph;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue();
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    exec = instantiateGraph(graph);
    CUDA_OK(cudaGraphDestroy(graph));
  }
  for (int run = 0; run < var.runs; ++run) {
    const InputSet& in = sets[rotation++ % sets.size()];
    CUDA_OK(A.upload(in.A));
    CUDA_OK(B1.upload(in.B1));
    CUDA_OK(B2.upload(in.B2));
    CUDA_OK(C1.poison());
    CUDA_OK(C2.poison());
    if (var.graph)
      CUDA_OK(cudaGraphLaunch(exec, stream));
    else
      enqueue();
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_LT(relativeError(C1.download(), in.r1), 1e-5) << "run " << run;
    EXPECT_LT(relativeError(C2.download(), in.r2), 1e-5) << "run " << run;
  }
  if (exec) cudaGraphExecDestroy(exec);
  cudaStreamDestroy(stream);
}

std::vector<Variant> variants(bool singleWriter) {
  std::vector<Variant> out;
  for (LaunchMode m : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl})
    for (int opts : {int(NoOptimization), int(NoAtomicAdd), int(AvoidCustomOrder), int(ReorderTileLoads)})
      for (bool persistent : {false, true})
        for (bool graph : {false, true}) {
          if ((opts & NoAtomicAdd) && !singleWriter) continue;
          out.push_back({m, opts, persistent, graph, 1});
          out.push_back({m, opts, persistent, graph, 3});
        }
  return out;
}

}  // namespace

TEST(GpuChain, TileSync) {
  REQUIRE_GPU();
  for (const auto& v : variants(true)) runChain(policy::TileSync{}, "TileSync", v, 1024, 1024);
}

TEST(GpuChain, RowSync) {
  REQUIRE_GPU();
  for (const auto& v : variants(false)) runChain(policy::RowSync{}, "RowSync", v, 1024, 1024);
}

TEST(GpuChain, BatchedRowSync) {
  REQUIRE_GPU();
  for (const auto& v : variants(false)) runChain(policy::BatchedRowSync{2}, "BatchedRowSync", v, 1024, 1024);
}

TEST(GpuChain, StridedTileSync) {
  REQUIRE_GPU();
  // Producer columns hold two segments of 16 tiles; the consumer reads the first.
  for (const auto& v : variants(true)) runChain(policy::StridedTileSync{16, 2}, "StridedTileSync", v, 1024, 512);
}

TEST(GpuChain, AvoidWaitKernelWhenEverythingFitsInOneWave) {
  REQUIRE_GPU();
  // 16 x 2 + 8 x 2 blocks of 1024 threads fit on any recent GPU at once.
  for (int runs : {1, 3}) {
    Variant v{LaunchMode::Streams, AvoidWaitKernel, false, false, runs};
    SCOPED_TRACE("AvoidWaitKernel");
    const int M = 64, K1 = 256, N1 = 512, N2 = 256;
    const Dim3 tile(kTile, kTile, kTile);
    Stage<policy::NoSync, policy::RowSync> s1("gemm1", Dim3(N1 / kTile, 2), tile);
    Stage<policy::RowSync, policy::NoSync> s2("gemm2", Dim3(N2 / kTile, 2), tile, {}, {}, AvoidWaitKernel);
    pair(s1, s2);
    std::mt19937 rng(5);
    DeviceBuffer<float> A(M * K1), B1(K1 * N1), B2(N1 * N2), C1(M * N1), C2(M * N2);
    Pipeline pipe(v.mode);
    for (int run = 0; run < runs; ++run) {
      const auto hA = randomFloats(A.n, rng), hB1 = randomFloats(B1.n, rng), hB2 = randomFloats(B2.n, rng);
      CUDA_OK(A.upload(hA));
      CUDA_OK(B1.upload(hB1));
      CUDA_OK(B2.upload(hB2));
      CUDA_OK(C2.poison());
      pipe.launch(s1, tiledGemm<decltype(s1)::View>, LaunchShape{dim3(s1.numTiles()), dim3(kTile, kTile)}, A.ptr,
                  B1.ptr, C1.ptr, M, N1, K1, K1);
      pipe.launch(s2, tiledGemm<decltype(s2)::View>, LaunchShape{dim3(s2.numTiles()), dim3(kTile, kTile)}, C1.ptr,
                  B2.ptr, C2.ptr, M, N2, N1, N1);
      pipe.finish();
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<double> dA(hA.begin(), hA.end());
      EXPECT_LT(relativeError(C2.download(), hostGemm(hostGemm(dA, hB1, M, N1, K1, K1), hB2, M, N2, N1, N1)), 1e-5);
    }
  }
}

// AvoidWaitKernel promises that the consumer fits in one wave; a grid that
// does not is refused before anything is launched, instead of risking a hang.
TEST(GpuLaunch, AvoidWaitKernelNeedsOneWave) {
  REQUIRE_GPU();
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const Dim3 tile(kTile, kTile, kTile);
  // 2 blocks of 1024 threads per SM at most: 64 per SM is far beyond it.
  const uint32_t cols = static_cast<uint32_t>(sms) * 64;
  Stage<policy::NoSync, policy::RowSync> s1("gemm1", Dim3(cols, 1), tile);
  Stage<policy::RowSync, policy::NoSync> s2("gemm2", Dim3(cols, 1), tile, {}, {}, AvoidWaitKernel);
  pair(s1, s2);
  Pipeline pipe(LaunchMode::Streams);
  try {
    pipe.launch(s2, tiledGemm<decltype(s2)::View>, LaunchShape{dim3(s2.numTiles()), dim3(kTile, kTile)}, nullptr,
                nullptr, nullptr, 0, 0, 0, 0);
    ADD_FAILURE() << "a consumer larger than one wave was launched without its wait kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::LaunchModeUnsupported);
    EXPECT_NE(std::string(e.what()).find("AvoidWaitKernel needs every block resident"), std::string::npos) << e.what();
  }
}

TEST(GpuLaunch, LaunchWithTakesAnyKernelSignature) {
  REQUIRE_GPU();
  // The pipeline places the stage; the caller launches with its config.
  for (LaunchMode mode : {LaunchMode::Streams, LaunchMode::Pdl}) {
    SCOPED_TRACE(toString(mode));
    const int M = 96, K1 = 64, N1 = 256, N2 = 64;
    const Dim3 tile(kTile, kTile, kTile);
    Stage<policy::NoSync, policy::TileSync> s1("gemm1", Dim3(N1 / kTile, M / kTile), tile);
    Stage<policy::TileSync, policy::NoSync> s2("gemm2", Dim3(N2 / kTile, M / kTile), tile);
    pair(s1, s2);
    std::mt19937 rng(9);
    DeviceBuffer<float> A(M * K1), B1(K1 * N1), B2(N1 * N2), C1(M * N1), C2(M * N2);
    const auto hA = randomFloats(A.n, rng), hB1 = randomFloats(B1.n, rng), hB2 = randomFloats(B2.n, rng);
    CUDA_OK(A.upload(hA));
    CUDA_OK(B1.upload(hB1));
    CUDA_OK(B2.upload(hB2));
    CUDA_OK(C2.poison());
    Pipeline pipe(mode);
    const dim3 block(kTile, kTile);
    pipe.launchWith(s1, LaunchShape{dim3(s1.numTiles()), block}, [&](const cudaLaunchConfig_t& cfg, const auto& v) {
      return cudaLaunchKernelEx(&cfg, tiledGemm<decltype(s1)::View>, v, A.ptr, B1.ptr, C1.ptr, M, N1, K1, K1);
    });
    pipe.launchWith(s2, LaunchShape{dim3(s2.numTiles()), block}, [&](const cudaLaunchConfig_t& cfg, const auto& v) {
      return cudaLaunchKernelEx(&cfg, tiledGemm<decltype(s2)::View>, v, C1.ptr, B2.ptr, C2.ptr, M, N2, N1, N1);
    });
    pipe.finish();
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<double> dA(hA.begin(), hA.end());
    EXPECT_LT(relativeError(C2.download(), hostGemm(hostGemm(dA, hB1, M, N1, K1, K1), hB2, M, N2, N1, N1)), 1e-5);
  }
}

TEST(GpuLaunch, GridMismatchIsRejected) {
  REQUIRE_GPU();
  Stage<policy::NoSync, policy::TileSync> s1("gemm1", Dim3(4, 4), Dim3(kTile, kTile, kTile));
  Pipeline pipe(LaunchMode::Serial);
  try {
    pipe.launch(s1, tiledGemm<decltype(s1)::View>, LaunchShape{dim3(15), dim3(kTile, kTile)}, nullptr, nullptr,
                nullptr, 0, 0, 0, 0);
    FAIL() << "expected GridMismatch";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::GridMismatch) << e.what();
  }
}

// The copy chain: the producer stamps every element of its tiles with the
// run's stamp; the consumer copies rows step by step after waiting, so an
// element read before its tile was posted shows last run's stamp (or the
// poison) and fails the exact comparison.
namespace {

constexpr int kCopyRows = 16, kCopyCols = 32, kCopyStep = 16;

template <class View>
__global__ void stampTiles(View st, int* X, int cols, const int* stamp) {
  __shared__ TileWork slot;
  const TileWork w = cusync::tile(st, &slot);
  for (int i = threadIdx.x; i < kCopyRows * kCopyCols; i += blockDim.x) {
    const int r = w.tile.y * kCopyRows + i / kCopyCols, c = w.tile.x * kCopyCols + i % kCopyCols;
    X[r * cols + c] = *stamp + r * cols + c;
  }
  cusync::post(st, w);
}

template <class View>
__global__ void copyRows(View st, const int* X, int* Y, int cols, int readCols) {
  __shared__ TileWork slot;
  const TileWork w = cusync::tile(st, &slot);
  for (int k0 = 0; k0 < readCols; k0 += kCopyStep) {
    cusync::wait(st, w, Read{uint32_t(k0), w.tile.y * kCopyRows});
    for (int i = threadIdx.x; i < kCopyRows * kCopyStep; i += blockDim.x) {
      const int r = w.tile.y * kCopyRows + i / kCopyStep, c = k0 + i % kCopyStep;
      if (w.tile.x == 0) Y[r * readCols + c] = X[r * cols + c];
    }
  }
}

template <class P>
void runCopyChain(const P& pol, const char* policyName, int readCols) {
  const int rows = 40 * kCopyRows, cols = 16 * kCopyCols;
  for (LaunchMode mode : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl})
    for (bool graph : {false, true}) {
      SCOPED_TRACE(std::string(policyName) + " " + toString(mode) + (graph ? " graph" : ""));
      Stage<policy::NoSync, P> prod("stamp", Dim3(cols / kCopyCols, rows / kCopyRows), Dim3(kCopyCols, kCopyRows, 1),
                                    {}, pol);
      Stage<P, policy::NoSync> cons("copy", Dim3(2, rows / kCopyRows), Dim3(kCopyCols, kCopyRows, kCopyStep), pol);
      pair(prod, cons);
      DeviceBuffer<int> X(size_t(rows) * cols), Y(size_t(rows) * readCols), stamp(1);
      CUDA_OK(X.poison());
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      Pipeline pipe(mode, stream);
      auto enqueue = [&] {
        pipe.launch(prod, stampTiles<typename decltype(prod)::View>, LaunchShape{dim3(prod.numTiles()), dim3(128)},
                    X.ptr, cols, stamp.ptr);
        pipe.launch(cons, copyRows<typename decltype(cons)::View>, LaunchShape{dim3(cons.numTiles()), dim3(128)},
                    X.ptr, Y.ptr, cols, readCols);
        pipe.finish();
      };
      cudaGraphExec_t exec = nullptr;
      if (graph) {
        cudaGraph_t g;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        enqueue();
        CUDA_OK(cudaStreamEndCapture(stream, &g));
        exec = instantiateGraph(g);
        cudaGraphDestroy(g);
      }
      for (int run = 1; run <= 3; ++run) {
        const int s = run * 1000000;
        CUDA_OK(stamp.upload({s}));
        CUDA_OK(Y.poison());
        if (graph)
          CUDA_OK(cudaGraphLaunch(exec, stream));
        else
          enqueue();
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(stream));
        const auto y = Y.download();
        int bad = 0;
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < readCols; ++c) bad += y[size_t(r) * readCols + c] != s + r * cols + c;
        EXPECT_EQ(bad, 0) << "run " << run;
      }
      if (exec) cudaGraphExecDestroy(exec);
      cudaStreamDestroy(stream);
    }
}

}  // namespace

TEST(GpuCopy, EveryPolicy) {
  REQUIRE_GPU();
  runCopyChain(policy::TileSync{}, "TileSync", 16 * kCopyCols);
  runCopyChain(policy::RowSync{}, "RowSync", 16 * kCopyCols);
  runCopyChain(policy::BatchedRowSync{3}, "BatchedRowSync", 16 * kCopyCols);
  runCopyChain(policy::StridedTileSync{8, 2}, "StridedTileSync", 8 * kCopyCols);
}
