// The GPU execution backend of the protocol (see cusync/protocol.h).
#pragma once

#include "cusync/config.h"

#if defined(__CUDACC__)
#include <cuda/atomic>
#include <cstdio>
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cuda/ptx>
#endif

#include "cusync/stage_view.h"

// Build with -DCUSYNC_WAIT_LIMIT=N (CMake: -DCUSYNC_BOUNDED_WAIT=ON) to turn
// every spin into a bounded wait: after N polls (about N * 256 ns) the waiting
// thread prints stage, tile, semaphore, expected and seen value, and traps.
#ifndef CUSYNC_WAIT_LIMIT
#define CUSYNC_WAIT_LIMIT 0
#endif

namespace cusync {

struct CudaBackend {
  using U32Ref = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>;

  static __device__ __forceinline__ bool isLeader() { return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0; }
  static __device__ __forceinline__ void barrier() { __syncthreads(); }
  static __device__ __forceinline__ unsigned long long takeTicket(unsigned long long* p) {
    return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*p).fetch_add(1, cuda::memory_order_relaxed);
  }
  static __device__ __forceinline__ uint32_t loadAcquire(const uint32_t* p) {
    return U32Ref(*const_cast<uint32_t*>(p)).load(cuda::memory_order_acquire);
  }
  static __device__ __forceinline__ uint32_t loadRelaxed(const uint32_t* p) {
    return U32Ref(*const_cast<uint32_t*>(p)).load(cuda::memory_order_relaxed);
  }
  static __device__ __forceinline__ void fenceAcquire() {
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  }
  static __device__ __forceinline__ void storeRelease(uint32_t* p, uint32_t v) {
    U32Ref(*p).store(v, cuda::memory_order_release);
  }
  static __device__ __forceinline__ void addRelease(uint32_t* p, uint32_t v) {
    U32Ref(*p).fetch_add(v, cuda::memory_order_release);
  }
  static __device__ __forceinline__ void fenceGpu() { cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_device); }
  static __device__ __forceinline__ void fenceProxyAsync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
#endif
  }
  // Programmatic dependent launch (no CCCL wrapper exists for griddepcontrol;
  // both are no-ops in a launch without the programmatic attribute):
  // let the next grid in the stream be scheduled once every block of this
  // one has been here,
  static __device__ __forceinline__ void triggerDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  }
  // and wait until the grids this one depends on have finished and their
  // memory operations are visible.
  static __device__ __forceinline__ void waitForPriorGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  }
  static __device__ __forceinline__ void onSpin(const StallInfo& info, unsigned long long spins) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    if (spins > 64) __nanosleep(spins > 4096 ? 256 : 32);
#endif
    if (CUSYNC_WAIT_LIMIT > 0 && spins > static_cast<unsigned long long>(CUSYNC_WAIT_LIMIT)) {
      printf("cusync: bounded wait expired: stage '%s' tile (%u,%u,%u) input %u semaphore %u expected %u seen %u\n",
             info.stage, info.tile.x, info.tile.y, info.tile.z, info.input, info.sem, info.expected, info.seen);
      __trap();
    }
  }
  static __device__ __forceinline__ void onSpinDone() {}
};

__device__ __forceinline__ uint32_t linearBlockIndex() {
  return (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}

}  // namespace cusync
#endif  // __CUDACC__
