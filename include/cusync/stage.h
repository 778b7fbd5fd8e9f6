// Stage: one kernel launch seen as a grid of tiles, with an input policy (how
// it waits on its producers) and an output policy (how it signals consumers).
// The host object owns the device state (semaphores, ticket counters, order
// table); kernels get a StageView by value from view().
//
//   cusync::Stage<NoSync, RowSync> gemm1("gemm1", grid1, tile1);
//   cusync::Stage<RowSync, NoSync> gemm2("gemm2", grid2, tile2);
//   cusync::pair(gemm1, gemm2);        // checks shapes and policies, links semaphores
//   kernel1<<<...>>>(gemm1.view(), ...);
//   kernel2<<<...>>>(gemm2.view(), ...);  // under one of the launch modes of launch.h
//
// Runs are counted on the device (one ticket per tile per run), so a producer
// and its consumers must be launched the same number of times; a stage
// launched alone (say, a warm-up of the producer) breaks the pairing until
// reset() is called on every stage of the pipeline. The launchers
// (cusync::Pipeline, emu::Pipeline) also count launches on the host and
// refuse to launch a consumer whose producers have not been launched more
// often than it: launched first, it would wait forever.
//
// A kernel library may keep memory with a stage between runs (the GEMM's
// split-K counter, flags and partials) in the stage's workspace(), which the
// stage owns and frees with the rest of its device state (cusync/workspace.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cusync/error.h"
#include "cusync/memory.h"
#include "cusync/policies.h"
#include "cusync/protocol.h"
#include "cusync/stage_view.h"
#include "cusync/tile_order.h"
#include "cusync/workspace.h"

namespace cusync {

template <class InPolicy = policy::NoSync, class OutPolicy = policy::NoSync, class Memory = DeviceMemory>
class Stage {
 public:
  using In = InPolicy;
  using Out = OutPolicy;
  using View = StageView<InPolicy, OutPolicy>;
  template <class, class, class>
  friend class Stage;

  Stage(std::string name, Dim3 grid, Dim3 tile, InPolicy in = {}, OutPolicy out = {}, int opts = NoOptimization)
      : name_(std::move(name)), in_(in), out_(out), opts_(opts) {
    shape_.grid = grid;
    shape_.tile = tile;
    if (grid.count() == 0) fail(ErrorCode::InvalidArgument, "grid has no tiles");
    if (tile.x == 0 || tile.y == 0) fail(ErrorCode::InvalidArgument, "tile has zero rows or columns");
    if (opts & ~kKnownOptimizations)
      fail(ErrorCode::InvalidArgument, "unknown optimization flag " + std::to_string(opts));
    countPosts();
    try {
      tickets_ = static_cast<unsigned long long*>(Memory::allocZeroed(2 * sizeof(unsigned long long)));
      gateTickets_ = tickets_ + 1;
      started_ = static_cast<uint32_t*>(Memory::allocZeroed(sizeof(uint32_t)));
      if (semCount_ > 0) sems_ = static_cast<uint32_t*>(Memory::allocZeroed(semCount_ * kSemStride * sizeof(uint32_t)));
      setOrder(RowMajorOrder{});
    } catch (...) {
      releaseAll();
      throw;
    }
  }

  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() { releaseAll(); }

  // Replaces the order in which tiles are handed out; throws if it is not a bijection.
  template <class Order>
  Stage& setOrder(const Order& order) {
    const std::vector<Dim3> table = buildOrderTable(order, shape_.grid, name_);
    if (!order_) order_ = static_cast<Dim3*>(Memory::allocZeroed(table.size() * sizeof(Dim3)));
    Memory::upload(order_, table.data(), table.size() * sizeof(Dim3));
    orderGroup_ = arithmeticGroupOf(order);
    return *this;
  }

