// NoSync kernels for one (type, B layout) family; built for sm_90a only.
#include "kernels/gemm/detail/launch.cuh"
#include "kernels/gemm/detail/nosync.h"

namespace cusync_gemm::detail {
void runNoSyncBf16KN(const GemmArgs& a, TileConfig c, const NoSyncView& v, uint32_t blocks, cudaStream_t s) {
  dispatchTyped<__nv_bfloat16, 1>(a, c, v, blocks, s, noSyncLaunchOpts());
}
}  // namespace cusync_gemm::detail
