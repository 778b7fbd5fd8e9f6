// Portability macros shared by every cusync header: the same protocol code is
// compiled for the GPU by nvcc and for the CPU emulator by a plain host compiler.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CUSYNC_HD __host__ __device__ __forceinline__
#define CUSYNC_DEVICE __device__ __forceinline__
#else
#define CUSYNC_HD inline
#define CUSYNC_DEVICE inline
#endif

#if defined(__CUDA_ARCH__)
#define CUSYNC_ON_DEVICE 1
#else
#define CUSYNC_ON_DEVICE 0
#endif

namespace cusync {

// Largest number of producers one consumer stage can wait on.
constexpr uint32_t kMaxInputs = 4;

// Words from one of a stage's semaphores to the next. 1 packs them, 32 to a
// 128-byte line; a build with -DCUSYNC_SEM_STRIDE=32 gives each its own line,
// for A/B runs of whether consumers polling neighbouring semaphores and
// producers posting them contend for their lines (docs/conv.md, next steps).
#ifndef CUSYNC_SEM_STRIDE
#define CUSYNC_SEM_STRIDE 1
#endif
constexpr uint32_t kSemStride = CUSYNC_SEM_STRIDE;
static_assert(kSemStride >= 1, "CUSYNC_SEM_STRIDE counts words from one semaphore to the next");

}  // namespace cusync
