// The ResNet-38 and VGG-19 convolution chains (specs/resnet38.cusync,
// specs/vgg19.cusync) through Conv2DTileSync on the CPU emulator with the
// H100's 132 SMs and each layer's tiles as the Hopper kernels run them at
// the chain's batch (planConvStage, kernels/conv/chain_plan.h): in every
// launch mode the plan runs to the end, run after run, and every input pixel
// a consumer step reads (filter halo and stride included) comes from a
// producer tile of the current run once the step's waits return.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "cusync/emu/pipeline.h"
#include "cusync/stage.h"
#include "kernels/conv/chain_plan.h"

using namespace cusync;
using namespace std::chrono_literals;

namespace {

constexpr int kSms = 132;

struct Layer {
  const char* name;
  int input;     // the layer it reads; -1: a tensor computed before the chain
  int residual;  // the layer its epilogue adds; -1: none (or one ready by transitivity)
  uint32_t H, C, K, R, stride;
};

// Stage 1 at 56 x 56, then each stage entered by a 3x3 stride-2 convolution
// and its 1x1 stride-2 shortcut, which the next convolution adds.
std::vector<Layer> resnetLayers() {
  return {{"conv56a", -1, -1, 56, 64, 64, 3, 1},   {"conv56b", 0, -1, 56, 64, 64, 3, 1},
          {"down28", 1, -1, 56, 64, 128, 3, 2},    {"short28", 1, -1, 56, 64, 128, 1, 2},
          {"conv28a", 2, 3, 28, 128, 128, 3, 1},   {"conv28b", 4, -1, 28, 128, 128, 3, 1},
          {"conv28c", 5, -1, 28, 128, 128, 3, 1},  {"down14", 6, -1, 28, 128, 256, 3, 2},
          {"short14", 6, -1, 28, 128, 256, 1, 2},  {"conv14a", 7, 8, 14, 256, 256, 3, 1},
          {"conv14b", 9, -1, 14, 256, 256, 3, 1},  {"conv14c", 10, -1, 14, 256, 256, 3, 1},
          {"down7", 11, -1, 14, 256, 512, 3, 2},   {"short7", 11, -1, 14, 256, 512, 1, 2},
          {"conv7a", 12, 13, 7, 512, 512, 3, 1},   {"conv7b", 14, -1, 7, 512, 512, 3, 1},
          {"conv7c", 15, -1, 7, 512, 512, 3, 1}};
}

// Five blocks; pooling between them is a plain kernel, so each block's first
// layer reads a tensor computed before its chain.
std::vector<Layer> vggLayers() {
  std::vector<Layer> v;
  const uint32_t blocks[5][4] = {{224, 8, 64, 2}, {112, 64, 128, 2}, {56, 128, 256, 4}, {28, 256, 512, 4},
                                 {14, 512, 512, 4}};  // H, C in, K, layers
  static const char* names[] = {"conv1_1", "conv1_2", "conv2_1", "conv2_2", "conv3_1", "conv3_2",
                                "conv3_3", "conv3_4", "conv4_1", "conv4_2", "conv4_3", "conv4_4",
                                "conv5_1", "conv5_2", "conv5_3", "conv5_4"};
  for (const auto& b : blocks)
    for (uint32_t l = 0; l < b[3]; ++l)
      v.push_back({names[v.size()], l == 0 ? -1 : int(v.size()) - 1, -1, b[0], l == 0 ? b[1] : b[2], b[2], 3, 1});
  return v;
}

policy::Conv2DTileSync convOf(const Layer& l, uint32_t N) {
  policy::Conv2DTileSync p;
  p.R = p.S = l.R;
  p.padH = p.padW = l.R / 2;
  p.C = l.C;
  p.H = p.W = l.H;
  p.strideH = p.strideW = l.stride;
  p.N = N;
  return p;
}

// The residual: the tile's own pixels, all channels (a 1x1 convolution's waits).
policy::Conv2DTileSync residualOf(const Layer& l, uint32_t N) {
  const uint32_t Ho = convOf(l, N).outH();
  policy::Conv2DTileSync p;
  p.R = p.S = 1;
  p.padH = p.padW = 0;
  p.C = l.K;
  p.H = p.W = Ho;
  p.N = N;
  return p;
}

uint32_t outSide(const Layer& l) { return (l.H + 2 * (l.R / 2) - l.R) / l.stride + 1; }

// The layer's stage as the GPU runs it at batch N (the epilogue does not
// enter the plan): grid and tile {channels, pixels, k step}.
StageShape shapeOf(const Layer& l, uint32_t N) {
  const cusync_conv::ConvLayer c{l.C, l.K, int(l.R), int(l.R / 2), int(l.stride), cusync_conv::ConvEpilogue::BiasRelu};
  const cusync_conv::ConvStagePlan p = cusync_conv::planConvStage(N, l.H, l.H, c, kSms);
  return {p.grid, p.tile};
}

using Head = Stage<policy::NoSync, policy::Conv2DTileSync, HostMemory>;
using Link = Stage<policy::Conv2DTileSync, policy::Conv2DTileSync, HostMemory>;

// A run stamp per output tile of every layer, and the first stale read seen.
struct Stamps {
  std::vector<std::unique_ptr<std::atomic<uint32_t>[]>> tiles;
  std::vector<uint32_t> gridX;
  std::mutex mu;
  std::string firstStale;

