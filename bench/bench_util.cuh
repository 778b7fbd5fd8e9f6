// Helpers shared by the cusync-bench commands: error checks, event timing
// (of launches and of CUDA graph replays), copying bf16 results back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cusync/launch.h"

#define CUDA_OK(x)                                                                \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "cusync-bench: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

namespace bench {

// Median over `iters` back-to-back launches of launch(i) on stream s, after
// `warmups` untimed ones; each interval between consecutive events is one launch.
template <class F>
double medianMs(F&& launch, int iters, cudaStream_t s, int warmups = 5) {
  for (int i = 0; i < warmups; ++i) launch(i);
  std::vector<cudaEvent_t> ev(iters + 1);
  for (auto& e : ev) CUDA_OK(cudaEventCreate(&e));
  CUDA_OK(cudaEventRecord(ev[0], s));
  for (int i = 0; i < iters; ++i) {
    launch(i);
    CUDA_OK(cudaEventRecord(ev[i + 1], s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaGetLastError());
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) CUDA_OK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[iters / 2];
}

// Median ms of run(copy) over `copies` operand copies in turn, so that a run
// finds no operands of the run before in L2: back-to-back runs, or with
// `graph` replays of one CUDA graph per copy, each holding one run (captured
// here: what run() plans or allocates must be done before).
template <class F>
double rotatedMedianMs(F&& run, int copies, cudaStream_t s, int iters, bool graph) {
  if (!graph) return medianMs([&](int i) { run(i % copies); }, iters, s);
  std::vector<cudaGraphExec_t> execs;
  auto destroy = [&] {
    for (cudaGraphExec_t x : execs) cudaGraphExecDestroy(x);
  };
  for (int c = 0; c < copies; ++c) {
    cudaGraph_t g = nullptr;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      run(c);
    } catch (...) {
      cudaStreamEndCapture(s, &g);
      if (g) cudaGraphDestroy(g);
      destroy();
      throw;
    }
    CUDA_OK(cudaStreamEndCapture(s, &g));
    try {
      execs.push_back(cusync::instantiateGraph(g));
    } catch (...) {
      cudaGraphDestroy(g);
      destroy();
      throw;
    }
    cudaGraphDestroy(g);
  }
  const double ms = medianMs([&](int i) { CUDA_OK(cudaGraphLaunch(execs[i % copies], s)); }, iters, s);
  destroy();
  return ms;
}

// Host time to enqueue one launch(i), in microseconds (mean over `iters`,
// the stream drained before and after). Where it exceeds the GPU time of a
// launch, back-to-back timings measure the host, not the kernel.
template <class F>
double hostUsPerLaunch(F&& launch, int iters, cudaStream_t s) {
  CUDA_OK(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) launch(i);
  const auto t1 = std::chrono::steady_clock::now();
  CUDA_OK(cudaStreamSynchronize(s));
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

// Device allocations freed together (of one benchmark point).
struct Allocations {
  std::vector<void*> all;
  Allocations() = default;
  Allocations(const Allocations&) = delete;
  Allocations& operator=(const Allocations&) = delete;
  void* get(size_t bytes) {
    void* p = nullptr;
    CUDA_OK(cudaMalloc(&p, std::max<size_t>(bytes, 16)));
    all.push_back(p);
    return p;
  }
  ~Allocations() {
    for (void* p : all) cudaFree(p);
  }
};

// The non-empty items of a comma-separated command-line list.
inline std::vector<std::string> commaList(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find(',', p);
    if (q == std::string::npos) q = s.size();
    if (q > p) out.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

// n bf16 values from the device, as floats.
inline std::vector<float> downloadBf16(const void* p, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  CUDA_OK(cudaMemcpy(h.data(), p, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

}  // namespace bench
