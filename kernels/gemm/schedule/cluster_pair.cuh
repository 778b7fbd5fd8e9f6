// ClusterPair: WholeTiles with a cluster of two blocks (ClusterPairLink) per
// stage tile, which computes a 256-row stage tile, each
// block 128 rows with its own A and half of B, multicast to both, so B crosses
// from L2 once per pair. The first block of a pair takes the tickets, hands
// each tile to the second through shared memory, and posts the tile once both
// have stored their rows.
#pragma once

#include <cuda/atomic>
#include <cuda/ptx>

#include <cstdint>

#include "cusync/stage_view.h"
#include "kernels/gemm/kernel/sm90.cuh"
#include "kernels/gemm/schedule/whole_tiles.cuh"

namespace cusync_gemm::detail {

class ClusterPairLink {
 public:
  static constexpr int kSize = 2;
  // Either block's multicast writes a slot of both, so a slot is free once
  // the consumers of both blocks are done with it.
  static constexpr uint32_t kSlotReleases = 4;

  __device__ __forceinline__ ClusterPairLink() : rank_(cuda::ptx::get_sreg_cluster_ctarank()) {}
  __device__ __forceinline__ uint32_t rank() const { return rank_; }

  template <class Storage>
  __device__ __forceinline__ void bind(const Storage& ss) {
    mailbox_ = ss.mailbox();
    uint64_t* b = ss.pairBarriers();
    mboxFull_ = b, mboxEmpty_ = b + 1, peerStored_ = b + 2, postDone_ = b + 3;
  }
  // One thread, beside the ring's barriers.
  __device__ __forceinline__ void initBarriers() {
    cuda::ptx::mbarrier_init(mboxFull_, 1);
    cuda::ptx::mbarrier_init(mboxEmpty_, 1);
    cuda::ptx::mbarrier_init(peerStored_, 1);
    cuda::ptx::mbarrier_init(postDone_, 1);
  }
  __device__ __forceinline__ void syncAfterInit() { clusterSync(); }

  // Producer threads: the first block's tile goes to the second.
  __device__ __forceinline__ void handOver(cusync::TileWork& w) {
    if (rank_ == 0) {
      mbarWaitCluster(mboxEmpty_, mboxPhase_ ^ 1);
      *static_cast<cusync::TileWork*>(__cluster_map_shared_rank(mailbox_, 1)) = w;
      arriveRemote(mboxFull_, 1);
    } else {
      mbarWaitCluster(mboxFull_, mboxPhase_);
      w = *mailbox_;
      arriveRemote(mboxEmpty_, 0);
    }
    mboxPhase_ ^= 1;
  }

  // A consumer warpgroup frees a slot in this block and, since the other
  // block's multicast also writes it, in that one.
  __device__ __forceinline__ void releaseSlot(uint64_t* empty) {
    cuda::ptx::mbarrier_arrive(empty);
    releaseSlotRemote(empty, rank_ ^ 1u);
  }

  // Thread 128, after this block stored its rows of the tile: the first block
  // posts once the second has stored its rows; the second waits for that post
  // before it signals its next tile, so the two never drift a tile apart.
  // Returns whether this block posts.
  __device__ __forceinline__ bool postsTile() {
    if (rank_ == 1) {
      mbarWaitCluster(postDone_, postPhase_ ^ 1);
      cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
      arriveRemote(peerStored_, 0);
      postPhase_ ^= 1;
      return false;
    }
    mbarWaitCluster(peerStored_, postPhase_);
    return true;
  }
  __device__ __forceinline__ void afterPost() {
    if (rank_ == 0) {
      arriveRemote(postDone_, 1);
      postPhase_ ^= 1;
    }
  }

  // Neither block may exit while the other can still arrive on its barriers
  // or multicast into its shared memory.
  __device__ __forceinline__ void syncBeforeExit() { clusterSync(); }

 private:
  uint32_t rank_;
  cusync::TileWork* mailbox_ = nullptr;
  uint64_t *mboxFull_ = nullptr, *mboxEmpty_ = nullptr, *peerStored_ = nullptr, *postDone_ = nullptr;
  uint32_t mboxPhase_ = 0;
  uint32_t postPhase_ = 0;
};

template <class View>
using ClusterPair = WholeTiles<View, ClusterPairLink>;

}  // namespace cusync_gemm::detail
