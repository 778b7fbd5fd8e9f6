// Launching a producer/consumer pipeline on the GPU in one of the launch
// modes (cusync/launch_mode.h). Works inside CUDA graph capture: streams are
// forked from and joined back to the caller's stream with events, priorities
// are set per launch, and instantiateGraph() keeps them in the graph.
//
//   cusync::Pipeline pipe(cusync::LaunchMode::Pdl, stream);
//   pipe.launch(gemm1, gemmKernel<...>, {grid1, 128, smem}, args1...);
//   pipe.launch(gemm2, gemmKernel<...>, {grid2, 128, smem}, args2...);
//   pipe.finish();   // joins; call once per run
//
// The kernel's first parameter must be the stage's View; the launcher makes
// it from the stage, so the grid and the stage cannot disagree unnoticed.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cusync/device.h"
#include "cusync/launch_mode.h"
#include "cusync/memory.h"
#include "cusync/programmatic_launch.h"

namespace cusync {

struct LaunchShape {
  dim3 grid;
  dim3 block;
  size_t sharedBytes = 0;
  // A persistent grid: fewer blocks than tiles, each looping on tile().
  bool persistent = false;
  // Of a persistent grid, the blocks that take tickets (0: all of them); a
  // cluster launch may have one block per cluster take them for the cluster.
  uint32_t ticketBlocks = 0;
};

namespace detail {
template <int = 0>
__global__ void startGateKernel(protocol::StartGate gate) {
  protocol::awaitProducersStarted<CudaBackend>(gate);
}
}  // namespace detail

class Pipeline {
 public:
  explicit Pipeline(LaunchMode mode, cudaStream_t stream = nullptr) : mode_(mode), main_(stream) {
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev), "cudaGetDevice");
    if (mode == LaunchMode::Pdl) {
      int major = 0;
      cudaCheck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute");
      if (major < 9)
        throw Error(ErrorCode::LaunchModeUnsupported, "",
                    "pdl needs compute capability 9.0 or newer; this GPU is " + std::to_string(major) + ".x");
    }
    cudaCheck(cudaDeviceGetStreamPriorityRange(&leastPriority_, &greatestPriority_), "cudaDeviceGetStreamPriorityRange");
    cudaCheck(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate");
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline() {
    for (auto& s : side_) {
      cudaEventDestroy(s.done);
      cudaStreamDestroy(s.stream);
    }
    cudaEventDestroy(fork_);
  }

  LaunchMode mode() const { return mode_; }

  // Launches `kernel(view, args...)` for `stage`; the kernel's first
  // parameter must be the stage's View.
  template <class StageT, class... KParams, class... Args>
  void launch(const StageT& stage, void (*kernel)(typename StageT::View, KParams...), const LaunchShape& shape,
              Args&&... args) {
    if (mode_ == LaunchMode::Streams && stage.isConsumer() && (stage.opts() & AvoidWaitKernel))
      requireOneWave(stage.name(), reinterpret_cast<const void*>(kernel), shape);
    launchWith(stage, shape, [&](const cudaLaunchConfig_t& cfg, const typename StageT::View& view) {
      return cudaLaunchKernelEx(&cfg, kernel, view, std::forward<Args>(args)...);
    });
  }

  // For kernels with any signature: places the stage (stream, priority,
  // programmatic attribute, wait kernel) and calls
  //   launcher(const cudaLaunchConfig_t& config, const StageT::View& view) -> cudaError_t
  // which must launch with that config (cudaLaunchKernelEx) and pass the view.
  template <class StageT, class Launcher>
  void launchWith(const StageT& stage, const LaunchShape& shape, Launcher&& launcher) {
    const uint32_t blocks = shape.grid.x * shape.grid.y * shape.grid.z;
    if (blocks == 0) throw Error(ErrorCode::GridMismatch, stage.name(), "launch has no blocks");
    if (!shape.persistent && blocks != stage.numTiles())
      throw Error(ErrorCode::GridMismatch, stage.name(),
                  "launch has " + std::to_string(blocks) + " blocks for " + std::to_string(stage.numTiles()) +
                      " tiles (set LaunchShape::persistent for a persistent grid)");
    if (shape.ticketBlocks > blocks)
      throw Error(ErrorCode::GridMismatch, stage.name(),
                  std::to_string(shape.ticketBlocks) + " ticket-taking blocks in a launch of " + std::to_string(blocks));
    stage.requireProducersLaunched();
    const uint32_t takers = shape.ticketBlocks != 0 ? shape.ticketBlocks : blocks;
    const typename StageT::View view = stage.view(shape.persistent ? takers : 0);
    const Placement p = place(mode_, position_++, stage.isConsumer(), stage.opts());
    cudaStream_t s = streamFor(p, stage.name());
    const int priority = priorityFor(p, stage.name());
    if (p.startGate) {
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributePriority;
      attr[0].val.priority = priority;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(1);
      cfg.blockDim = dim3(1);
      cfg.stream = s;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      cudaCheck(cudaLaunchKernelEx(&cfg, detail::startGateKernel<0>, stage.startGate()), "launch wait kernel",
                stage.name());
    }
    cudaLaunchAttribute attrs[2];
    unsigned n = 0;
    attrs[n].id = cudaLaunchAttributePriority;
    attrs[n++].val.priority = priority;
    if (p.programmatic) attrs[n++] = programmaticDependentLaunch();
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = shape.grid;
    cfg.blockDim = shape.block;
    cfg.dynamicSmemBytes = shape.sharedBytes;
    cfg.stream = s;
    cfg.attrs = attrs;
    cfg.numAttrs = n;
    cudaCheck(launcher(static_cast<const cudaLaunchConfig_t&>(cfg), view), "launch", stage.name());
    stage.countLaunch();
  }

  // Ends one run: joins the side streams back into the caller's stream.
  void finish() {
    for (size_t i = 0; i < side_.size(); ++i) {
      if (!side_[i].used) continue;
      cudaCheck(cudaEventRecord(side_[i].done, side_[i].stream), "cudaEventRecord");
      cudaCheck(cudaStreamWaitEvent(main_, side_[i].done, 0), "cudaStreamWaitEvent");
      side_[i].used = false;
    }
    forked_ = false;
    position_ = 0;
  }

 private:
  // AvoidWaitKernel drops the wait kernel on the promise that every block of
  // the consumer is resident at once: check it, rather than risk a hang.
  static void requireOneWave(const std::string& stage, const void* kernel, const LaunchShape& shape) {
    int dev = 0, sms = 0, perSm = 0;
    cudaCheck(cudaGetDevice(&dev), "cudaGetDevice", stage);
    cudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute", stage);
    const int threads = static_cast<int>(shape.block.x * shape.block.y * shape.block.z);
    cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, shape.sharedBytes),
              "cudaOccupancyMaxActiveBlocksPerMultiprocessor", stage);
    const uint64_t blocks = uint64_t(shape.grid.x) * shape.grid.y * shape.grid.z;
    if (blocks > uint64_t(perSm) * uint64_t(sms))
      throw Error(ErrorCode::LaunchModeUnsupported, stage,
                  "AvoidWaitKernel needs every block resident at once, but " + std::to_string(blocks) +
                      " blocks exceed the " + std::to_string(perSm * sms) + " this GPU holds (" + std::to_string(perSm) +
                      " per SM); drop the flag or launch fewer blocks");
  }

  struct Side {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    bool used = false;
  };

  int priorityFor(const Placement& p, const std::string& stage) const {
    if (mode_ != LaunchMode::Streams) return greatestPriority_;
    const int levels = leastPriority_ - greatestPriority_ + 1;
    if (static_cast<int>(p.priorityRank) >= levels)
      throw Error(ErrorCode::LaunchModeUnsupported, stage,
                  "streams mode needs a priority level per stage; this GPU has " + std::to_string(levels) +
                      " levels, the stage is number " + std::to_string(p.priorityRank + 1));
    return greatestPriority_ + static_cast<int>(p.priorityRank);
  }

  cudaStream_t streamFor(const Placement& p, const std::string& stage) {
    if (mode_ != LaunchMode::Streams) return main_;
    const int priority = priorityFor(p, stage);
    while (side_.size() <= p.stream) {
      Side s;
      const int pr = greatestPriority_ + static_cast<int>(side_.size());
      cudaCheck(cudaStreamCreateWithPriority(&s.stream, cudaStreamNonBlocking, pr), "cudaStreamCreateWithPriority");
      cudaCheck(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "cudaEventCreate");
      side_.push_back(s);
    }
    (void)priority;
    if (!forked_) {
      cudaCheck(cudaEventRecord(fork_, main_), "cudaEventRecord");
      forked_ = true;
    }
    Side& s = side_[p.stream];
    if (!s.used) {
      cudaCheck(cudaStreamWaitEvent(s.stream, fork_, 0), "cudaStreamWaitEvent");
      s.used = true;
    }
    return s.stream;
  }

  LaunchMode mode_;
  cudaStream_t main_;
  int leastPriority_ = 0, greatestPriority_ = 0;
  cudaEvent_t fork_ = nullptr;
  bool forked_ = false;
  unsigned position_ = 0;
  std::vector<Side> side_;
};

// Instantiates a captured graph so that it keeps each kernel node's priority
// (streams mode relies on it to stay deadlock-free).
inline cudaGraphExec_t instantiateGraph(cudaGraph_t graph) {
  cudaGraphExec_t exec = nullptr;
  cudaCheck(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagUseNodePriority),
            "cudaGraphInstantiateWithFlags");
  return exec;
}

}  // namespace cusync
#endif  // __CUDACC__