  void stale(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    if (firstStale.empty()) firstStale = what;
  }
};

class Chain {
 public:
  Chain(std::vector<Layer> layers, uint32_t N) : layers_(std::move(layers)), N_(N) {
    for (const Layer& l : layers_) {
      const StageShape s = shapeOf(l, N);
      if (l.input < 0) {
        heads_.push_back(std::make_unique<Head>(l.name, s.grid, s.tile, policy::NoSync{}, policy::Conv2DTileSync{}));
        links_.push_back(nullptr);
      } else {
        heads_.push_back(nullptr);
        links_.push_back(std::make_unique<Link>(l.name, s.grid, s.tile, convOf(l, N), policy::Conv2DTileSync{}));
      }
      shapes_.push_back(s);
      stamps_.tiles.emplace_back(new std::atomic<uint32_t>[s.grid.x * s.grid.y]());
      stamps_.gridX.push_back(s.grid.x);
    }
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      if (l.input >= 0) pairWith(size_t(l.input), *links_[i], convOf(l, N));
      if (l.residual >= 0) pairWith(size_t(l.residual), *links_[i], residualOf(l, N));
    }
  }

  // Launches every layer in chain order for run `run` (from 1).
  void launch(emu::Pipeline& pipe, uint32_t run) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      if (heads_[i]) {
        pipe.launch(*heads_[i], [this, i, run](const auto& v, emu::Block& b) { program(i, run, v, b); });
      } else {
        pipe.launch(*links_[i], [this, i, run](const auto& v, emu::Block& b) { program(i, run, v, b); });
      }
    }
    pipe.finish();
  }

  const std::string& firstStale() const { return stamps_.firstStale; }
  size_t size() const { return layers_.size(); }

 private:
  void pairWith(size_t prod, Link& cons, const policy::Conv2DTileSync& pol) {
    if (heads_[prod]) {
      pair(*heads_[prod], cons, pol);
    } else {
      pair(*links_[prod], cons, pol);
    }
  }

  // One output tile: walks the input's k blocks (waiting, then checking
  // every pixel the step reads), then the residual's channels (every pixel
  // of the tile), then posts.
  template <class V>
  void program(size_t li, uint32_t run, const V& v, emu::Block& b) {
    const TileWork w = emu::tile(v, b);
    if (!w.valid) return;
    const Layer& l = layers_[li];
    const Dim3 tile = shapes_[li].tile;
    const uint32_t side = outSide(l), pixels = N_ * side * side;
    const uint32_t row = w.tile.y * tile.y, rowEnd = std::min(row + tile.y, pixels);
    if (l.input >= 0) {
      const Dim3 in = shapes_[size_t(l.input)].tile;
      const uint32_t pad = l.R / 2;
      for (uint32_t k = 0; k < l.R * l.R * l.C; k += tile.z) {
        emu::wait(v, w, Read{k, row, 0, 0}, 0);
        const uint32_t rs = k / l.C, r = rs / l.R, s = rs % l.R, tx = k % l.C / in.x;
        for (uint32_t p = row; p < rowEnd; ++p) {
          const int64_t hi = int64_t(p % (side * side) / side) * l.stride + r - pad;
          const int64_t wi = int64_t(p % side) * l.stride + s - pad;
          if (hi < 0 || hi >= l.H || wi < 0 || wi >= l.H) continue;  // padding
          const int64_t q = (int64_t(p / (side * side)) * l.H + hi) * l.H + wi;
          check(size_t(l.input), tx, uint32_t(q / in.y), run, l, k, p);
        }
      }
    }
    if (l.residual >= 0) {
      const Dim3 res = shapes_[size_t(l.residual)].tile;
      for (uint32_t k = 0; k < l.K; k += tile.z) {
        emu::wait(v, w, Read{k, row, 0, 0}, 1);
        for (uint32_t p = row; p < rowEnd; ++p) check(size_t(l.residual), k / res.x, p / res.y, run, l, k, p);
      }
    }
    stamps_.tiles[li][w.tile.y * stamps_.gridX[li] + w.tile.x].store(run, std::memory_order_relaxed);
    emu::post(v, w);
  }

  void check(size_t prod, uint32_t tx, uint32_t ty, uint32_t run, const Layer& l, uint32_t k, uint32_t p) {
    const uint32_t seen = stamps_.tiles[prod][ty * stamps_.gridX[prod] + tx].load(std::memory_order_relaxed);
    if (seen != run)
      stamps_.stale(std::string(l.name) + " pixel " + std::to_string(p) + " at k " + std::to_string(k) +
                    " read tile (" + std::to_string(tx) + "," + std::to_string(ty) + ") of " + layers_[prod].name +
                    " from run " + std::to_string(seen) + " in run " + std::to_string(run));
  }

  std::vector<Layer> layers_;
  uint32_t N_;
  std::vector<StageShape> shapes_;  // per layer, from the plan
  std::vector<std::unique_ptr<Head>> heads_;
  std::vector<std::unique_ptr<Link>> links_;
  Stamps stamps_;
};

