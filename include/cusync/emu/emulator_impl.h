// Out-of-line parts of emu::Emulator (header-only library).
#pragma once

#include <sstream>

#include "cusync/protocol.h"

namespace cusync::emu {

struct Emulator::Slot : BlockHooks {
  Emulator* emu = nullptr;
  uint32_t id = 0;
  std::thread thread;
  std::condition_variable cv;
  // Guarded by emu->mu_.
  KernelRec* kernel = nullptr;
  Block block;
  bool busy = false;
  bool stop = false;
  bool blockTriggered = false;
  // Wait state, read by the deadlock detector.
  std::atomic<bool> waiting{false};
  std::atomic<uint64_t> observed{0};
  std::mutex infoMu;
  StallInfo info;

  void spinning(const StallInfo& i) override {
    if (emu->abort_.load()) throw Aborted{};
    // Read the progress count before polling again: if nothing posts after
    // this, the recorded observation stays current and the detector may act.
    const uint64_t g = emu->progress_.load();
    if (protocol::reached(HostBackend::loadAcquire(i.addr), i.expected)) return;
    {
      std::lock_guard<std::mutex> lk(infoMu);
      info = i;
      info.seen = HostBackend::loadAcquire(i.addr);
    }
    observed.store(g);
    waiting.store(true);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  void spinDone() override { waiting.store(false); }
  void triggered() override {
    std::lock_guard<std::mutex> lk(emu->mu_);
    if (!blockTriggered) {
      blockTriggered = true;
      ++kernel->triggered;
    }
    emu->cv_.notify_all();
  }
  void progressed() override { emu->progress_.fetch_add(1); }

  void loop() {
    currentBlock = this;
    std::unique_lock<std::mutex> lk(emu->mu_);
    for (;;) {
      cv.wait(lk, [&] { return busy || stop; });
      if (!busy) return;
      KernelRec* k = kernel;
      Block b = block;
      lk.unlock();
      try {
        k->program(b);
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        emu->fail(std::string("block ") + tileName(b.idx) + " of '" + b.kernel + "' threw: " + e.what());
      } catch (...) {
        emu->fail("block " + tileName(b.idx) + " of '" + b.kernel + "' threw an unknown exception");
      }
      waiting.store(false);
      lk.lock();
      if (!blockTriggered) ++k->triggered;
      ++k->finished;
      busy = false;
      ++emu->blocksRun_;
      emu->cv_.notify_all();
    }
  }
};

inline void Emulator::fail(const std::string& what) {
  std::lock_guard<std::mutex> lk(failMu_);
  if (failure_.empty()) failure_ = what;
  abort_.store(true);
}

inline bool Emulator::eligible(const KernelRec& k) const {
  const auto& q = streams_[k.stream].kernels;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] != &k) continue;
    if (i == 0) return true;
    for (size_t j = 0; j + 1 < i; ++j)
      if (!q[j]->complete()) return false;
    const KernelRec& prev = *q[i - 1];
    if (prev.complete()) return true;
    return k.programmatic && prev.allTriggered() && eligible(prev);
  }
  return false;
}

inline Emulator::KernelRec* Emulator::pickKernel() const {
  KernelRec* best = nullptr;
  for (const StreamRec& s : streams_)
    for (KernelRec* k : s.kernels) {
      if (k->isHostOp || k->next >= k->grid.count() || !eligible(*k)) continue;
      if (!best || s.priority < streams_[best->stream].priority ||
          (s.priority == streams_[best->stream].priority && k->seq < best->seq))
        best = k;
      break;  // later kernels of this stream wait behind k
    }
  return best;
}

inline bool Emulator::deadlocked() const {
  bool anyBusy = false;
  const uint64_t now = progress_.load();
  for (const auto& s : slots_) {
    if (!s->busy) continue;
    anyBusy = true;
    if (!s->waiting.load() || s->observed.load() != now) return false;
  }
  return anyBusy;
}

