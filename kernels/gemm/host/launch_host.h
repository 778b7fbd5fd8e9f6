// Host helpers of the GEMM launch: cached device properties, tensor maps
// through the driver entry point, the split-K buffers in a stage's workspace,
// errors. Plain C++.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cusync/workspace.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm::detail {

// The (element type, B layout) families of kernels.
enum class Family { Bf16NK, Bf16KN, F16NK, F16KN };
constexpr Family familyOf(const GemmArgs& a) {
  const bool nk = a.bLayout == BLayout::NK;
  return a.dtype == DType::BF16 ? (nk ? Family::Bf16NK : Family::Bf16KN) : (nk ? Family::F16NK : Family::F16KN);
}

struct DeviceInfo {
  int device = 0;
  int sms = 0;
  int major = 0, minor = 0;
  size_t smemOptin = 0;
  size_t l2Bytes = 0;
};

// Properties of the current device (cached); throws cusync::Error(CudaError).
const DeviceInfo& currentDevice();
// The current device, checked to be a Hopper GPU (compute capability 9.0);
// throws cusync::Error(InvalidArgument) naming the device otherwise.
const DeviceInfo& requireHopper();

// The driver's function `symbol` (CUDA 12.0 ABI) through the runtime, so
// that no target links libcuda; throws cusync::Error(CudaError) naming `who`.
void* driverEntryPoint(const char* symbol, const char* who);

// A 2-D tensor map over a row-major [outer, inner] matrix of 2-byte elements,
// box {boxInner, boxOuter}, 128-byte swizzle, zero fill out of bounds, the
// loads promoted to `promotion` in L2 (the GEMM's: 256 bytes).
CUtensorMap makeTensorMap2D(const void* base, bool bf16, uint64_t inner, uint64_t outer, uint32_t boxInner,
                            uint32_t boxOuter, CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

// How many of its `kBlocks` weight k-blocks (`kBlockBytes` each) every unit
// of a stage that waits on its inputs prefetches into L2 while it waits (0:
// none): as many as fit the L2 share that `concurrentUnits` units may fill.
uint32_t prefetchKBlocks(uint64_t kBlocks, uint64_t kBlockBytes, uint64_t concurrentUnits);

// How a stage that waits on its inputs runs its waiter (KernelFlags::waitMemo
// and ::ticketLead): the defaults, or the env.h switches' values.
struct WaiterChoice {
  bool memo = true;
  uint8_t ticketLead = 3;
};
WaiterChoice waiterChoice();

[[noreturn]] void throwCuda(cudaError_t e, const char* what);
// Why gemm() refuses configuration c, which keeps a convolution's filter
// resident (checkArgs, and the launch of a stage whose configuration is
// resolved past it).
std::string notAGemmConfiguration(TileConfig c);

// What a stage keeps for its launches between runs: cusync::Stage::workspace().
using StageWorkspace = cusync::Workspace<cusync::DeviceMemory>;

// Split-K buffers of one stage, in its workspace: the unit counter and flags
// in the state region (zeroed when allocated, also while a stream is being
// captured, and left zero by every completed run), the partials in the
// scratch region. Grown, never shrunk, when a launch needs more (a larger
// split, or more split tiles); freed with the stage.
struct SplitBuffers {
  unsigned long long* counter = nullptr;
  uint32_t* flags = nullptr;  // 8 per split tile (per warpgroup: 2 used; per warp slab: 8)
  float* partials = nullptr;  // split tiles x (splits - 1) x tileElems
};
SplitBuffers splitBuffers(StageWorkspace& ws, uint32_t splitTiles, uint32_t splits, uint32_t tileElems);

}  // namespace cusync_gemm::detail
