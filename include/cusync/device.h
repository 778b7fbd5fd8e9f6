// The device API a kernel calls: take a tile, wait before reading producer
// data, post after storing the tile. Thin wrappers over cusync/protocol.h with
// the GPU backend.
//
//   __global__ void k(cusync::StageView<In, Out> st, ...) {
//     __shared__ cusync::TileWork slot;
//     cusync::TileWork w = cusync::tile(st, &slot);
//     for (k0 = 0; k0 < K; k0 += BK) {
//       cusync::wait(st, w, {k0, w.tile.y * BM});   // before loading A
//       ...
//     }
//     ... store C ...
//     cusync::post(st, w);
//   }
#pragma once

#include "cusync/backend_cuda.h"
#include "cusync/protocol.h"

#if defined(__CUDACC__)
namespace cusync {

template <class V>
__device__ __forceinline__ TileWork tile(const V& v, TileWork* sharedSlot) {
  return protocol::dispense<CudaBackend>(v, sharedSlot, linearBlockIndex());
}

// For warp-specialized kernels: one thread takes the ticket and shares it itself.
template <class V>
__device__ __forceinline__ TileWork tileElected(const V& v) {
  CudaBackend::triggerDependents();
  return protocol::dispenseElected<CudaBackend>(v, linearBlockIndex());
}

// tileElected() in two halves, for a persistent kernel that takes its next
// ticket while its current tile still runs: the ticket (an atomic whose
// result is not waited for until it is decoded), then its tile.
template <class V>
__device__ __forceinline__ unsigned long long ticketElected(const V& v) {
  CudaBackend::triggerDependents();
  return CudaBackend::takeTicket(v.tickets);
}
template <class V>
__device__ __forceinline__ TileWork tileOfTicket(const V& v, unsigned long long ticket) {
  return protocol::decodeTicket<CudaBackend>(v, ticket, linearBlockIndex());
}

template <class V>
__device__ __forceinline__ void wait(const V& v, const TileWork& w, const Read& r, uint32_t input = 0,
                                     Reader reader = Reader::Generic) {
  protocol::wait<CudaBackend>(v, w, r, input, reader);
}

template <class V>
__device__ __forceinline__ void waitElected(const V& v, const TileWork& w, const Read& r, uint32_t input = 0,
                                            Reader reader = Reader::Generic) {
  protocol::waitElected<CudaBackend>(v, w, r, input, reader);
}

// waitElected() in two halves, for a thread that resolves waits ahead of the
// loads they gate: the semaphores a read waits on (arithmetic only; empty
// for most steps of a walk), then the wait itself.
template <class V>
__device__ __forceinline__ SemSpan waitSpanOf(const V& v, const Read& r, uint32_t input = 0) {
  return protocol::waitSpanOf(v, r, input);
}
template <class V>
__device__ __forceinline__ void awaitSpan(const V& v, const TileWork& w, const SemSpan& span, uint32_t input = 0,
                                          Reader reader = Reader::Generic) {
  protocol::awaitSpan<CudaBackend>(v, w, span, input, reader);
}

// Whether `span` is satisfied, from one poll of relaxed loads (no fence, no
// spinning): the caller fences before it reads (protocol::spanReached).
template <class V>
__device__ __forceinline__ bool spanReached(const V& v, const TileWork& w, const SemSpan& span, uint32_t input = 0) {
  return protocol::spanReached<CudaBackend>(v, w, span, input);
}

// awaitSpan() for a thread that waits again and again: spans `ready` saw
// satisfied in this run cost nothing (cusync/ready_set.h).
template <class V>
__device__ __forceinline__ void awaitSpanOnce(const V& v, const TileWork& w, const SemSpan& span, ReadySet& ready,
                                              uint32_t input = 0, Reader reader = Reader::Generic) {
  protocol::awaitSpanOnce<CudaBackend>(v, w, span, ready, input, reader);
}

template <class V>
__device__ __forceinline__ void post(const V& v, const TileWork& w) {
  protocol::post<CudaBackend>(v, w);
}

template <class V>
__device__ __forceinline__ void postElected(const V& v, const TileWork& w) {
  protocol::postElected<CudaBackend>(v, w);
}

// A tile stored with TMA (cp.async.bulk.tensor) is visible to other blocks only
// once its bulk group has finished writing; call this in the issuing thread
// before the barrier that precedes post().
__device__ __forceinline__ void bulkStoresComplete() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>());
#endif
}

}  // namespace cusync
#endif
