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

}  // namespace cusync
