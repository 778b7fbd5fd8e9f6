// Launching the attention kernel for a stage view (NoSync for
// attention(args, stream)): kernel parameters, tensor maps, shared memory,
// and the configuration by rows per tile.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cmath>

#include "kernels/attention/attention.h"
#include "kernels/attention/kernel/attention_kernel.cuh"
#include "kernels/gemm/host/launch.cuh"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_attn::detail {

namespace gd = cusync_gemm::detail;

// Threads and shared memory of the kernel for a plan.
inline int threadsOf(const AttentionPlan& p) { return 128 * (p.rowsPerTile / 64 + 1); }
inline int smemOf(const AttentionPlan& p) {
  return p.rowsPerTile == 128 ? AttnSmem<2, kRingSlots>::kRequest : AttnSmem<1, kRingSlots>::kRequest;
}

// The workspace carved into the combine's counters, (max, sum) pairs and partial O.
inline AttnWorkspace carveWorkspace(const AttentionPlan& p, void* base) {
  AttnWorkspace w;
  if (p.splits <= 1) return w;
  auto* b = static_cast<unsigned char*>(base);
  const size_t parts = size_t(p.tiles) * p.splits * p.rowsPerTile;
  const size_t counters = (size_t(p.tiles) * 4 + 255) / 256 * 256;
  const size_t ml = (parts * 8 + 255) / 256 * 256;
  w.arrived = reinterpret_cast<uint32_t*>(b);
  w.partialML = reinterpret_cast<float2*>(b + counters);
  w.partialO = reinterpret_cast<float*>(b + counters + ml);
  return w;
}

template <class View>
AttnParams<View> buildParams(const AttentionArgs& a, const AttentionPlan& p, const View& view, bool waitPrior,
                             bool heavyFirst) {
  if (p.splits > 1 && a.workspace == nullptr)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "attention",
                        "this launch splits keys " + std::to_string(p.splits) +
                            " ways and needs a workspace of attentionWorkspaceBytes() bytes, zeroed once");
  AttnParams<View> k{};
  const uint64_t width = static_cast<uint64_t>(a.heads) * kHeadDim;
  k.tmQ = gd::makeTensorMap2D(a.Q, true, width, static_cast<uint64_t>(a.M), 64, static_cast<uint32_t>(p.rowsPerTile));
  k.tmKV = gd::makeTensorMap2D(a.kv, true, 2 * width, static_cast<uint64_t>(a.L + a.M), 64, kKeyBlock);
  k.out = static_cast<__nv_bfloat16*>(a.out);
  k.M = a.M;
  k.L = a.L;
  k.heads = a.heads;
  k.splits = p.splits;
  k.queryBlocks = p.queryBlocks;
  k.scaleLog2 = static_cast<float>(1.4426950408889634 / std::sqrt(double(kHeadDim)));
  k.ws = carveWorkspace(p, a.workspace);
  k.waitPrior = waitPrior;
  k.heavyFirst = heavyFirst;
  k.view = view;
  return k;
}

template <int NC, class View>
void launchWithRows(const AttnParams<View>& k, const cudaLaunchConfig_t& cfg) {
  constexpr int NS = kRingSlots;
  auto* kernel = attentionKernel<NC, NS, View>;
  static std::atomic<uint64_t> prepared{0};
  gd::prepareKernel(kernel, AttnSmem<NC, NS>::kRequest, prepared);
  if (cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, k); e != cudaSuccess) gd::throwCuda(e, "launch attention");
}

// Launches the kernel for `view` with cfg's stream and attributes; grid,
// block and shared memory come from the plan.
template <class View>
void launchAttention(const AttentionArgs& a, const AttentionPlan& p, const View& view, cudaLaunchConfig_t cfg,
                     bool waitPrior, bool heavyFirst) {
  const AttnParams<View> k = buildParams(a, p, view, waitPrior, heavyFirst);
  cfg.gridDim = dim3(p.tiles * static_cast<uint32_t>(p.splits));
  cfg.blockDim = dim3(threadsOf(p));
  cfg.dynamicSmemBytes = smemOf(p);
  if (p.rowsPerTile == 128)
    launchWithRows<2>(k, cfg);
  else
    launchWithRows<1>(k, cfg);
}

}  // namespace cusync_attn::detail
