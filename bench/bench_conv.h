// cusync-bench conv: ResNet-38 / VGG-19 convolution layer pairs through our
// conv2d and cusync variants, against cuDNN (bench_conv.cu). The command
// line is parsed in cusync_bench.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct ConvBenchOptions {
  std::vector<std::string> models = {"resnet", "vgg"};
  std::vector<int64_t> batches = {1, 4, 8, 16, 32};
  std::vector<std::string> pairs;     // names from convBenchPairs(); empty: every pair of the models
  std::vector<std::string> variants;  // names from convVariants(); empty: every one this binary has
  int iters = 30;
  std::string json = "conv_bench.json", csv = "conv_bench.csv";
  bool checkOnly = false;
  bool graph = false;  // time every variant as replayed CUDA graphs
  std::string traceDir;  // non-empty: our pair variants' traced runs, tile by tile, as DIR/MODEL-PAIR-bB-VARIANT.csv
};

// The layer pairs' names (--pair), e.g. res56-3x3, vgg224-12.
std::vector<std::string> convBenchPairs();
// The variants' names (--variant), the ones this binary lacks included.
std::vector<std::string> convBenchVariants();
// One line per variant for --help: "name: what it runs".
std::string convBenchVariantHelp();

// Exit status: 0 done, 1 a failure (a variant failed its check, a CUDA or
// cuDNN error, an output file could not be written, nothing to run), 3 no
// Hopper GPU here.
int benchConv(const ConvBenchOptions& o);