void runChain(const std::vector<Layer>& layers, uint32_t N) {
  for (LaunchMode mode : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl}) {
    SCOPED_TRACE(std::string(toString(mode)) + " N=" + std::to_string(N));
    Chain chain(layers, N);
    emu::Emulator emu({132, 1});
    emu::Pipeline pipe(emu, mode);
    for (uint32_t run = 1; run <= 2; ++run) {
      chain.launch(pipe, run);
      const emu::Report rep = emu.run(120s);
      ASSERT_TRUE(rep.ok) << rep.message;
      ASSERT_EQ(chain.firstStale(), "");
    }
  }
}

}  // namespace

TEST(ConvChainsOnEmulator, Resnet38At132Sms) {
  for (uint32_t N : {1u, 3u, 8u}) runChain(resnetLayers(), N);
}

// One image, and the specs' batch.
TEST(ConvChainsOnEmulator, Vgg19At132Sms) {
  for (uint32_t N : {1u, 8u}) runChain(vggLayers(), N);
}

// A consumer built for the wrong geometry is refused before anything runs.
TEST(ConvChainsOnEmulator, MismatchedLayerIsRefused) {
  std::vector<Layer> layers = resnetLayers();
  layers[2].stride = 1;  // down28 described with a 28 x 28 input, while conv56b writes 56 x 56
  layers[2].H = 28;
  EXPECT_THROW(Chain(layers, 1), Error);
}
