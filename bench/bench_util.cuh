// Helpers shared by the cusync-bench commands: error checks, event timing
// (of launches and of CUDA graph replays, one candidate or several
// interleaved), copying bf16 results back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cusync/launch.h"
#include "interleave.h"
#include "watchdog.h"

#define CUDA_OK(x)                                                                \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "cusync-bench: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

namespace bench {

// Whether device 0 is a Hopper GPU (sm_90): an empty string, with its
// properties in *prop; else why not ("no CUDA GPU here", or the GPU's name
// and compute capability), for a command or probe to print before it exits.
inline std::string findHopper(cudaDeviceProp* prop) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "no CUDA GPU here";
  CUDA_OK(cudaGetDeviceProperties(prop, 0));
  if (prop->major != 9)
    return std::string(prop->name) + " (sm_" + std::to_string(prop->major) + std::to_string(prop->minor) +
           ") is not a Hopper GPU";
  return "";
}

// findHopper for a cusync-bench command: false, after telling why on stderr
// (with the CPU-test hint), where device 0 is not a Hopper GPU; the command
// then exits with status 3.
inline bool commandFindsHopper(const char* command, cudaDeviceProp* prop) {
  const std::string why = findHopper(prop);
  if (why.empty()) return true;
  std::fprintf(stderr, "cusync-bench %s: %s; it needs a Hopper GPU (sm_90). The CPU tests run without one: "
               "ctest --test-dir build -L cpu\n", command, why.c_str());
  return false;
}

// A stream that did not drain within hangLimitSeconds() (watchdog.h): says
// what hangs and exits with status 4 at once; exit handlers are skipped,
// since those that free device memory would wait for the hung kernel.
[[noreturn]] inline void exitOnHang(const std::string& what) {
  std::fprintf(stderr,
               "cusync-bench: %s did not finish within %d s: a kernel hangs (its waits never end, or it never "
               "gets the SMs it waits for); exiting ends it\n",
               what.c_str(), hangLimitSeconds());
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(4);
}

// Whether everything enqueued on s finished within hangLimitSeconds().
inline bool drainedInTime(cudaStream_t s) {
  return pollUntil(
      [&] {
        const cudaError_t e = cudaStreamQuery(s);
        if (e == cudaErrorNotReady) return false;
        CUDA_OK(e);
        return true;
      },
      std::chrono::milliseconds(1000LL * hangLimitSeconds()));
}

// cudaStreamSynchronize with the watchdog: waits for everything enqueued on
// s, or exits (exitOnHang) naming `what`.
inline void drain(cudaStream_t s, const std::string& what) {
  if (!drainedInTime(s)) exitOnHang(what);
}

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
  drain(s, "a timing");
  CUDA_OK(cudaGetLastError());
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) CUDA_OK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[iters / 2];
}

// One candidate of a timing: run(i) enqueues its i-th run on the stream
// (operand copy i % copies, where the candidate rotates its operands).
using Run = std::function<void(int)>;

// CUDA graphs of one run each, one per operand copy, captured from
// run(copy) (what run() plans or allocates must be done before), replayed
// in turn by launch(i).
class GraphReplays {
 public:
  GraphReplays(const Run& run, int copies, cudaStream_t s) : s_(s) {
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
        execs_.push_back(cusync::instantiateGraph(g));
      } catch (...) {
        cudaGraphDestroy(g);
        destroy();
        throw;
      }
      cudaGraphDestroy(g);
    }
  }
  ~GraphReplays() { destroy(); }
  GraphReplays(const GraphReplays&) = delete;
  GraphReplays& operator=(const GraphReplays&) = delete;
  void launch(int i) const { CUDA_OK(cudaGraphLaunch(execs_[static_cast<size_t>(i) % execs_.size()], s_)); }

 private:
  void destroy() {
    for (cudaGraphExec_t x : execs_) cudaGraphExecDestroy(x);
    execs_.clear();
  }
  cudaStream_t s_;
  std::vector<cudaGraphExec_t> execs_;
};

// The medians of candidates timed together, and why a candidate has none
// (its launch threw; it is dropped from the later iterations).
struct Timings {
  std::vector<double> ms;  // INFINITY where the candidate failed
  std::vector<std::string> errors;
};