  // Links a producer's semaphores to input `numInputs()` of this stage, with
  // `policy` (by default the stage's input policy). Verifies on the host that
  // the policy and the two shapes agree; see cusync::pair.
  template <class PI, class PO>
  void addInput(const Stage<PI, PO, Memory>& prod, const InPolicy& pol) {
    if (policy::isNoSync<InPolicy>)
      fail(ErrorCode::UnpairedStage, "its input policy is NoSync, so it cannot consume '" + prod.name() + "'");
    if (!prod.isProducer())
      fail(ErrorCode::UnpairedStage, "producer '" + prod.name() + "' has output policy NoSync: it posts nothing");
    if (numInputs_ == kMaxInputs)
      fail(ErrorCode::InvalidArgument, "more than " + std::to_string(kMaxInputs) + " producers");
    if (const char* msg = pol.checkPair(shape_, prod.shape())) fail(ErrorCode::PolicyMismatch, msg);
    if (shape_.grid.z > prod.shape().grid.z)
      fail(ErrorCode::GridMismatch, "it has " + std::to_string(shape_.grid.z) + " batches but producer '" +
                                        prod.name() + "' has " + std::to_string(prod.shape().grid.z));
    if (shape_.tile.z == 0) fail(ErrorCode::InvalidArgument, "a consumer needs its k step in tile.z");
    verifyWaits(pol, prod);
    InputLink<InPolicy>& link = links_[numInputs_];
    link.sems = prod.semaphores();
    link.semCount = prod.semaphoreCount();
    link.prod = prod.shape();
    link.policy = pol;
    producerStarted_[numInputs_] = prod.startedFlag();
    producerLaunches_[numInputs_] = prod.launches_;
    producerNames_[numInputs_] = prod.name();
    ++numInputs_;
  }

  // The kernel argument. persistentBlocks = 0 for one block per tile;
  // otherwise the number of blocks of a persistent launch, each of which
  // loops on tile() until it returns an invalid tile.
  View view(uint32_t persistentBlocks = 0) const {
    if (isConsumer() && numInputs_ == 0)
      fail(ErrorCode::UnpairedStage, std::string("input policy ") + InPolicy::kName +
                                         " has no producer: call cusync::pair(producer, consumer) first");
    // Runs are counted in tickets, so every run must take as many.
    if (ticketsPerRun_ != 0 && ticketsPerRun_ != numTiles() + persistentBlocks)
      fail(ErrorCode::GridMismatch, "launched with " + describeBlocks(ticketsPerRun_ - numTiles()) +
                                        " before and with " + describeBlocks(persistentBlocks) +
                                        " now; run counting needs the same launch every run (reset() to change it)");
    ticketsPerRun_ = numTiles() + persistentBlocks;
    View v;
    v.shape = shape_;
    v.opts = opts_;
    v.numTiles = numTiles();
    v.ticketsPerRun = numTiles() + persistentBlocks;
    v.tickets = tickets_;
    v.order = order_;
    v.orderGroup = orderGroup_;
    v.started = started_;
    v.postSems = sems_;
    v.out = out_;
    v.numInputs = numInputs_;
    for (uint32_t i = 0; i < numInputs_; ++i) v.in[i] = links_[i];
    const size_t n = std::min(name_.size(), sizeof(v.name) - 1);
    std::copy(name_.begin(), name_.begin() + n, v.name);
    v.name[n] = '\0';
    return v;
  }

  // What the wait kernel of stream mode needs: the producers' start flags.
  protocol::StartGate startGate() const {
    protocol::StartGate g;
    g.count = numInputs_;
    for (uint32_t i = 0; i < numInputs_; ++i) g.started[i] = producerStarted_[i];
    g.tickets = gateTickets_;
    const size_t n = std::min(name_.size(), sizeof(g.name) - 1);
    std::copy(name_.begin(), name_.begin() + n, g.name);
    return g;
  }

  // Zeroes tickets, semaphores, start flags and the workspace's state: all
  // stages of a pipeline must be reset together, with no kernel of theirs running.
  void reset() {
    ticketsPerRun_ = 0;
    *launches_ = 0;
    Memory::zero(tickets_, 2 * sizeof(unsigned long long));
    Memory::zero(started_, sizeof(uint32_t));
    if (sems_) Memory::zero(sems_, semCount_ * kSemStride * sizeof(uint32_t));
    workspace_.zeroState();
  }

  // The memory a kernel library keeps with this stage between runs (see
  // cusync/workspace.h): empty until a launch reserves it, freed by the
  // destructor. Launches take the stage by const reference, so this is too;
  // Workspace::reserve is safe from several threads.
  Workspace<Memory>& workspace() const { return workspace_; }

