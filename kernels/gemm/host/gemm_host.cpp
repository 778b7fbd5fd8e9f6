// Host side of the GEMM: configuration names and shapes, argument checks,
// environment switches, device properties, tensor maps, split-K buffers.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>

#include "cusync/error.h"
#include "cusync/workspace.h"
#include "kernels/gemm/env.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/host/launch_host.h"

namespace cusync_gemm {

namespace {
[[noreturn]] void bad(const std::string& what) { throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm", what); }
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
}  // namespace

const char* toString(TileConfig c) {
  if (c == TileConfig::Auto) return "auto";
  const TileConfigRow* r = findTileConfig(c);
  return r ? r->name : "?";
}

TileConfig parseTileConfig(const char* name) {
  const std::string n = name ? name : "";
  if (n == "auto") return TileConfig::Auto;
  std::string known = "auto";
  for (const TileConfigRow& r : kTileConfigs) {
    if (n == r.name) return r.config;
    known += std::string(", ") + r.name;
  }
  bad("unknown tile configuration '" + n + "' (one of: " + known + ")");
}

const char* toString(Epilogue e) {
  switch (e) {
    case Epilogue::Identity: return "identity";
    case Epilogue::Bias: return "bias";
    case Epilogue::Gelu: return "gelu";
    case Epilogue::SwiGLU: return "swiglu";
    case Epilogue::Residual: return "residual";
    case Epilogue::Relu: return "relu";
    case Epilogue::ResidualRelu: return "residual-relu";
  }
  return "?";
}

TileShape tileShape(TileConfig c) {
  const TileConfigRow* r = findTileConfig(c);
  if (r == nullptr) bad("tileShape: configuration 'auto' has no shape; resolve it first");
  const uint32_t rows = static_cast<uint32_t>(r->schedule == Schedule::ClusterPair ? 2 * r->bm : r->bm);
  return {rows, static_cast<uint32_t>(r->bn), 64};
}

bool supportsSwiGLU(TileConfig c) { return tileShape(c).bn % 16 == 0; }

void checkArgs(const GemmArgs& a) {
  if (a.M < 1) bad("M = " + std::to_string(a.M) + ": need M >= 1");
  if (a.N < 8 || a.N % 8 != 0) bad("N = " + std::to_string(a.N) + ": need a positive multiple of 8");
  if (a.K < 8 || a.K % 8 != 0) bad("K = " + std::to_string(a.K) + ": need a positive multiple of 8");
  if (a.M > (int64_t(1) << 31) - 1 || a.N > (int64_t(1) << 31) - 1 || a.K > (int64_t(1) << 31) - 1)
    bad("M, N and K must each be below 2^31");
  if (a.epilogue == Epilogue::SwiGLU && a.N % 16 != 0)
    bad("N = " + std::to_string(a.N) + ": SwiGLU needs N a multiple of 16 (gate and up interleaved in blocks of 8)");
  if (!a.A || !a.B || !a.C) bad("A, B and C must be non-null device pointers");
  if (!aligned16(a.A)) bad("A is not 16-byte aligned");
  if (!aligned16(a.B)) bad("B is not 16-byte aligned");
  if (!aligned16(a.C)) bad("C is not 16-byte aligned");
  if (a.epilogue == Epilogue::Bias && !a.bias) bad("epilogue 'bias' needs a bias pointer");
  if (a.bias && !aligned16(a.bias)) bad("bias is not 16-byte aligned");
  if (a.epilogue == Epilogue::Residual && !a.residual) bad("epilogue 'residual' needs a residual pointer");
  if (a.epilogue == Epilogue::ResidualRelu && !a.residual) bad("epilogue 'residual-relu' needs a residual pointer");
  if (a.residual && !aligned16(a.residual)) bad("residual is not 16-byte aligned");
  if (a.splitN != 0) {
    if (a.splitN < 0 || a.splitN % 8 != 0 || a.splitN >= a.N)
      bad("splitN = " + std::to_string(a.splitN) + ": a split output needs a positive multiple of 8 below N = " +
          std::to_string(a.N));
    if (!a.C2) bad("splitN is set but C2 (columns [splitN, N)) is null");
    if (!aligned16(a.C2)) bad("C2 is not 16-byte aligned");
    if (a.epilogue == Epilogue::SwiGLU) bad("a split output cannot run SwiGLU (its output columns are halved)");
  } else if (a.C2) {
    bad("C2 is set but splitN is 0");
  }
  if (a.splitK < 0) bad("splitK = " + std::to_string(a.splitK) + ": need 0 (heuristic) or a positive count");
  if (a.kCutGroups < 0)
    bad("kCutGroups = " + std::to_string(a.kCutGroups) + ": need 0 (heuristic) or a positive count");
  if (a.config != TileConfig::Auto && findTileConfig(a.config) == nullptr)
    bad("tile configuration " + std::to_string(static_cast<int>(a.config)) + " is not implemented in this build");
  if (!runsAsGemm(a.config)) bad(detail::notAGemmConfiguration(a.config));
  if (a.epilogue == Epilogue::SwiGLU && a.config != TileConfig::Auto && !supportsSwiGLU(a.config))
    bad(std::string("tile configuration ") + toString(a.config) +
        " cannot run SwiGLU: its tiles split gate/up column pairs (use a width that is a multiple of 16)");
}

bool envSwitchOff(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] == '0';
}

int envInt(const char* name) {
  const char* e = std::getenv(name);
  const int v = e != nullptr ? std::atoi(e) : 0;
  return v > 0 ? v : 0;
}

namespace detail {

std::string notAGemmConfiguration(TileConfig c) {
  return std::string("tile configuration ") + toString(c) +
         " keeps a convolution's filter resident: conv2d runs it, gemm does not";
}

void throwCuda(cudaError_t e, const char* what) {
  throw cusync::Error(cusync::ErrorCode::CudaError, "gemm", std::string(what) + ": " + cudaGetErrorString(e));
}

const DeviceInfo& currentDevice() {
  static std::mutex mu;
  static std::deque<DeviceInfo> cache;
  int dev = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) throwCuda(e, "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mu);
  for (const DeviceInfo& d : cache)
    if (d.device == dev) return d;
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, dev); e != cudaSuccess) throwCuda(e, "cudaGetDeviceProperties");
  DeviceInfo d;
  d.device = dev;
  d.sms = prop.multiProcessorCount;
  d.major = prop.major;
  d.minor = prop.minor;
  d.smemOptin = prop.sharedMemPerBlockOptin;
  d.l2Bytes = static_cast<size_t>(prop.l2CacheSize);
  cache.push_back(d);
  return cache.back();
}

