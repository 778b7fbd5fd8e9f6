// The ways `cusync-bench conv` runs a convolution layer pair, by name: the
// table the bench times and checks. A variant is a callable that runs both
// layers on given buffers and stream: the baselines, and the synchronized
// chains of kernels/conv/chain.h (pdl, tilesync).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/conv/conv.h"

// What this binary was built with: the conv kernels (target cusync_conv)
// and cuDNN, as CMake found them.
#ifdef CUSYNC_HAVE_CONV
inline constexpr bool kHaveConv = true;
#else
inline constexpr bool kHaveConv = false;
#endif
#ifdef CUSYNC_HAVE_CUDNN
inline constexpr bool kHaveCudnn = true;
#else
inline constexpr bool kHaveCudnn = false;
#endif

namespace cusync_baseline {
class CudnnConv;
}

// One run of a pair: layer 1 reads first.x and writes first.y, which is
// second.x; layer 2 writes second.y. Both have epilogue BiasRelu and a bias.
struct ConvPairArgs {
  cusync_conv::Conv2dArgs first, second;
};

// The synchronized variants' stages, per pair shape and variant (conv_variants.cpp).
struct ConvPairStages;

// What a variant may use besides its arguments.
struct ConvRunEnv {
  cusync_baseline::CudnnConv* cudnn = nullptr;  // null where the bench is built without cuDNN
  std::shared_ptr<ConvPairStages> stages;       // created by prepareConvPair
};

using ConvPairFn = std::function<void(const ConvPairArgs&, ConvRunEnv&, cudaStream_t)>;
using ConvLayerFn = std::function<void(const cusync_conv::Conv2dArgs&, ConvRunEnv&, cudaStream_t)>;

struct ConvVariant {
  std::string name;
  bool cusync;       // a cusync variant, whose speedup over the best baseline is reported; else a baseline
  bool built;        // this binary has its code
  std::string what;  // one line for --help
  ConvPairFn run;    // asynchronous on the stream; throws cusync::Error
  // Why the variant does not run a pair (printed as n/a), or empty where it
  // does; unset: it runs every pair.
  std::function<std::string(const ConvPairArgs&)> notFor;
};

// Every variant, the ones this binary lacks included (built = false).
const std::vector<ConvVariant>& convVariants();

// One layer alone, for the comparison of our convolution with cuDNN's:
// "ours" (our conv2d, its epilogue as in the arguments), "cudnn" (cuDNN's
// fastest convolution + bias + ReLU), "cudnn-conv" (its convolution alone).
struct ConvSingle {
  std::string name;
  bool built;
  ConvLayerFn run;
};
const std::vector<ConvSingle>& convSingles();

// What has to happen before a variant runs inside a CUDA graph capture:
// cuDNN's choice of algorithm for both layers (which runs and times them on
// these buffers, overwriting their outputs), and the synchronized variants'
// stages (device memory for their semaphores). Synchronous.
void prepareConvPair(const ConvPairArgs& p, ConvRunEnv& env, cudaStream_t stream);

// What cuDNN runs for a layer, with its epilogue (bias + ReLU) or without;
// empty without cuDNN or before prepareConvPair.
std::string cudnnPlanOf(const cusync_conv::Conv2dArgs& a, bool epilogue, ConvRunEnv& env);