inline Report Emulator::describe(bool deadlock) const {
  Report r;
  r.ok = false;
  r.deadlock = deadlock;
  r.blocksRun = blocksRun_;
  std::ostringstream os;
  os << (deadlock ? "deadlock: every occupied block slot is waiting and no block can be dispatched\n"
                  : "emulated run timed out\n");
  for (const auto& s : slots_) {
    if (!s->busy) continue;
    Waiter w;
    w.kernel = s->block.kernel;
    w.block = s->block;
    {
      std::lock_guard<std::mutex> lk(s->infoMu);
      w.info = s->info;
      w.stage = s->info.stage ? s->info.stage : "";
    }
    w.info.stage = nullptr;
    if (s->waiting.load())
      os << "  slot " << s->id << ": '" << w.kernel << "' block " << tileName(w.block.idx) << " stage '" << w.stage
         << "' tile " << tileName(w.info.tile) << " waits on input " << w.info.input << " semaphore " << w.info.sem
         << " for " << w.info.expected << ", sees " << w.info.seen << "\n";
    else
      os << "  slot " << s->id << ": '" << w.kernel << "' block " << tileName(w.block.idx) << " running\n";
    r.waiters.push_back(w);
  }
  for (const StreamRec& st : streams_)
    for (const KernelRec* k : st.kernels)
      if (!k->complete())
        os << "  kernel '" << k->name << "' (priority " << st.priority << "): " << k->next << " of "
           << k->grid.count() << " blocks dispatched, " << k->finished << " finished\n";
  r.message = os.str();
  return r;
}

inline Report Emulator::run(std::chrono::milliseconds timeout) {
  if (spent_) throw Error(ErrorCode::InvalidArgument, "", "this emulator already aborted a run; make a new one");
  abort_.store(false);
  slots_.clear();
  for (uint32_t i = 0; i < machine_.slots(); ++i) {
    auto s = std::make_unique<Slot>();
    s->emu = this;
    s->id = i;
    slots_.push_back(std::move(s));
  }
  for (auto& s : slots_) s->thread = std::thread([p = s.get()] { p->loop(); });

  Report result;
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      if (abort_.load()) break;
      for (auto& k : kernels_) {  // host operations take no slot, only time
        if (!k->isHostOp || k->complete() || !eligible(*k)) continue;
        if (!k->hostStarted) {
          k->hostStarted = true;
          k->hostStart = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - k->hostStart >= k->delay) {
          k->next = k->finished = k->triggered = 1;
        }
      }
      for (auto& s : slots_) {
        if (s->busy) continue;
        KernelRec* k = pickKernel();
        if (!k) break;
        const uint32_t i = k->next++;
        s->kernel = k;
        s->block = Block{rowMajorTile(i, k->grid), k->grid, i, k->name};
        s->blockTriggered = false;
        s->busy = true;
        s->cv.notify_one();
      }
      bool done = true;
      for (const auto& k : kernels_) done = done && k->complete();
      if (done) break;
      bool hostPending = false;
      for (const auto& k : kernels_) hostPending = hostPending || (k->isHostOp && !k->complete());
      if (!hostPending && deadlocked()) {  // state is frozen: triggers and finishes need mu_
        result = describe(true);
        break;
      }
      if (std::chrono::steady_clock::now() - start > timeout) {
        result = describe(false);
        result.timedOut = true;
        break;
      }
      cv_.wait_for(lk, std::chrono::milliseconds(1));
    }
    if (!result.ok) abort_.store(true);
    for (auto& s : slots_) {
      s->stop = true;
      s->cv.notify_one();
    }
  }
  for (auto& s : slots_) s->thread.join();
  {
    std::lock_guard<std::mutex> lk(failMu_);
    if (!failure_.empty() && result.ok) {
      result.ok = false;
      result.message = failure_;
    }
  }
  result.blocksRun = blocksRun_;
  if (!result.ok) {
    spent_ = true;
  } else {
    for (auto& s : streams_) s.kernels.clear();
    kernels_.clear();
  }
  return result;
}

}  // namespace cusync::emu
