// The ResNet-38 and VGG-19 chains (specs/resnet38.cusync, specs/vgg19.cusync):
// the policies derived from their reads cover every pixel each output pixel
// of a convolution reads (the stride-2 reads are written as a hull), wait for
// at least what the hand-written Conv2DTileSync waits for, and run without
// deadlock on the emulator at the H100's 132 SMs.
#include <gtest/gtest.h>

#include <set>

#include "check.h"
#include "cusync/policies.h"
#include "model.h"
#include "spec_files.h"

namespace {

// The convolution each ResNet consumer computes: its input's size, filter and stride.
struct ConvLayer {
  const char* stage;
  uint32_t H, R, stride;
};

const ConvLayer kResnetLayers[] = {
    {"conv56b", 56, 3, 1}, {"down28", 56, 3, 2},  {"short28", 56, 1, 2}, {"conv28a", 28, 3, 1},
    {"conv28b", 28, 3, 1}, {"conv28c", 28, 3, 1}, {"down14", 28, 3, 2},  {"short14", 28, 1, 2},
    {"conv14a", 14, 3, 1}, {"conv14b", 14, 3, 1}, {"conv14c", 14, 3, 1}, {"down7", 14, 3, 2},
    {"short7", 14, 1, 2},  {"conv7a", 7, 3, 1},   {"conv7b", 7, 3, 1},   {"conv7c", 7, 3, 1},
};

const ConvLayer& layerOf(const cusyncgen::Model& m, const cusyncgen::Edge& e) {
  for (const ConvLayer& l : kResnetLayers)
    if (m.spec.stages[e.cons].name == l.stage) return l;
  throw std::runtime_error("no layer for stage " + m.spec.stages[e.cons].name);
}

cusync::policy::Conv2DTileSync handPolicy(const ConvLayer& l, uint32_t N, uint32_t C) {
  cusync::policy::Conv2DTileSync p;
  p.R = p.S = l.R;
  p.padH = p.padW = l.R / 2;
  p.C = C;
  p.H = p.W = l.H;
  p.strideH = p.strideW = l.stride;
  p.N = N;
  return p;
}

// Walks every consumer row tile of every edge from k = 0 with the derived
// policy and, beside it, Conv2DTileSync for the same convolution. Returns the
// first pixel read that a policy has not waited for at or before its step, or
// a Conv2DTileSync wait outside the derived ones; empty when there is none.
std::string firstProblem(const cusyncgen::Model& m, uint32_t N) {
  for (const cusyncgen::Edge& e : m.edges) {
    const ConvLayer& l = layerOf(m, e);
    const std::string at = std::string(l.stage) + " N=" + std::to_string(N) + ": ";
    const cusync::StageShape& cs = m.shapes[e.cons];
    const cusync::StageShape& ps = m.shapes[e.prod];
    const uint32_t C = ps.cols(), bk = cs.tile.z;
    const cusync::policy::Conv2DTileSync hand = handPolicy(l, N, C);
    if (const char* msg = hand.checkPair(cs, ps)) return at + msg;
    const cusyncgen_rt::RulesPolicy derived{e.rules};
    if (derived.readExtent(ps) != hand.readExtent(ps)) return at + "the walks differ in length";
    const uint32_t Ho = hand.outH(), Wo = hand.outW(), pixels = N * Ho * Wo;
    for (uint32_t y = 0; y < cs.grid.y; ++y) {
      std::set<uint32_t> waited, waitedByHand;
      for (uint32_t k = 0; k < derived.readExtent(ps); k += bk) {
        const cusync::Read rd{k, y * cs.tile.y, 0, 0};
        const cusync::SemSpan d = derived.waitSpan(rd, cs, ps), h = hand.waitSpan(rd, cs, ps);
        for (uint32_t n = 0; n < d.count(); ++n) waited.insert(d.at(n));
        for (uint32_t n = 0; n < h.count(); ++n) waitedByHand.insert(h.at(n));
        const uint32_t rs = k / C, r = rs / l.R, s = rs % l.R, ch = k % C;
        for (uint32_t p = y * cs.tile.y; p < std::min(pixels, (y + 1) * cs.tile.y); ++p) {
          const int64_t hi = int64_t(p % (Ho * Wo) / Wo) * l.stride + r - l.R / 2;
          const int64_t wi = int64_t(p % Wo) * l.stride + s - l.R / 2;
          if (hi < 0 || hi >= l.H || wi < 0 || wi >= l.H) continue;  // padding
          const int64_t q = (int64_t(p / (Ho * Wo)) * l.H + hi) * l.H + wi;
          const cusync::Dim3 t(ch / ps.tile.x, uint32_t(q / ps.tile.y), 0);
          const uint32_t sem = cusync::policy::walk::linearTile(t, ps.grid);
          const std::string read = "pixel " + std::to_string(p) + " at k " + std::to_string(k) +
                                   " reads producer pixel " + std::to_string(q) + " (semaphore " +
                                   std::to_string(sem) + ") before ";
          if (!waited.count(sem)) return at + read + "the derived policy waits for it";
          if (!waitedByHand.count(sem)) return at + read + "Conv2DTileSync waits for it";
        }
      }
      for (uint32_t t : waitedByHand)
        if (!waited.count(t))
          return at + "row tile " + std::to_string(y) + ": Conv2DTileSync waits on semaphore " + std::to_string(t) +
                 ", outside the derived waits";
    }
  }
  return "";
}

TEST(ResnetChain, DerivedWaitsCoverEveryPixelRead) {
  for (uint32_t N : {1u, 3u}) {
    const cusyncgen::Model m = cusyncgen::compile(readSpec("resnet38"), "resnet38", {{"N", N}});
    ASSERT_EQ(m.edges.size(), std::size(kResnetLayers));
    EXPECT_EQ(firstProblem(m, N), "");
  }
}

// A stride-2 read written as if the stride were 1 (rows i*BM ... instead of
// 4*i*BM ...) misses pixels, and the check above says which.
TEST(ResnetChain, StrideLeftOutIsCaught) {
  std::string text = readSpec("resnet38");
  const std::string full = "A2[4*i*BM28 + (r-1)*56 + (s-1) - 54 : 4*i*BM28",
                    cut = "A2[i*BM28 + (r-1)*56 + (s-1) - 54 : i*BM28";
  const size_t at = text.find(full);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, full.size(), cut);
  const cusyncgen::Model m = cusyncgen::compile(text, "resnet38", {{"N", 1}});
  const std::string problem = firstProblem(m, 1);
  EXPECT_NE(problem.find("down28 N=1: pixel"), std::string::npos) << problem;
  EXPECT_NE(problem.find("before the derived policy waits for it"), std::string::npos) << problem;
}

// Both chains, at the batches the benchmark sweeps, on the CPU emulator with
// the H100's 132 SMs (streams and PDL mode, two runs each).
TEST(ConvChains, RunWithoutDeadlockAt132Sms) {
  for (const char* name : {"resnet38", "vgg19"})
    for (int64_t N : {1, 4, 8, 16, 32}) {
      const cusyncgen::Model m = cusyncgen::compile(readSpec(name), name, {{"N", N}});
      const cusyncgen::CheckResult r = cusyncgen::checkEmulated(m, 132);
      EXPECT_TRUE(r.ok) << name << " N=" << N << ": " << r.counterexample;
      EXPECT_EQ(r.lines.size(), 2u) << name;
    }
}

}  // namespace
