// What runs a conv pair's synchronized variants (chain.h): the stages and
// their launches behind one interface, so that the fused variant's kernels
// build in a translation unit of their own (chain_fused.cu).
#pragma once

#include <memory>

#include <cuda_runtime_api.h>

#include "kernels/conv/chain_plan.h"
#include "kernels/conv/conv.h"

namespace cusync_conv::detail {

struct PairRunner {
  virtual ~PairRunner() = default;
  // Both layers on stream s, asynchronous; a1 and a2 carry the run's pointers.
  virtual void run(const Conv2dArgs& a1, const Conv2dArgs& a2, cudaStream_t s) = 0;
};

// The fused variant of plan p (chain_fused.cu).
std::unique_ptr<PairRunner> makeFusedRunner(const ConvFusedPlan& p);

}  // namespace cusync_conv::detail
