// Workspace: memory that a kernel library keeps with one stage between runs
// (the GEMM's split-K unit counter, partial flags and fp32 partials). Each
// cusync::Stage owns one (Stage::workspace()), empty until the library's
// first launch that needs it asks for its size with reserve(), and freed
// with the stage. Nothing is keyed by address, so a stage made where a
// destroyed one lived starts with nothing of the old one's.
//
//   const cusync::WorkspaceRegions w = stage.workspace().reserve(stateBytes, scratchBytes);
//   // w.state: zeroed when allocated; every completed run must leave it zeroed
//   // w.scratch: what one run writes and then reads (zeroed when allocated too)
//
// The allocation is made as Memory::allocZeroed makes it: for the GPU
// (DeviceMemory) with the thread's capture mode relaxed and zeroed on a
// private stream, so a first launch inside a CUDA graph capture neither
// records the zeroing into the graph nor leaves the memory unzeroed until a
// replay (docs/design.md, "Per-stage state and graph capture").
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <vector>

#include "cusync/memory.h"

namespace cusync {

// The two regions of a workspace, in one allocation: state (counters and
// flags, the start of the allocation) and scratch (kAlign-aligned, after it).
struct WorkspaceRegions {
  void* state = nullptr;
  void* scratch = nullptr;
};

template <class Memory = DeviceMemory>
class Workspace {
 public:
  static constexpr size_t kAlign = 256;

  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
    Memory::release(current_);
    for (void* p : outgrown_) Memory::release(p);
  }

  // Regions of at least stateBytes and scratchBytes. A request that fits
  // returns the buffer of the last one; a larger one allocates a new,
  // zeroed buffer with the larger of the two sizes in each region. The
  // outgrown buffer is kept until the workspace is destroyed: kernels still
  // queued, or a captured graph, may use it. The layout of one buffer never
  // changes (the scratch region starts at its state capacity), so a launch
  // that uses less state than an earlier one finds the rest still zero.
  // Safe to call from several threads.
  WorkspaceRegions reserve(size_t stateBytes, size_t scratchBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_ == nullptr || stateBytes > stateCap_ || scratchBytes > scratchCap_) {
      const size_t ns = std::max(roundUp(std::max(stateBytes, stateCap_)), kAlign);
      const size_t nx = roundUp(std::max(scratchBytes, scratchCap_));
      outgrown_.reserve(outgrown_.size() + 1);  // so that nothing below throws after the allocation
      void* p = Memory::allocZeroed(ns + nx);
      if (current_) outgrown_.push_back(current_);
      current_ = p;
      stateCap_ = ns;
      scratchCap_ = nx;
    }
    WorkspaceRegions r;
    r.state = current_;
    r.scratch = static_cast<unsigned char*>(current_) + stateCap_;
    return r;
  }

  // Zeroes the state region of the current buffer (Stage::reset(): no kernel
  // of the stage may be running).
  void zeroState() {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_) Memory::zero(current_, stateCap_);
  }

  // Sizes of the current buffer's regions (0 before the first reserve()),
  // and how many buffers it holds, outgrown ones included.
  size_t stateCapacity() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_ ? stateCap_ : 0;
  }
  size_t scratchCapacity() const {
    std::lock_guard<std::mutex> lock(mu_);
    return current_ ? scratchCap_ : 0;
  }
  size_t buffers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outgrown_.size() + (current_ ? 1 : 0);
  }

 private:
  static size_t roundUp(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

  mutable std::mutex mu_;
  void* current_ = nullptr;
  size_t stateCap_ = 0, scratchCap_ = 0;
  std::vector<void*> outgrown_;
};

}  // namespace cusync
