// Host helpers of the GEMM launch: tensor maps through the driver entry point,
// cached device properties, launch options. Plain C++ (no device code).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cusync_gemm::detail {

// How a launch is placed in its stream: extra launch attributes, and
// whether the kernel, launched as a programmatic dependent of the previous
// kernel (PDL), waits for that grid before touching global memory
// (EpiParams::waitPrior; gemm() does, the MLP's cusync stages do not).
struct LaunchOpts {
  const cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
  bool waitPrior = false;
  bool staticFirst = false;  // EpiParams::staticFirst
  bool staticAll = false;    // EpiParams::staticAll
  bool bEvictFirst = false;  // EpiParams::bEvictFirst
};

// The programmatic-stream-serialization (PDL) launch attribute.
inline const cudaLaunchAttribute* programmaticLaunchAttr() {
  static const cudaLaunchAttribute a = [] {
    cudaLaunchAttribute x{};
    x.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    x.val.programmaticStreamSerializationAllowed = 1;
    return x;
  }();
  return &a;
}

struct DeviceInfo {
  int device = 0;
  int sms = 0;
  int major = 0, minor = 0;
  size_t smemOptin = 0;
};

// Properties of the current device (cached); throws cusync::Error(CudaError).
const DeviceInfo& currentDevice();

// A 2-D tensor map over a row-major [outer, inner] matrix of 2-byte elements,
// box {boxInner, boxOuter}, 128-byte swizzle, zero fill out of bounds.
CUtensorMap makeTensorMap2D(const void* base, bool bf16, uint64_t inner, uint64_t outer, uint32_t boxInner,
                            uint32_t boxOuter);

void throwCuda(cudaError_t e, const char* what);

// Whether a launch of `a` marks B's loads evict-first in L2 (where gemm()
// allows it, EpiParams::bEvictFirst): one band of 128 rows (nothing reads a
// B k-block twice), or at most 4 bands and K of at least 4096, where the
// weights stream from DRAM through L2 and little else is reused (NOTES.md
// v12b: 2-7% faster at M = 256-512 on the long-K shapes; 0.5-4% slower with
// more bands or short K, where B is reused).
bool weightsEvictFirst(int64_t M, int64_t K);

// Split-K buffers of one stage (key: its ticket counter), grown on demand and
// zeroed on `stream` when (re)allocated; never freed.
struct SplitBuffers {
  unsigned long long* counter = nullptr;
  uint32_t* flags = nullptr;  // 8 per split tile (per warpgroup: 2 used; per warp slab: 8)
  float* partials = nullptr;  // split tiles x (splits - 1) x tileElems
};
SplitBuffers splitBuffers(const void* key, uint32_t splitTiles, uint32_t splits, uint32_t tileElems,
                          cudaStream_t stream);

}  // namespace cusync_gemm::detail