  // Launches of this stage counted by the launchers since construction or
  // reset(). A launcher calls requireProducersLaunched() before it launches
  // the stage and countLaunch() once the launch is enqueued: the k-th launch
  // of a consumer needs every producer launched at least k times, since a
  // consumer launched before its producer waits forever (serial and pdl
  // modes run it first; streams mode gives it the higher priority).
  uint64_t launches() const { return *launches_; }
  void requireProducersLaunched() const {
    for (uint32_t i = 0; i < numInputs_; ++i)
      if (*producerLaunches_[i] <= *launches_)
        fail(ErrorCode::UnpairedStage,
             "launch " + std::to_string(*launches_ + 1) + " of this stage comes before launch " +
                 std::to_string(*launches_ + 1) + " of its producer '" + producerNames_[i] + "' (input " +
                 std::to_string(i) + "; its launches since its last reset: " + std::to_string(*producerLaunches_[i]) +
                 "): launch every producer before its consumers in each run, or a "
                 "consumer waits forever");
  }
  void countLaunch() const { ++*launches_; }

  const std::string& name() const { return name_; }
  const StageShape& shape() const { return shape_; }
  int opts() const { return opts_; }
  uint32_t numTiles() const { return shape_.grid.count(); }
  uint32_t numInputs() const { return numInputs_; }
  bool isProducer() const { return !policy::isNoSync<OutPolicy>; }
  bool isConsumer() const { return !policy::isNoSync<InPolicy>; }
  const InPolicy& inputPolicy() const { return in_; }
  const OutPolicy& outputPolicy() const { return out_; }
  // Semaphore i is semaphores()[i * kSemStride] (config.h).
  uint32_t* semaphores() const { return sems_; }
  uint32_t semaphoreCount() const { return semCount_; }
  uint32_t* startedFlag() const { return started_; }
  // The semaphores input i waits on (its producer's).
  const uint32_t* inputSemaphores(uint32_t i) const { return i < numInputs_ ? links_[i].sems : nullptr; }
  // The 64-bit ticket counter (tiles taken since the last reset); for tools and tests.
  unsigned long long* ticketCounter() const { return tickets_; }
  // Sum of post values each semaphore receives per run (host copy).
  const std::vector<uint64_t>& postsPerRun() const { return postSum_; }

 private:
  [[noreturn]] void fail(ErrorCode code, const std::string& what) const { throw Error(code, name_, what); }
  static std::string describeBlocks(uint32_t persistentBlocks) {
    return persistentBlocks ? std::to_string(persistentBlocks) + " persistent blocks" : std::string("one block per tile");
  }

  void releaseAll() {
    Memory::release(tickets_);
    Memory::release(started_);
    Memory::release(sems_);
    Memory::release(order_);
    tickets_ = gateTickets_ = nullptr;
    started_ = sems_ = nullptr;
    order_ = nullptr;
  }

  // Per-run sum of posts into each semaphore, and whether any has two writers.
  void countPosts() {
    if (policy::isNoSync<OutPolicy>) return;
    semCount_ = out_.semaphoreCount(shape_);
    if (semCount_ == 0) fail(ErrorCode::InvalidArgument, std::string(OutPolicy::kName) + " gives no semaphores");
    postSum_.assign(semCount_, 0);
    std::vector<uint32_t> writers(semCount_, 0);
    forEachTile(shape_.grid, [&](const Dim3& t) {
      const uint32_t s = out_.tileIndex(t, shape_);
      if (s >= semCount_)
        fail(ErrorCode::SemaphoreArrayTooSmall,
             "tile " + tileName(t) + " posts to semaphore " + std::to_string(s) + " of " + std::to_string(semCount_));
      postSum_[s] += out_.postValue(t, shape_);
      ++writers[s];
    });
    if (opts_ & NoAtomicAdd) {
      for (uint32_t s = 0; s < semCount_; ++s)
        if (writers[s] > 1)
          fail(ErrorCode::PolicyMismatch, std::string("NoAtomicAdd needs one writer per semaphore, but ") +
                                              OutPolicy::kName + " has " + std::to_string(writers[s]) +
                                              " tiles posting to semaphore " + std::to_string(s));
    }
    for (uint32_t s = 0; s < semCount_; ++s)
      if (postSum_[s] >= (1ull << 30))
        fail(ErrorCode::PolicyMismatch, "semaphore " + std::to_string(s) +
                                            " receives 2^30 or more per run; the wrap-safe comparison needs less");
  }

