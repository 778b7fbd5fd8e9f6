// Every workload spec in specs/ compiles, generates a header and passes
// --check; broken policies give counterexamples.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "check.h"
#include "cusync/tile_order.h"
#include "emit.h"
#include "model.h"
#include "spec_files.h"
#include "truth.h"

namespace {

const char* kSpecs[] = {"gpt3_mlp", "gpt3_mlp_rowsync", "llama_mlp", "gpt3_attention", "llama_attention",
                        "conv2d_chain", "resnet38", "vgg19"};

// Convolution specs count images (N); the others tokens (M).
bool isConv(const std::string& spec) { return spec == "conv2d_chain" || spec == "resnet38" || spec == "vgg19"; }
const char* rowsParam(const std::string& spec) { return isConv(spec) ? "N" : "M"; }
int64_t smallRows(const std::string& spec) { return isConv(spec) ? 2 : 200; }

class Workload : public ::testing::TestWithParam<const char*> {};

TEST_P(Workload, GeneratesAndChecks) {
  const std::string text = readSpec(GetParam());
  ASSERT_FALSE(text.empty());
  const cusyncgen::Model m = cusyncgen::compile(text, GetParam());
  EXPECT_FALSE(m.edges.empty());
  const std::string header = cusyncgen::emitHeader(m, cusyncgen::namespaceFor(GetParam()));
  EXPECT_NE(header.find("CUSYNCGEN_RUNTIME_INCLUDED"), std::string::npos);
  EXPECT_NE(header.find("_in {"), std::string::npos);
  const cusyncgen::CheckResult r = cusyncgen::checkWaits(m);
  EXPECT_TRUE(r.ok) << r.counterexample;
  EXPECT_EQ(r.lines.size(), m.edges.size());
}

TEST_P(Workload, ChecksAtOtherSizes) {
  const std::string text = readSpec(GetParam());
  const std::string rows = rowsParam(GetParam());
  for (int64_t v : {1, 3, 130}) {
    const cusyncgen::Model m = cusyncgen::compile(text, GetParam(), {{rows, v}});
    const cusyncgen::CheckResult r = cusyncgen::checkWaits(m);
    EXPECT_TRUE(r.ok) << rows << "=" << v << ": " << r.counterexample;
  }
}

TEST_P(Workload, RunsOnTheEmulator) {
  const cusyncgen::Model m =
      cusyncgen::compile(readSpec(GetParam()), GetParam(), {{rowsParam(GetParam()), smallRows(GetParam())}});
  const cusyncgen::CheckResult r = cusyncgen::checkEmulated(m, 4);
  EXPECT_TRUE(r.ok) << r.counterexample;
}

INSTANTIATE_TEST_SUITE_P(Specs, Workload, ::testing::ValuesIn(kSpecs),
                         [](const auto& info) { return std::string(info.param); });

// Broken rules: the checker names the consumer tile, the k-block and what is wrong.
TEST(Counterexamples, MissingRowsAreUncovered) {
  cusyncgen::Model m = cusyncgen::compile(readSpec("conv2d_chain"), "conv2d_chain");
  m.edges[0].rules.rowLo = 0;  // forget the halo above the tile
  const cusyncgen::CheckResult r = cusyncgen::checkWaits(m);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.counterexample.find("has not waited"), std::string::npos) << r.counterexample;
  EXPECT_NE(r.counterexample.find("(a)"), std::string::npos) << r.counterexample;
}

TEST(Counterexamples, ExtraRowsAreExcess) {
  cusyncgen::Model m = cusyncgen::compile(readSpec("gpt3_mlp"), "gpt3_mlp");
  m.edges[0].rules.rowHi += 128;  // also wait for the next row block
  const cusyncgen::CheckResult r = cusyncgen::checkWaits(m);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.counterexample.find("(b)"), std::string::npos) << r.counterexample;
}

TEST(Counterexamples, MismatchedRowGroupsAreCaught) {
  cusyncgen::Model m = cusyncgen::compile(readSpec("gpt3_mlp_rowsync"), "gpt3_mlp_rowsync");
  m.outRules[0].rowsPerSem = 2;  // posts group two rows; the consumer expects one
  const cusyncgen::CheckResult r = cusyncgen::checkWaits(m);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.counterexample.find("disagree on the semaphore count"), std::string::npos) << r.counterexample;
}

