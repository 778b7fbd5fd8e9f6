// The split-K workspace belongs to its stage (cusync::Stage::workspace()):
// made zeroed by the stage's first split launch, also inside a graph
// capture, grown when a launch needs more, freed with the stage. Stages
// created and destroyed again and again hold no device memory after they
// go, and a stage made where a destroyed one lived owes it nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cusync/stage.h"
#include "kernels/gemm/host/launch_host.h"
#include "kernels/gemm/tests/pair_runs.cuh"  // the staged kernels' extern declarations
#include "kernels/testing/require_hopper.h"

using namespace cusync_gemm;
using namespace gemm_test;

namespace {

using SplitStage = cusync::Stage<cusync::policy::NoSync, cusync::policy::RowSync>;

// One bf16 GEMM problem (A [M, K], B [N, K]) with its fp32 reference, for
// any number of launches into C.
struct Problem {
  int M, N, K;
  Dev dA, dB, dC, dD;
  std::vector<float> ref;
  double maxRef = 0;

  Problem(int m, int n, int k)
      : M(m), N(n), K(k), dA((size_t)m * k * 2), dB((size_t)n * k * 2), dC((size_t)m * n * 2), dD((size_t)m * n * 4) {}

  // Fills A and B and computes the reference (call under ASSERT_NO_FATAL_FAILURE).
  void init() {
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    std::vector<uint16_t> hA((size_t)M * K), hB((size_t)N * K);
    for (auto& x : hA) x = toBits(U(rng()), DType::BF16);
    for (auto& x : hB) x = toBits(U(rng()), DType::BF16);
    CK(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB.p, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice));
    refGemm<<<dim3((N + 127) / 128, M), 128>>>((const __nv_bfloat16*)dA.p, (const __nv_bfloat16*)dB.p, (float*)dD.p,
                                               M, N, K, 0);
    CK(cudaDeviceSynchronize());
    ref.resize((size_t)M * N);
    CK(cudaMemcpy(ref.data(), dD.p, ref.size() * 4, cudaMemcpyDeviceToHost));
    maxRef = 0;
    for (float v : ref) maxRef = std::max(maxRef, (double)std::fabs(v));
  }

  GemmArgs args(int splitK) const {
    GemmArgs a;
    a.M = M, a.N = N, a.K = K, a.A = dA.p, a.B = dB.p, a.C = dC.p;
    a.config = TileConfig::T64x128SplitK;
    a.splitK = splitK;
    return a;
  }

  void poison() { CK(cudaMemset(dC.p, 0xFF, (size_t)M * N * 2)); }

  // C (after the GPU is idle) against the reference.
  void check(const std::string& what) {
    std::vector<uint16_t> c((size_t)M * N);
    CK(cudaMemcpy(c.data(), dC.p, c.size() * 2, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const double o = fromBits(c[i], DType::BF16);
      if (!std::isfinite(o) || std::fabs(o - ref[i]) > 0.02 * maxRef + 0.02 * std::fabs(ref[i]))
        if (bad++ < 5) ADD_FAILURE() << what << ": C[" << i / N << "][" << i % N << "] = " << o << ", want " << ref[i];
    }
    EXPECT_EQ(bad, 0) << what;
  }

  // One launch of `a` on `stage` into poisoned C, waited for and checked.
  template <class Stage>
  void launchAndCheck(const GemmArgs& a, Stage& stage, cudaStream_t s, const std::string& what) {
    ASSERT_NO_FATAL_FAILURE(poison());
    ASSERT_NO_THROW(gemm(a, stage, s));
    CK(cudaStreamSynchronize(s));
    ASSERT_NO_FATAL_FAILURE(check(what));
  }
};

std::unique_ptr<SplitStage> makeStage(const GemmArgs& a) {
  return std::make_unique<SplitStage>("splitk", stageGrid(a, a.config), stageTile(a, a.config));
}

size_t freeDeviceMemory() {
  size_t freeB = 0, total = 0;
  if (cudaMemGetInfo(&freeB, &total) != cudaSuccess) return 0;
  return freeB;
}

// Split-K stages created, launched, synchronized and destroyed 50 times:
// device memory comes back each time. Each iteration also keeps a small
// allocation alive, so that later stages land at new addresses (the
// workspaces were once kept in a process-wide cache keyed by the stage's
// ticket-counter address and never freed: ~59 MB leaked per new address).
TEST(GemmGpuSplitK, StagesInALoopFreeTheirWorkspaces) {
  REQUIRE_HOPPER();
  Problem p(1024, 2048, 4096);
  ASSERT_NO_FATAL_FAILURE(p.init());
  const GemmArgs a = p.args(8);
  const size_t partialBytes = (size_t)stageGrid(a, a.config).count() * 7 * 64 * 128 * 4;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto once = [&](int i) {
    std::unique_ptr<SplitStage> st = makeStage(a);
    ASSERT_NO_FATAL_FAILURE(p.launchAndCheck(a, *st, s, "iteration " + std::to_string(i)));
    EXPECT_EQ(st->workspace().buffers(), 1u);
    EXPECT_GE(st->workspace().scratchCapacity(), partialBytes) << "the partials are not in the stage's workspace";
  };
  // A first round loads the kernels and makes what lives for the program
  // (device properties, streams), then the baseline.
  ASSERT_NO_FATAL_FAILURE(once(-1));
  CK(cudaDeviceSynchronize());
  const size_t before = freeDeviceMemory();
  ASSERT_GT(before, 0u);
  std::vector<std::unique_ptr<Dev>> spacers;
  for (int i = 0; i < 50; ++i) {
    spacers.push_back(std::make_unique<Dev>(256));
    ASSERT_NO_FATAL_FAILURE(once(i));
  }
  CK(cudaDeviceSynchronize());
  const size_t after = freeDeviceMemory();
  const size_t tolerance = 32u << 20;  // the spacers and allocator rounding; one workspace alone is ~59 MB
  EXPECT_LE(before, after + tolerance) << "device memory shrank by " << (before - after) / (1 << 20)
                                       << " MiB over 50 stages";
  CK(cudaStreamDestroy(s));
}

// A stage made at the address of a destroyed one (its ticket counter where
// the old one's was: the allocator hands the freed memory back) computes
// right, with a split count, and so a workspace layout, of its own; the
// old stage's first launch was in a graph capture that was never replayed
// on every other round. Each new stage starts with an empty workspace.
TEST(GemmGpuSplitK, StageAtAReusedAddressComputesRight) {
  REQUIRE_HOPPER();
  Problem p(500, 1024, 2048);
  ASSERT_NO_FATAL_FAILURE(p.init());
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const unsigned long long* last = nullptr;
  int reused = 0;
  const int splits[] = {8, 2, 5, 3, 16, 2};
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " splitK " + std::to_string(splits[round]));
    const GemmArgs a = p.args(splits[round]);
    std::unique_ptr<SplitStage> st = makeStage(a);
    if (st->ticketCounter() == last) ++reused;
    last = st->ticketCounter();
    EXPECT_EQ(st->workspace().buffers(), 0u);
    if (round % 2 == 1) {
      // First launched inside a capture whose graph is dropped unreplayed.
      cusync::Pipeline pipe(cusync::LaunchMode::Serial, s);
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      bool threw = false;
      try {
        gemm(a, *st, pipe);
        pipe.finish();
      } catch (const std::exception& e) {
        threw = true;
        ADD_FAILURE() << "captured launch threw: " << e.what();
      }
      cudaGraph_t g = nullptr;
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphDestroy(g));
      if (threw) break;
    }
    for (int run = 0; run < 2; ++run) ASSERT_NO_FATAL_FAILURE(p.launchAndCheck(a, *st, s, "run " + std::to_string(run)));
    EXPECT_EQ(st->workspace().buffers(), 1u);
  }
  std::printf("[          ] %d of 5 stages were made at their predecessor's address\n", reused);
  CK(cudaStreamDestroy(s));
}

