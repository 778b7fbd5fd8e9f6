// The CPU emulator: runs grids of blocks on host threads that stand for the
// GPU's block slots (sms x blocksPerSm), dispatching blocks the way the
// hardware does: a kernel becomes eligible when the work before it in its
// stream is done (or, for a programmatic launch, when every block of the
// previous kernel has triggered or finished); free slots go to the eligible
// kernel of highest priority (lowest number), earliest launched first, blocks
// in index order. Blocks never yield their slot while they wait.
//
// A tile program is any callable taking a Block&; it runs the real protocol
// with HostBackend (see emu/device.h). When every occupied slot is waiting and
// no further block can be dispatched, run() stops and reports the deadlock
// (who waits on which semaphore, expecting what, seeing what) instead of
// hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cusync/emu/host_backend.h"
#include "cusync/tile_order.h"

namespace cusync::emu {

struct Machine {
  uint32_t sms = 4;
  uint32_t blocksPerSm = 1;
  uint32_t slots() const { return sms * blocksPerSm; }
};

struct Block {
  Dim3 idx;
  Dim3 grid;
  uint32_t linear = 0;
  std::string kernel;
};

using Program = std::function<void(Block&)>;

struct Waiter {
  std::string kernel;
  Block block;
  StallInfo info;
  std::string stage;
};

struct Report {
  bool ok = true;
  bool deadlock = false;
  bool timedOut = false;
  std::string message;
  std::vector<Waiter> waiters;
  uint64_t blocksRun = 0;
};

class Emulator {
 public:
  explicit Emulator(Machine m) : machine_(m) {
    if (m.slots() == 0) throw Error(ErrorCode::InvalidArgument, "", "emulated machine has no block slots");
  }

  // Lower priority number = higher priority, as in CUDA.
  uint32_t createStream(int priority = 0) {
    streams_.push_back(StreamRec{priority, {}});
    return static_cast<uint32_t>(streams_.size() - 1);
  }

  void launch(uint32_t stream, std::string name, Dim3 grid, Program program, bool programmatic = false) {
    if (stream >= streams_.size()) throw Error(ErrorCode::InvalidArgument, name, "unknown emulator stream");
    if (grid.count() == 0) throw Error(ErrorCode::InvalidArgument, name, "empty grid");
    auto k = std::make_unique<KernelRec>();
    k->name = std::move(name);
    k->grid = grid;
    k->program = std::move(program);
    k->stream = stream;
    k->programmatic = programmatic;
    k->seq = kernels_.size();
    streams_[stream].kernels.push_back(k.get());
    kernels_.push_back(std::move(k));
  }

  // Holds `stream` for a wall-clock delay without taking a block slot, as a
  // host callback or a wait on another stream does on a real GPU.
  void hostDelay(uint32_t stream, std::chrono::milliseconds delay) {
    launch(stream, "host delay", Dim3(1), Program{});
    kernels_.back()->delay = delay;
    kernels_.back()->isHostOp = true;
  }

  // Runs everything launched so far. Deadlock or timeout gives ok == false.
  Report run(std::chrono::milliseconds timeout = std::chrono::seconds(60));

 private:
  struct KernelRec {
    std::string name;
    Dim3 grid;
    Program program;
    uint32_t stream = 0;
    bool programmatic = false;
    size_t seq = 0;
    uint32_t next = 0;       // next block to dispatch
    uint32_t finished = 0;
    uint32_t triggered = 0;  // blocks that triggered dependents or finished
    bool isHostOp = false;
    bool hostStarted = false;
    std::chrono::milliseconds delay{0};
    std::chrono::steady_clock::time_point hostStart;
    bool complete() const { return finished == grid.count(); }
    bool allTriggered() const { return triggered == grid.count(); }
  };
  struct StreamRec {
    int priority;
    std::deque<KernelRec*> kernels;
  };
  struct Slot;

  bool eligible(const KernelRec& k) const;
  KernelRec* pickKernel() const;
  bool deadlocked() const;
  Report describe(bool deadlock) const;
  void fail(const std::string& what);

  Machine machine_;
  std::vector<StreamRec> streams_;
  std::vector<std::unique_ptr<KernelRec>> kernels_;

  // run() state
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> progress_{0};
  std::atomic<bool> abort_{false};
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t blocksRun_ = 0;
  std::mutex failMu_;
  std::string failure_;
  bool spent_ = false;
};

}  // namespace cusync::emu

#include "cusync/emu/emulator_impl.h"
