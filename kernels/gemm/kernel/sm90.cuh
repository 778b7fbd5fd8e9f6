// sm_90 device primitives of the GEMM kernel: timers, wgmma descriptors and
// groups, mbarrier waits (local and cluster), TMA loads with an L2 policy,
// the consumers' named barrier. Inline PTX only where CCCL has no wrapper.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/ptx>
#include <type_traits>

#include "kernels/gemm/kernel/arch.cuh"
#include "kernels/gemm/kernel/wgmma_ops.cuh"

namespace cusync_gemm::detail {

__device__ __forceinline__ unsigned long long globalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned int smId() {
  unsigned int s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// Shared-memory matrix descriptor for wgmma: lbo is the byte distance
// between core matrices adjacent along K, sbo along M (or N). The layout
// is the 128-byte swizzle, or with swizzle128 false none: each 8-row x
// 16-byte core matrix then lies in 128 contiguous bytes.
__device__ __forceinline__ uint64_t smemDesc(const void* p, uint32_t lbo, uint32_t sbo, bool swizzle128 = true) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  if (swizzle128) d |= 1ull << 62;  // layout type 1: SWIZZLE_128B; 0: none
  return d;
}

// A wgmma descriptor built once and moved by whole 16-byte units: ring slots
// and k16 steps add to the address field in the low word only (shared
// addresses stay below 2^18, so the field, address >> 4, cannot carry into
// the next one). Cheaper than smemDesc() per wgmma (~12 vector instructions each).
struct MovingDesc {
  uint32_t lo, hi;
  __device__ __forceinline__ explicit MovingDesc(uint64_t d)
      : lo(static_cast<uint32_t>(d)), hi(static_cast<uint32_t>(d >> 32)) {}
  __device__ __forceinline__ uint64_t plus(uint32_t units) const {
    return (static_cast<uint64_t>(hi) << 32) | (lo + units);
  }
};

// setmaxnreg (no CCCL wrapper): a warpgroup gives registers back to the
// block's pool, or takes them from it, for the code after it; ptxas then
// allocates that code within the new count.
template <int N>
__device__ __forceinline__ void releaseRegistersTo() {
#if CUSYNC_GEMM_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void claimRegistersTo() {
#if CUSYNC_GEMM_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

__device__ __forceinline__ void wgmmaFence() {
#if CUSYNC_GEMM_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmmaCommit() {
#if CUSYNC_GEMM_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmmaWait() {
#if CUSYNC_GEMM_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
template <int R>
__device__ __forceinline__ void fenceRegs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// One k16 step of a consumer warpgroup: acc (64 x BN) += A (64 x 16) B (16 x BN).
template <class T, int BN, int TransB>
__device__ __forceinline__ void mma16(float (&acc)[BN / 2], uint64_t da, uint64_t db, int scaleD) {
  constexpr bool bf = std::is_same_v<T, __nv_bfloat16>;
  static_assert(BN == 64 || BN == 96 || BN == 128 || BN == 144 || BN == 168 || BN == 176 || BN == 192 || BN == 256,
                "wgmma width");
#define CUSYNC_GEMM_MMA16_CASE(W)                                                        \
  if constexpr (BN == W) bf ? wgmma_m64n##W##k16_bf16<TransB>(acc, da, db, scaleD)      \
                            : wgmma_m64n##W##k16_f16<TransB>(acc, da, db, scaleD);
  CUSYNC_GEMM_MMA16_CASE(256)
  CUSYNC_GEMM_MMA16_CASE(192)
  CUSYNC_GEMM_MMA16_CASE(176)
  CUSYNC_GEMM_MMA16_CASE(168)
  CUSYNC_GEMM_MMA16_CASE(144)
  CUSYNC_GEMM_MMA16_CASE(128)
  CUSYNC_GEMM_MMA16_CASE(96)
  CUSYNC_GEMM_MMA16_CASE(64)
#undef CUSYNC_GEMM_MMA16_CASE
}

__device__ __forceinline__ void mbarWait(uint64_t* bar, uint32_t parity) {
#if CUSYNC_GEMM_SM90A
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
#endif
}

// Waits for a phase completed by arrivals from the other block of a cluster.
__device__ __forceinline__ void mbarWaitCluster(uint64_t* bar, uint32_t parity) {
#if CUSYNC_GEMM_SM90A
  while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, bar, parity)) {
  }
#endif
}

// Arrives on the mbarrier at the same shared-memory offset in cluster block `rank`.
__device__ __forceinline__ void arriveRemote(uint64_t* localBar, uint32_t rank) {
#if CUSYNC_GEMM_SM90A
  cuda::ptx::mbarrier_arrive(cuda::ptx::sem_release, cuda::ptx::scope_cluster, cuda::ptx::space_cluster,
                             static_cast<uint64_t*>(__cluster_map_shared_rank(localBar, rank)));
#endif
}

// Releases a ring slot to the producer of cluster block `rank`, whose
// multicast writes into this block's copy of the slot. The wgmma reads of the
// slot have completed (wgmma.wait_group) before this, so CTA-scope release
// semantics suffice: a .release.cluster arrive (a cluster-scope fence per
// k-block) made pairs 1.5-1.9x slower, and pairs ran as fast as single blocks
// without it. No CCCL wrapper has the CTA-scope remote form.
__device__ __forceinline__ void releaseSlotRemote(uint64_t* localBar, uint32_t rank) {
#if CUSYNC_GEMM_SM90A
  const uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(localBar));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
#endif
}

__device__ __forceinline__ void clusterSync() {
#if CUSYNC_GEMM_SM90A
  cuda::ptx::barrier_cluster_arrive(cuda::ptx::sem_release);
  cuda::ptx::barrier_cluster_wait(cuda::ptx::sem_acquire);
#endif
}

// An L2 policy that evicts the lines it is attached to first (no CCCL
// wrapper for createpolicy).
__device__ __forceinline__ uint64_t evictFirstPolicy() {
  uint64_t p = 0;
#if CUSYNC_GEMM_SM90A
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
#endif
  return p;
}

// A 2-D TMA load into this block's shared memory with an L2 cache policy (no
// CCCL wrapper for the .L2::cache_hint form).
__device__ __forceinline__ void tmaLoadHinted(void* dst, const CUtensorMap* map, const int32_t (&c)[2], uint64_t* bar,
                                              uint64_t policy) {
#if CUSYNC_GEMM_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst))),
      "l"(map), "r"(c[0]), "r"(c[1]), "r"(static_cast<uint32_t>(__cvta_generic_to_shared(bar))), "l"(policy)
      : "memory");
#endif
}

// Named barrier over the 256 consumer threads (id 1; 0 is __syncthreads).
__device__ __forceinline__ void consumerBarrier() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

}  // namespace cusync_gemm::detail