// One stage launched with a larger split, then a smaller one: the workspace
// grows to a new zeroed buffer (the old one kept until the stage goes, since
// queued kernels or a graph may use it) and then serves the smaller launch.
TEST(GemmGpuSplitK, StageWorkspaceGrowsWithTheSplit) {
  REQUIRE_HOPPER();
  Problem p(1024, 2048, 1024);
  ASSERT_NO_FATAL_FAILURE(p.init());
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::unique_ptr<SplitStage> st = makeStage(p.args(2));
  const size_t tiles = stageGrid(p.args(2), TileConfig::T64x128SplitK).count();
  const struct {
    int splitK;
    size_t buffers;
  } steps[] = {{2, 1}, {8, 2}, {2, 2}, {8, 2}, {16, 3}};
  for (const auto& step : steps) {
    SCOPED_TRACE("splitK " + std::to_string(step.splitK));
    ASSERT_NO_FATAL_FAILURE(p.launchAndCheck(p.args(step.splitK), *st, s, "splitK " + std::to_string(step.splitK)));
    EXPECT_EQ(st->workspace().buffers(), step.buffers);
    EXPECT_GE(st->workspace().scratchCapacity(), tiles * (step.splitK - 1) * 64 * 128 * 4);
  }
  CK(cudaStreamDestroy(s));
}

// The split-K workspace of a stage first launched inside a graph capture is
// zeroed when it is allocated, not by a memset recorded into the graph: a
// graph that is never replayed, or a launch outside it, would otherwise start
// from whatever the allocation held (a stale unit counter hung the attention
// block's benchmark). The allocation is put on memory just filled with 0xFF
// and freed, which it usually reuses.
TEST(GemmGpuSplitK, WorkspaceMadeDuringCaptureIsZeroAndNotCaptured) {
  REQUIRE_HOPPER();
  const uint32_t tiles = 40, splits = 3, tileElems = 64 * 128;
  const size_t flagsBytes = 8 * tiles * 4;
  {
    Dev poison(256 + flagsBytes + 4096);
    CK(cudaMemset(poison.p, 0xFF, 256 + flagsBytes + 4096));
    CK(cudaDeviceSynchronize());
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  SplitStage st("captured", cusync::Dim3(8, 5), cusync::Dim3(64, 128, 64));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  detail::SplitBuffers b{};
  try {
    b = detail::splitBuffers(st.workspace(), tiles, splits, tileElems);
  } catch (...) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(s, &g);
    if (g) cudaGraphDestroy(g);
    throw;
  }
  cudaGraph_t g = nullptr;
  CK(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CK(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT_EQ(nodes, 0u) << "the workspace's zeroing was recorded into the graph being captured";
  CK(cudaGraphDestroy(g));
  unsigned long long counter = ~0ull;
  std::vector<uint32_t> flags(8 * tiles, ~0u);
  CK(cudaMemcpy(&counter, b.counter, sizeof counter, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(flags.data(), b.flags, flagsBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(counter, 0ull);
  for (size_t i = 0; i < flags.size(); ++i) ASSERT_EQ(flags[i], 0u) << "flag " << i;
  // The same stage again: the same buffers, nothing allocated or zeroed anew.
  const detail::SplitBuffers again = detail::splitBuffers(st.workspace(), tiles, splits, tileElems);
  EXPECT_EQ(again.counter, b.counter);
  EXPECT_EQ(again.partials, b.partials);
  EXPECT_EQ(st.workspace().buffers(), 1u);
  CK(cudaStreamDestroy(s));
}

}  // namespace