TEST(Counterexamples, EmulatorRejectsMismatchedPair) {
  cusyncgen::Model m = cusyncgen::compile(readSpec("gpt3_mlp_rowsync"), "gpt3_mlp_rowsync", {{"M", 512}});
  m.outRules[0].rowsPerSem = 2;
  m.edges[0].rules.rowsPerSem = 1;
  const cusyncgen::CheckResult r = cusyncgen::checkEmulated(m, 4);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.counterexample.find("emulator"), std::string::npos) << r.counterexample;
}

}  // namespace

namespace {

// Split-K: a walk may start at any k-block (Read::walkStart). From every
// start, each tile a step reads must have been waited for since the start.
// This exercises the wrap of a convolution's walk into its next filter
// position, which --check (walks from the start) does not reach.
TEST(SplitK, EveryWalkStartIsCovered) {
  for (const char* name : {"conv2d_chain", "resnet38", "vgg19", "gpt3_mlp", "gpt3_mlp_rowsync", "llama_mlp"}) {
    SCOPED_TRACE(name);
    const bool conv = isConv(name);
    const cusyncgen::Model m = cusyncgen::compile(readSpec(name), name, {{rowsParam(name), conv ? 1 : 256}});
    for (const cusyncgen::Edge& e : m.edges) {
      const cusyncgen_rt::RulesPolicy in{e.rules}, out{m.outRules[e.prod]};
      const cusync::StageShape& cs = m.shapes[e.cons];
      const cusync::StageShape& ps = m.shapes[e.prod];
      for (uint32_t y = 0; y < cs.grid.y; ++y)
        for (uint32_t ws = 0; ws < e.rules.steps; ++ws) {
          std::set<uint32_t> waited;
          for (uint32_t kb = ws; kb < e.rules.steps; ++kb) {
            const cusync::SemSpan s = in.waitSpan(cusync::Read{kb * cs.tile.z, y * cs.tile.y, 0, ws * cs.tile.z}, cs, ps);
            for (uint32_t n = 0; n < s.count(); ++n) waited.insert(s.at(n));
            for (const cusync::Dim3& t : cusyncgen::tilesRead(m, e, 0, y, 0, kb))
              ASSERT_TRUE(waited.count(out.tileIndex(t, ps)))
                  << "row tile " << y << " walk from " << ws << " reads " << cusync::tileName(t) << " at " << kb;
          }
        }
    }
  }
}

}  // namespace

namespace {

// A check that runs out of time says so (timedOut), never a counterexample.
TEST(Deadline, CoverageStopsUndecided) {
  const cusyncgen::Model m = cusyncgen::compile(readSpec("gpt3_mlp"), "gpt3_mlp", {{"M", 65536}});
  cusyncgen::CheckOptions o;
  o.deadline = std::chrono::steady_clock::now();
  const cusyncgen::CheckResult r = cusyncgen::checkWaits(m, o);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut);
  EXPECT_NE(r.counterexample.find("coverage of 'gemm2' <- 'gemm1' (H) at consumer tile"), std::string::npos)
      << r.counterexample;
}

TEST(Deadline, EmulatorStopsUndecided) {
  const cusyncgen::Model m = cusyncgen::compile(readSpec("gpt3_mlp"), "gpt3_mlp", {{"M", 65536}});
  cusyncgen::CheckOptions o;
  o.sms = 4;
  o.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  const cusyncgen::CheckResult r = cusyncgen::checkEmulated(m, o);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut) << r.counterexample;
  EXPECT_NE(r.counterexample.find("emulator, streams mode, run 1 of 2 after"), std::string::npos) << r.counterexample;
}

// Beyond the table limit the emulator reads the spec's maps at every step;
// every workload still runs with every read seeing its run's data.
TEST(Untabulated, WorkloadsRun) {
  cusyncgen::CheckOptions o;
  o.sms = 4;
  o.tabulateUpTo = 0;
  for (const char* name : kSpecs) {
    const cusyncgen::Model m = cusyncgen::compile(readSpec(name), name, {{rowsParam(name), smallRows(name)}});
    const cusyncgen::CheckResult r = cusyncgen::checkEmulated(m, o);
    EXPECT_TRUE(r.ok) << name << ": " << r.counterexample;
  }
}

}  // namespace
