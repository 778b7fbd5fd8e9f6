// A work unit: what the producer warp hands the consumers through a ring
// slot. A unit is a stage tile, or part of one where the schedule cuts K.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "cusync/stage_view.h"

namespace cusync_gemm::detail {

struct Unit {
  cusync::TileWork w;    // the stage tile (run, position, validity)
  int32_t kb0 = 0, kb1 = 0;  // the k-blocks [kb0, kb1) of the tile this unit computes
  uint32_t split = 0;    // which part of a split tile
  uint32_t pos = 0;      // the tile's position in the stage order
  uint32_t stage = 0;    // which stage of a fused kernel

  // The k-block before whose loads the next unit's ticket is taken:
  // `lead` (KernelFlags::ticketLead) before the end, or the first one of a
  // shorter unit.
  __device__ __forceinline__ int ticketPoint(int lead) const { return kb1 - lead > kb0 ? kb1 - lead : kb0; }
};

// What a consumer warpgroup does with a unit once its MMAs are done.
struct UnitFinish {
  uint32_t parts = 1;       // parts of the unit's tile (split K)
  bool store = true;        // it stores rows of the tile (false: it handed its partial on)
  bool sharedFixup = false; // the tile's parts share the fixup: the warpgroup meets again after storing
  bool tracesTile = true;   // its thread 128 records the tile's MMA time and end (TileTrace)
  bool takesTicket = false; // split tiles: this part takes the tile's one stage ticket after storing
};

// How the blocks of one stage tile cooperate. Every schedule has a link: a
// block alone (SoloLink) or a cluster pair (ClusterPairLink, cluster_pair.cuh),
// which share ring slots, hand tiles over and post together.
struct SoloLink {
  static constexpr int kSize = 1;
  __device__ __forceinline__ uint32_t rank() const { return 0; }
  // Arrivals that empty a ring slot: the two consumer warpgroups.
  static constexpr uint32_t kSlotReleases = 2;
  template <class Storage>
  __device__ __forceinline__ void bind(const Storage&) {}
  __device__ __forceinline__ void initBarriers() {}
  // No arrive or multicast may reach a block before its barriers exist.
  __device__ __forceinline__ void syncAfterInit() { __syncthreads(); }
  __device__ __forceinline__ void handOver(cusync::TileWork&) {}
  __device__ __forceinline__ void releaseSlot(uint64_t* empty) { cuda::ptx::mbarrier_arrive(empty); }
  __device__ __forceinline__ bool postsTile() { return true; }
  __device__ __forceinline__ void afterPost() {}
  __device__ __forceinline__ void syncBeforeExit() {}
};

}  // namespace cusync_gemm::detail
