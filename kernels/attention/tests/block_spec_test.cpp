// The workload specs of the attention block (specs/*_attention.cusync)
// describe the stages planBlock builds at their M (256, decode after 1024
// cached tokens, 132 SMs): same grids and tiles, and the attention waiting
// for whole rows of QKV tiles, as the block's RowSync does.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "kernels/attention/block_plan.h"
#include "model.h"

namespace {

using namespace cusync_attn;

std::string readSpec(const std::string& name) {
  std::ifstream f(std::string(CUSYNC_SPEC_DIR) + "/" + name + ".cusync");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const cusync::StageShape& stageNamed(const cusyncgen::Model& m, const std::string& name) {
  for (size_t i = 0; i < m.spec.stages.size(); ++i)
    if (m.spec.stages[i].name == name) return m.shapes[i];
  throw std::runtime_error("the spec has no stage '" + name + "'");
}

void expectSpecIsPlan(const BlockModel& model, const std::string& spec) {
  SCOPED_TRACE(spec);
  const std::string text = readSpec(spec);
  ASSERT_FALSE(text.empty()) << "cannot read " << spec;
  const cusyncgen::Model m = cusyncgen::compile(text, spec);
  const int64_t M = m.spec.params.at("M");
  EXPECT_EQ(M, 256);
  BlockBuffers b;
  b.x = b.wqkv = b.wo = b.q = b.kv = b.attn = b.out = reinterpret_cast<void*>(uintptr_t(1) << 24);
  b.capacity = 1024 + M;
  const BlockPlan p = planBlock(model, M, 1024, 132, b);

  const cusync::StageShape& qkv = stageNamed(m, "qkv");
  EXPECT_EQ(qkv.grid, p.qkvGrid);
  EXPECT_EQ(qkv.tile, p.qkvTile);
  const cusync::StageShape& attn = stageNamed(m, "attn");
  EXPECT_EQ(attn.grid, p.attentionPlan.stageGrid);
  EXPECT_EQ(attn.tile, p.attentionPlan.stageTile);
  const cusync::StageShape& wo = stageNamed(m, "wo");
  EXPECT_EQ(wo.grid, p.woGrid);
  EXPECT_EQ(wo.tile, p.woTile);

  ASSERT_EQ(m.edges.size(), 2u);
  const cusyncgen::Edge& reads = m.edges[0];
  EXPECT_EQ(m.spec.stages[reads.cons].name, "attn");
  EXPECT_EQ(reads.rules.grain, cusyncgen_rt::kRows);
  EXPECT_EQ(reads.rules.rowsPerSem, 1u);
}

TEST(BlockSpec, Gpt3SpecIsThePlan) { expectSpecIsPlan(kGpt3Block, "gpt3_attention"); }
TEST(BlockSpec, LlamaSpecIsThePlan) { expectSpecIsPlan(kLlamaBlock, "llama_attention"); }

}  // namespace
