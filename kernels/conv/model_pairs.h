// The layer pairs of the benchmark's models: consecutive convolutions of
// ResNet-38 (3x3 pairs at each stage, and the stride-2 transitions into the
// next stage) and VGG-19 (each block's consecutive layers at a 224 x 224
// input; pooling between blocks is a plain kernel). bf16, bias + ReLU; the
// second layer of a ResNet pair ends its block with the residual add.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv/chain.h"

namespace cusync_conv {

struct ModelPair {
  std::string name;
  int64_t H;  // input height and width
  ConvLayer first, second;
};

inline std::vector<ModelPair> resnetPairs() {
  std::vector<ModelPair> v;
  for (auto [c, h] : {std::pair<int64_t, int64_t>{64, 56}, {128, 28}, {256, 14}, {512, 7}})
    v.push_back({"res" + std::to_string(h) + "-3x3", h, {c, c, 3, 1, 1, ConvEpilogue::BiasRelu},
                 {c, c, 3, 1, 1, ConvEpilogue::BiasResidualRelu}});
  for (auto [c, h] : {std::pair<int64_t, int64_t>{64, 56}, {128, 28}, {256, 14}})
    v.push_back({"res" + std::to_string(h) + "-down", h, {c, 2 * c, 3, 1, 2, ConvEpilogue::BiasRelu},
                 {2 * c, 2 * c, 3, 1, 1, ConvEpilogue::BiasResidualRelu}});
  return v;
}

// VGG's first layer reads the 3 RGB channels padded to 8 (conv2d needs a
// multiple of 8).
inline std::vector<ModelPair> vggPairs() {
  struct Block {
    int64_t H, K, layers;
  };
  std::vector<ModelPair> v;
  int64_t cin = 8;
  for (const Block& b : {Block{224, 64, 2}, Block{112, 128, 2}, Block{56, 256, 4}, Block{28, 512, 4},
                         Block{14, 512, 4}}) {
    for (int64_t i = 0; i + 1 < b.layers; ++i)
      v.push_back({"vgg" + std::to_string(b.H) + "-" + std::to_string(i + 1) + std::to_string(i + 2), b.H,
                   {i == 0 ? cin : b.K, b.K, 3, 1, 1, ConvEpilogue::BiasRelu}, {b.K, b.K, 3, 1, 1, ConvEpilogue::BiasRelu}});
    cin = b.K;
  }
  return v;
}

}  // namespace cusync_conv
