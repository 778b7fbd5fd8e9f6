// The ResNet-38 and VGG-19 specs (specs/resnet38.cusync, specs/vgg19.cusync)
// carry the tiles the GPU runs: compiled at their batch (N = 8), every stage
// has the grid and tile that the plan (chain_plan.h) gives its layer on the
// H100's 132 SMs. Stages are mapped to the benchmark's pairs
// (model_pairs.h) by name below; ResNet's 1x1 stride-2 shortcuts, which no
// pair runs, get the plan of a single layer (planConvStage).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/conv/chain_plan.h"
#include "kernels/conv/model_pairs.h"
#include "model.h"
#include "tools/cusyncgen/tests/spec_files.h"

using namespace cusync_conv;

namespace {

constexpr int64_t kBatch = 8;
constexpr int kSms = 132;

// The spec stages that run a benchmark pair's first and second layer.
struct PairStages {
  const char* pair;
  const char* first;
  const char* second;
};

// A spec stage that runs a layer no pair runs, on an H x H input.
struct LayerStage {
  const char* stage;
  int64_t H;
  ConvLayer layer;
};

const PairStages kResnetPairStages[] = {
    {"res56-3x3", "conv56a", "conv56b"}, {"res56-down", "down28", "conv28a"}, {"res28-3x3", "conv28b", "conv28c"},
    {"res28-down", "down14", "conv14a"}, {"res14-3x3", "conv14b", "conv14c"}, {"res14-down", "down7", "conv7a"},
    {"res7-3x3", "conv7b", "conv7c"}};

// The shortcuts: 1x1, stride 2, into twice the channels, bias only.
const LayerStage kResnetShortcuts[] = {{"short28", 56, {64, 128, 1, 0, 2, ConvEpilogue::Bias}},
                                       {"short14", 28, {128, 256, 1, 0, 2, ConvEpilogue::Bias}},
                                       {"short7", 14, {256, 512, 1, 0, 2, ConvEpilogue::Bias}}};

const PairStages kVggPairStages[] = {
    {"vgg224-12", "conv1_1", "conv1_2"}, {"vgg112-12", "conv2_1", "conv2_2"}, {"vgg56-12", "conv3_1", "conv3_2"},
    {"vgg56-23", "conv3_2", "conv3_3"},  {"vgg56-34", "conv3_3", "conv3_4"},  {"vgg28-12", "conv4_1", "conv4_2"},
    {"vgg28-23", "conv4_2", "conv4_3"},  {"vgg28-34", "conv4_3", "conv4_4"},  {"vgg14-12", "conv5_1", "conv5_2"},
    {"vgg14-23", "conv5_2", "conv5_3"},  {"vgg14-34", "conv5_3", "conv5_4"}};

std::string dims(const cusync::Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

// Compares a compiled spec's stages with the plan's layers. problems() has a
// line for each stage whose grid or tile differs from its layer's, each pair
// without spec stages, each mapped stage the spec lacks and each spec stage
// that no layer is mapped to.
class SpecAgainstPlan {
 public:
  explicit SpecAgainstPlan(const cusyncgen::Model& m) : m_(m) {}

  void pairs(const std::vector<ModelPair>& pairs, const std::vector<PairStages>& names) {
    for (const ModelPair& mp : pairs) {
      const PairStages* s = nullptr;
      for (const PairStages& ps : names)
        if (mp.name == ps.pair) s = &ps;
      if (!s) {
        problems_.push_back("pair " + mp.name + " has no spec stages");
        continue;
      }
      const ConvPairPlan plan = planConvPair(kBatch, mp.H, mp.H, mp.first, mp.second, kSms);
      stage(s->first, plan.first, mp.name + " first");
      stage(s->second, plan.second, mp.name + " second");
    }
  }

  void layers(const std::vector<LayerStage>& layers) {
    for (const LayerStage& l : layers)
      stage(l.stage, planConvStage(kBatch, l.H, l.H, l.layer, kSms), "single layer");
  }

  std::vector<std::string> problems() const {
    std::vector<std::string> all = problems_;
    for (const cusyncgen::StageDecl& s : m_.spec.stages)
      if (!seen_.count(s.name)) all.push_back(s.name + ": no layer of the plan is mapped to it");
    return all;
  }

 private:
  void stage(const std::string& name, const ConvStagePlan& plan, const std::string& from) {
    seen_.insert(name);
    const int i = m_.spec.findStage(name);
    if (i < 0) {
      problems_.push_back(name + " (" + from + "): the spec has no such stage");
      return;
    }
    const cusync::StageShape& s = m_.shapes[size_t(i)];
    if (!(s.grid == plan.grid) || !(s.tile == plan.tile))
      problems_.push_back(name + " (" + from + ", " + cusync_gemm::toString(plan.args.config) + "): spec grid " +
                          dims(s.grid) + " tile " + dims(s.tile) + ", plan grid " + dims(plan.grid) + " tile " +
                          dims(plan.tile));
  }

  const cusyncgen::Model& m_;
  std::set<std::string> seen_;
  std::vector<std::string> problems_;
};

// The problems of a spec compiled at N = 8 with the params in `tweak` set
// besides (to show that tiles off the plan are caught).
using Params = std::map<std::string, int64_t>;

std::vector<std::string> resnetProblems(Params tweak = {}) {
  tweak["N"] = kBatch;
  const cusyncgen::Model m = cusyncgen::compile(readSpec("resnet38"), "resnet38", tweak);
  SpecAgainstPlan check(m);
  check.pairs(resnetPairs(), {std::begin(kResnetPairStages), std::end(kResnetPairStages)});
  check.layers({std::begin(kResnetShortcuts), std::end(kResnetShortcuts)});
  return check.problems();
}

std::vector<std::string> vggProblems(Params tweak = {}) {
  tweak["N"] = kBatch;
  const cusyncgen::Model m = cusyncgen::compile(readSpec("vgg19"), "vgg19", tweak);
  SpecAgainstPlan check(m);
  check.pairs(vggPairs(), {std::begin(kVggPairStages), std::end(kVggPairStages)});
  return check.problems();
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& l : v) s += l + "\n";
  return s;
}

TEST(ConvSpec, ResnetSpecIsThePlan) {
  const std::vector<std::string> p = resnetProblems();
  EXPECT_TRUE(p.empty()) << lines(p);
}

TEST(ConvSpec, VggSpecIsThePlan) {
  const std::vector<std::string> p = vggProblems();
  EXPECT_TRUE(p.empty()) << lines(p);
}

// Tiles off the plan are caught, each stage named: VGG's block 2 with
// 64-channel tiles, ResNet's 56 x 56 layers with 64-pixel tiles.
TEST(ConvSpec, TilesOffThePlanAreCaught) {
  EXPECT_EQ(lines(vggProblems({{"BN2", 64}})),
            "conv2_1 (vgg112-12 first, 128x128): spec grid 2x784x1 tile 64x128x64, plan grid 1x784x1 tile 128x128x64\n"
            "conv2_2 (vgg112-12 second, 128x128): spec grid 2x784x1 tile 64x128x64, plan grid 1x784x1 tile 128x128x64\n");
  EXPECT_EQ(lines(resnetProblems({{"BM56", 64}})),
            "conv56a (res56-3x3 first, 128x64-resident): spec grid 1x392x1 tile 64x64x64, plan grid 1x196x1 tile "
            "64x128x64\n"
            "conv56b (res56-3x3 second, 128x64-resident): spec grid 1x392x1 tile 64x64x64, plan grid 1x196x1 tile "
            "64x128x64\n");
}

}  // namespace