uint32_t prefetchKBlocks(uint64_t kBlocks, uint64_t kBlockBytes, uint64_t concurrentUnits) {
  // Off unless asked for: on the H100 the prefetch's extra DRAM traffic slows
  // the producer, which still runs, by more than it saves the waiting units
  // (docs/design.md, "Waits off the loading thread").
  static const bool on = envInt(kEnvPrefetchB) > 0;
  if (!on) return 0;
  // The L2 share that units waiting on their inputs may fill with prefetched
  // weights: the rest holds the producer's traffic and the activations.
  constexpr double kPrefetchL2Share = 0.6;
  const double budget = kPrefetchL2Share * static_cast<double>(currentDevice().l2Bytes) /
                        (static_cast<double>(std::max<uint64_t>(1, concurrentUnits)) * static_cast<double>(kBlockBytes));
  return static_cast<uint32_t>(std::min<uint64_t>(kBlocks, static_cast<uint64_t>(budget)));
}

WaiterChoice waiterChoice() {
  static const WaiterChoice c = [] {
    WaiterChoice w;
    w.memo = !envSwitchOff(kEnvWaitMemo);
    // The producers' lead of 3 k-blocks: with one span per unit to resolve
    // (RowSync, WholeSync) the waiter is done in time, and a lead of 12 runs
    // LLaMA's rowsync and tilesync 2-4% slower on the H100 (a block takes its
    // next tile while a block finishing sooner could have).
    if (const int lead = envInt(kEnvWaiterLead); lead > 0) w.ticketLead = static_cast<uint8_t>(std::min(lead, 64));
    return w;
  }();
  return c;
}

void* driverEntryPoint(const char* symbol, const char* who) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr)
    throw cusync::Error(cusync::ErrorCode::CudaError, who, std::string(symbol) + " is not available from the driver");
  return p;
}

namespace {
using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeFn encodeFn() {
  static EncodeFn fn = reinterpret_cast<EncodeFn>(driverEntryPoint("cuTensorMapEncodeTiled", "gemm"));
  return fn;
}
}  // namespace

CUtensorMap makeTensorMap2D(const void* base, bool bf16, uint64_t inner, uint64_t outer, uint32_t boxInner,
                            uint32_t boxOuter, CUtensorMapL2promotion promotion) {
  CUtensorMap m{};
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * 2};
  const cuuint32_t box[2] = {boxInner, boxOuter};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = encodeFn()(&m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                const_cast<void*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw cusync::Error(cusync::ErrorCode::CudaError, "gemm",
                        "cuTensorMapEncodeTiled failed with code " + std::to_string(static_cast<int>(r)));
  return m;
}

SplitBuffers splitBuffers(StageWorkspace& ws, uint32_t tiles, uint32_t splits, uint32_t tileElems) {
  const size_t flagsCount = 8 * static_cast<size_t>(tiles);  // per (tile, warpgroup), or per (tile, warp slab)
  const size_t partialElems = static_cast<size_t>(tiles) * (splits > 1 ? splits - 1 : 0) * tileElems;
  // The counter in the state region's first 256 bytes, the flags after it.
  // Allocated (while a stream is being captured too) and zeroed on a stream
  // of its own by the workspace: on the launch's stream the memset would be
  // recorded into a graph being captured there instead of run, and until
  // that graph's first replay a launch outside it would start from whatever
  // the allocation held (a stale unit counter hangs the kernel).
  cusync::WorkspaceRegions r;
  try {
    r = ws.reserve(256 + flagsCount * 4, partialElems * 4);
  } catch (const cusync::Error& e) {
    throw cusync::Error(cusync::ErrorCode::CudaError, "gemm", std::string("split-K workspace: ") + e.what());
  }
  SplitBuffers b;
  unsigned char* state = static_cast<unsigned char*>(r.state);
  b.counter = reinterpret_cast<unsigned long long*>(state);
  b.flags = reinterpret_cast<uint32_t*>(state + 256);
  b.partials = static_cast<float*>(r.scratch);
  return b;
}

const DeviceInfo& requireHopper() {
  const DeviceInfo& d = currentDevice();
  if (d.major != 9)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        "the Hopper GEMM needs compute capability 9.0; device " + std::to_string(d.device) + " is " +
                            std::to_string(d.major) + "." + std::to_string(d.minor));
  return d;
}

}  // namespace detail
}  // namespace cusync_gemm