// Medians (ms) of candidates timed interleaved: each iteration runs every
// candidate once, back to back, in an order drawn anew per iteration
// (interleave.h), and each interval between consecutive events is one run;
// `warmups` iterations run untimed first. Interleaving gives every candidate
// the same share of the GPU's clock states: timed one after the other,
// whichever candidate came first after an idle phase ran up to 10% faster
// than the same kernels timed later, at large compute-bound sizes (H100: SM
// clock between 1410 and 1980 MHz under its 700 W cap). Each call passes the
// run's index in the whole sequence, so that consecutive runs take
// consecutive operand copies, as back-to-back runs of one candidate do: with
// the iteration's index, a candidate would find in L2 the copy the candidate
// before it had just read.
// A run that does not finish ends the process (exitOnHang), after
// hung(candidate) has named it where given.
inline Timings interleavedMediansMs(const std::vector<Run>& runs, int iters, cudaStream_t s, int warmups = 3,
                                    const std::function<void(size_t)>& hung = {}) {
  const size_t n = runs.size();
  Timings t{std::vector<double>(n, INFINITY), std::vector<std::string>(n)};
  if (n == 0) return t;
  int seq = 0;  // the run's index in the whole sequence
  auto attempt = [&](size_t c) {
    const int i = seq++;
    if (!t.errors[c].empty()) return;
    try {
      runs[c](i);
    } catch (const std::exception& e) {
      t.errors[c] = e.what();
    }
  };
  for (size_t c : interleavedOrder(n, warmups)) attempt(c);
  const std::vector<size_t> who = interleavedOrder(n, iters);
  std::vector<cudaEvent_t> ev(who.size() + 1);
  for (auto& e : ev) CUDA_OK(cudaEventCreate(&e));
  CUDA_OK(cudaEventRecord(ev[0], s));
  for (size_t j = 0; j < who.size(); ++j) {
    attempt(who[j]);
    CUDA_OK(cudaEventRecord(ev[j + 1], s));
  }
  if (!drainedInTime(s)) {
    // The warm-up runs precede marker 0; where it is not reached, they hang.
    const bool warm = cudaEventQuery(ev[0]) == cudaSuccess;
    const size_t j = warm ? firstUnfinishedRun(who.size(), [&](size_t m) { return cudaEventQuery(ev[m]) == cudaSuccess; })
                          : who.size();
    if (j < who.size() && hung) hung(who[j]);
    exitOnHang(j < who.size() ? "run " + std::to_string(j + 1) + " of " + std::to_string(who.size()) +
                                    " of an interleaved timing (candidate " + std::to_string(who[j] + 1) + " of " +
                                    std::to_string(n) + ")"
                              : std::string("the warm-up of an interleaved timing"));
  }
  CUDA_OK(cudaGetLastError());
  std::vector<std::vector<float>> per(n);
  for (size_t j = 0; j < who.size(); ++j) {
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, ev[j], ev[j + 1]));
    per[who[j]].push_back(ms);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  for (size_t c = 0; c < n; ++c) {
    if (!t.errors[c].empty() || per[c].empty()) continue;
    std::sort(per[c].begin(), per[c].end());
    t.ms[c] = per[c][per[c].size() / 2];
  }
  return t;
}

// Candidates gathered for one interleaved timing: each rotates over its
// operand copies, as back-to-back launches or, with `graph`, as replays of
// one CUDA graph per copy (captured in add()). time() writes each
// candidate's median where add() was told (INFINITY where a launch threw).
// A candidate's `fail` hears of a capture or launch that threw, with the
// phase ("graph capture" or "timing") and what was thrown; a capture that
// throws for a candidate without one throws on out of add(), and the
// candidate is not added.
class Interleaved {
 public:
  using Fail = std::function<void(const char* phase, const std::string& what)>;
  Interleaved(bool graph, cudaStream_t s) : graph_(graph), s_(s) {}
  // Adds run(copy) over `copies` copies, its median to go to *out.
  void add(const Run& run, int copies, double* out, Fail fail = {}) {
    if (graph_) {
      try {
        graphs_.push_back(std::make_unique<GraphReplays>(run, copies, s_));
      } catch (const std::exception& e) {
        if (!fail) throw;
        fail("graph capture", e.what());
        return;
      }
      runs_.push_back([g = graphs_.back().get()](int i) { g->launch(i); });
    } else {
      runs_.push_back([run, copies](int i) { run(i % copies); });
    }
    outs_.push_back(out);
    fails_.push_back(std::move(fail));
  }
  void time(int iters) const {
    const Timings t = interleavedMediansMs(runs_, iters, s_, 3, [&](size_t k) {
      if (fails_[k]) fails_[k]("timing", "this candidate's run did not finish: it hangs");
    });
    for (size_t k = 0; k < runs_.size(); ++k) {
      *outs_[k] = t.ms[k];
      if (!t.errors[k].empty() && fails_[k]) fails_[k]("timing", t.errors[k]);
    }
  }

 private:
  bool graph_;
  cudaStream_t s_;
  std::vector<std::unique_ptr<GraphReplays>> graphs_;
  std::vector<Run> runs_;
  std::vector<double*> outs_;
  std::vector<Fail> fails_;
};

// Host time to enqueue one launch(i), in microseconds (mean over `iters`,
// the stream drained before and after). Where it exceeds the GPU time of a
// launch, back-to-back timings measure the host, not the kernel.
template <class F>
double hostUsPerLaunch(F&& launch, int iters, cudaStream_t s) {
  drain(s, "the work before a host-time measurement");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) launch(i);
  const auto t1 = std::chrono::steady_clock::now();
  drain(s, "a host-time measurement");
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

// n values of a trivially copyable T from the device.
template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
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