  // Walks every consumer row tile and batch through its reduction and checks
  // each semaphore it would wait on: it must exist, and its wait value must be
  // exactly what the producer posts to it per run (more would hang, less
  // would wake the consumer early). Also rejects consumer tiles that never
  // wait at all, whose rows lie outside the producer's output.
  template <class PI, class PO>
  void verifyWaits(const InPolicy& pol, const Stage<PI, PO, Memory>& prod) const {
    const StageShape& ps = prod.shape();
    const std::vector<uint64_t>& posts = prod.postsPerRun();
    const uint32_t extent = pol.readExtent(ps);
    const uint32_t step = shape_.tile.z;
    for (uint32_t z = 0; z < shape_.grid.z; ++z)
      for (uint32_t y = 0; y < shape_.grid.y; ++y) {
        bool waited = false;
        for (uint32_t col = 0; col < extent; col += step) {
          const Read r{col, y * shape_.tile.y, z, 0};
          const SemSpan span = pol.waitSpan(r, shape_, ps);
          for (uint32_t i = 0; i < span.count(); ++i) {
            const uint32_t s = span.at(i);
            waited = true;
            if (s >= prod.semaphoreCount())
              fail(ErrorCode::SemaphoreArrayTooSmall,
                   "row tile " + std::to_string(y) + " at column " + std::to_string(col) + " waits on semaphore " +
                       std::to_string(s) + " but producer '" + prod.name() + "' has " +
                       std::to_string(prod.semaphoreCount()));
            const uint32_t want = pol.waitValue(s, ps);
            if (want != posts[s])
              fail(ErrorCode::PolicyMismatch,
                   std::string(InPolicy::kName) + " waits for " + std::to_string(want) + " per run on semaphore " +
                       std::to_string(s) + " but producer '" + prod.name() + "' (" + PO::kName + ") posts " +
                       std::to_string(posts[s]) + (want > posts[s] ? ": the consumer would hang" : ": it would read early"));
          }
        }
        if (!waited && extent > 0)
          fail(ErrorCode::GridMismatch, "row tile " + std::to_string(y) + " batch " + std::to_string(z) +
                                            " never waits: its rows lie outside producer '" + prod.name() + "' (" +
                                            std::to_string(ps.rows()) + " rows)");
      }
  }

  std::string name_;
  StageShape shape_;
  InPolicy in_;
  OutPolicy out_;
  int opts_;
  uint32_t semCount_ = 0;
  mutable uint32_t ticketsPerRun_ = 0;  // fixed by the first view()
  std::vector<uint64_t> postSum_;
  unsigned long long* tickets_ = nullptr;
  unsigned long long* gateTickets_ = nullptr;
  uint32_t* started_ = nullptr;
  uint32_t* sems_ = nullptr;
  Dim3* order_ = nullptr;
  uint32_t orderGroup_ = 0;  // see StageView::orderGroup
  InputLink<InPolicy> links_[kMaxInputs];
  uint32_t* producerStarted_[kMaxInputs] = {};
  // Host launch counts: this stage's (shared with its consumers, which may
  // outlive it) and its producers'.
  std::shared_ptr<uint64_t> launches_ = std::make_shared<uint64_t>(0);
  std::shared_ptr<const uint64_t> producerLaunches_[kMaxInputs];
  std::string producerNames_[kMaxInputs];
  uint32_t numInputs_ = 0;
  mutable Workspace<Memory> workspace_;
};

// Pairs a producer with a consumer: the consumer gets the producer's
// semaphores and shape as its next input. One producer may feed several
// consumers, and a consumer may have up to kMaxInputs producers.
template <class PI, class PO, class CI, class CO, class M>
void pair(const Stage<PI, PO, M>& prod, Stage<CI, CO, M>& cons) {
  cons.addInput(prod, cons.inputPolicy());
}

// The same, with policy parameters for this input only (e.g. another stride).
template <class PI, class PO, class CI, class CO, class M>
void pair(const Stage<PI, PO, M>& prod, Stage<CI, CO, M>& cons, const CI& inputPolicy) {
  cons.addInput(prod, inputPolicy);
}

}  // namespace cusync
