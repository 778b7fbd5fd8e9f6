// StageView: what a kernel receives about its stage, passed by value. Plain
// data only, so the same struct drives the GPU and the CPU emulator.
#pragma once

#include "cusync/geometry.h"
#include "cusync/optimizations.h"

namespace cusync {

// The producer side of one input of a consumer stage.
template <class Policy>
struct InputLink {
  const uint32_t* sems = nullptr;  // the producer's semaphore array
  uint32_t semCount = 0;
  StageShape prod;
  Policy policy{};
};

// One tile handed out by the dispenser. run counts this stage's launches from
// 1; it scales every wait target, so semaphores never need a reset between runs.
struct TileWork {
  Dim3 tile{0, 0, 0};
  uint32_t run = 0;
  uint32_t index = 0;  // position in the stage's order
  bool valid = false;  // false: a persistent block has no more tiles this run
};

template <class InPolicy, class OutPolicy>
struct StageView {
  using In = InPolicy;
  using Out = OutPolicy;

  StageShape shape;
  int opts = NoOptimization;
  uint32_t numTiles = 0;
  // Tickets taken per run: one per tile, plus one closing ticket per block of
  // a persistent launch (each block stops at the first ticket past the tiles).
  uint32_t ticketsPerRun = 0;
  unsigned long long* tickets = nullptr;
  const Dim3* order = nullptr;  // position -> tile
  uint32_t orderGroup = 0;      // > 0: the order is GroupedOrder{orderGroup}, decoded without the table
  uint32_t* started = nullptr;  // run number of the latest run whose first tile was taken
  uint32_t* postSems = nullptr;
  OutPolicy out{};
  uint32_t numInputs = 0;
  InputLink<InPolicy> in[kMaxInputs];
  char name[24] = {};
};

// What a spin that does not end reports (bounded-wait builds, and the emulator).
struct StallInfo {
  const char* stage = "";
  Dim3 tile{0, 0, 0};
  uint32_t input = 0;
  uint32_t sem = 0;
  uint32_t expected = 0;
  uint32_t seen = 0;
  const uint32_t* addr = nullptr;
};

}  // namespace cusync
