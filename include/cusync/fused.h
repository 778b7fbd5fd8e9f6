// The fused launch (LaunchMode::Fused): one persistent grid runs every stage
// of a pipeline. Its blocks take work units from one counter in pipeline
// order: every unit of stage 0, then every unit of stage 1, ... A unit of a
// consumer stage is handed out only after every unit of the stages before it,
// each to a block that runs it to the end without waiting on anything later,
// so whatever a unit waits on is already running or done: no deadlock, for
// any number of resident blocks, and no wait kernel or launch priority. The
// chain has one ramp-up and one tail, and blocks that run out of producer
// work start on consumer tiles while the producer's last wave finishes.
//
// Stages keep their policies, semaphores and tile orders: a unit still waits
// through its stage's input policy and posts through its output policy with
// the run number the counter gives it.
//
//   cusync::FusedSchedule sched("mlp", {gemm1Units, gemm2Units}, gemm1, gemm2);  // checks the order
//   kernel<<<blocks, ...>>>(sched.view(blocks), gemm1.view(), gemm2.view(), ...);
//   // device: FusedUnit u = cusync::fusedUnit(f, ticket); ... stage u.stage, unit u.unit
#pragma once

#include <string>
#include <vector>

#include "cusync/error.h"
#include "cusync/memory.h"
#include "cusync/protocol.h"
#include "cusync/stage_view.h"

namespace cusync {

constexpr uint32_t kMaxFusedStages = 4;

// What a fused kernel receives about its schedule, by value.
struct FusedScheduleView {
  unsigned long long* tickets = nullptr;
  uint32_t numStages = 0;
  // Stage s's units are the counter positions [unitsEnd[s - 1], unitsEnd[s]).
  uint32_t unitsEnd[kMaxFusedStages] = {};
  // Tickets per run: every unit, then one closing ticket per block (each
  // block stops at the first ticket past the units), so run numbers count
  // launches exactly.
  uint32_t ticketsPerRun = 0;
};

struct FusedUnit {
  uint32_t stage = 0;
  uint32_t unit = 0;  // position among the stage's units
  uint32_t run = 0;   // launches of the pipeline so far, from 1
  bool valid = false;
};

// The unit of ticket t.
CUSYNC_HD FusedUnit fusedUnit(const FusedScheduleView& f, unsigned long long t) {
  FusedUnit u;
  u.run = static_cast<uint32_t>(t / f.ticketsPerRun) + 1;
  const uint32_t pos = static_cast<uint32_t>(t % f.ticketsPerRun);
  u.valid = f.numStages > 0 && pos < f.unitsEnd[f.numStages - 1];
  if (!u.valid) return u;
  uint32_t begin = 0;
  while (pos >= f.unitsEnd[u.stage]) begin = f.unitsEnd[u.stage++];
  u.unit = pos - begin;
  return u;
}

// A whole-tile unit as the stage's TileWork: the tile at position `unit` of
// its order, with the fused run number.
template <class V>
CUSYNC_HD TileWork fusedTileWork(const V& v, const FusedUnit& u) {
  TileWork w;
  w.run = u.run;
  w.index = u.unit;
  w.valid = u.valid && u.unit < v.numTiles;
  if (w.valid) w.tile = protocol::persistentTile(v, u.unit);
  return w;
}

// The host side: the counter, the unit ranges, and the checks that make the
// launch deadlock-free by construction.
template <class Memory = DeviceMemory>
class FusedSchedule {
 public:
  // units[i]: the work units of stages[i] (its tiles, or its tile parts where
  // a kernel splits tiles). The stages come in pipeline order: every input
  // of a stage must be a stage before it in this list.
  template <class... Stages>
  FusedSchedule(std::string name, std::vector<uint32_t> units, const Stages&... stages) : name_(std::move(name)) {
    constexpr size_t n = sizeof...(Stages);
    static_assert(n >= 1 && n <= kMaxFusedStages, "a fused pipeline has 1 to kMaxFusedStages stages");
    if (units.size() != n)
      throw Error(ErrorCode::InvalidArgument, name_,
                  std::to_string(units.size()) + " unit counts for " + std::to_string(n) + " stages");
    std::vector<const uint32_t*> own;
    std::vector<std::string> names;
    size_t i = 0;
    (checkStage(stages, units[i++], own, names), ...);
    uint32_t end = 0;
    for (size_t s = 0; s < n; ++s) {
      if (uint64_t(end) + units[s] >= (uint64_t(1) << 31))
        throw Error(ErrorCode::InvalidArgument, name_, "more than 2^31 units in one run");
      end += units[s];
      ends_[s] = end;
    }
    numStages_ = static_cast<uint32_t>(n);
    tickets_ = static_cast<unsigned long long*>(Memory::allocZeroed(sizeof(unsigned long long)));
  }
  FusedSchedule(const FusedSchedule&) = delete;
  FusedSchedule& operator=(const FusedSchedule&) = delete;
  ~FusedSchedule() { Memory::release(tickets_); }

  // The kernel argument for a launch of `blocks` persistent blocks; every run
  // must use the same count (reset() to change it).
  FusedScheduleView view(uint32_t blocks) const {
    if (blocks == 0) throw Error(ErrorCode::GridMismatch, name_, "a fused launch needs at least one block");
    if (blocks_ != 0 && blocks_ != blocks)
      throw Error(ErrorCode::GridMismatch, name_,
                  "launched with " + std::to_string(blocks_) + " blocks before and " + std::to_string(blocks) +
                      " now; run counting needs the same launch every run (reset() to change it)");
    blocks_ = blocks;
    FusedScheduleView v;
    v.tickets = tickets_;
    v.numStages = numStages_;
    for (uint32_t s = 0; s < numStages_; ++s) v.unitsEnd[s] = ends_[s];
    v.ticketsPerRun = ends_[numStages_ - 1] + blocks;
    return v;
  }

  // Zeroes the counter; reset the stages' semaphores with it.
  void reset() {
    blocks_ = 0;
    Memory::zero(tickets_, sizeof(unsigned long long));
  }

  const std::string& name() const { return name_; }
  uint32_t units(uint32_t stage) const { return ends_[stage] - (stage ? ends_[stage - 1] : 0); }
  unsigned long long* ticketCounter() const { return tickets_; }

 private:
  template <class StageT>
  void checkStage(const StageT& st, uint32_t units, std::vector<const uint32_t*>& own, std::vector<std::string>& names) {
    if (units < st.numTiles())
      throw Error(ErrorCode::GridMismatch, name_,
                  "stage '" + st.name() + "' has " + std::to_string(st.numTiles()) + " tiles but " +
                      std::to_string(units) + " units");
    for (uint32_t k = 0; k < st.numInputs(); ++k) {
      const uint32_t* sems = st.inputSemaphores(k);
      bool before = false;
      for (const uint32_t* p : own) before = before || p == sems;
      if (!before)
        throw Error(ErrorCode::UnpairedStage, name_,
                    "stage '" + st.name() + "' waits on a producer that does not come before it in the fused order (" +
                        describe(names) + "): list every stage after the stages it reads");
    }
    own.push_back(st.semaphores());
    names.push_back(st.name());
  }
  static std::string describe(const std::vector<std::string>& names) {
    if (names.empty()) return "it comes first";
    std::string s = "before it: ";
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
    return s;
  }

  std::string name_;
  uint32_t numStages_ = 0;
  uint32_t ends_[kMaxFusedStages] = {};
  unsigned long long* tickets_ = nullptr;
  mutable uint32_t blocks_ = 0;
};

}  // namespace cusync
