// Shared body of the synced pairs: a StagePair with policy P whose two GEMMs
// go through the GEMM's public staged entry (cusync_gemm::gemm(args, stage,
// pipeline)), placed by a cusync::Pipeline.
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include "cusync/launch.h"
#include "kernels/gemm/gemm_staged.cuh"
#include "kernels/mlp/synced.h"

namespace cusync_mlp::detail {

template <class P>
class SyncedPairImpl final : public SyncedPair {
 public:
  explicit SyncedPairImpl(const PairPlan& p) : st_(p) {}
  void launch(const Buffers& b, cudaStream_t s, cusync::LaunchMode mode) override {
    using cusync_gemm::Epilogue;
    // The MLP runs bf16 with Linear weights ([N, K]): only those kernels are built.
    using Fams = cusync_gemm::Families<cusync_gemm::Family::Bf16NK>;
    const cusync_gemm::GemmArgs a1 = st_.gemm1Args(b), a2 = st_.gemm2Args(b);
    cusync::Pipeline& pipe = pipeline(mode, s);
    cusync_gemm::gemm<Fams, cusync_gemm::Epilogues<Epilogue::Gelu, Epilogue::SwiGLU>>(a1, st_.prod, pipe);
    cusync_gemm::gemm<Fams, cusync_gemm::Epilogues<Epilogue::Identity>>(a2, st_.cons, pipe);
    pipe.finish();
  }

 private:
  // One pipeline per (mode, stream), kept: creating one queries the device.
  cusync::Pipeline& pipeline(cusync::LaunchMode mode, cudaStream_t s) {
    for (auto& [m, str, p] : pipes_)
      if (m == mode && str == s) return *p;
    pipes_.emplace_back(mode, s, std::make_unique<cusync::Pipeline>(mode, s));
    return *std::get<2>(pipes_.back());
  }

  StagePair<P> st_;
  std::vector<std::tuple<cusync::LaunchMode, cudaStream_t, std::unique_ptr<cusync::Pipeline>>> pipes_;
};

}  // namespace cusync_mlp::detail
