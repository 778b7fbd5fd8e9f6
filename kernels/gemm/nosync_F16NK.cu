// NoSync kernels for one (type, B layout) family; built for sm_90a only.
#include "kernels/gemm/detail/launch.cuh"
#include "kernels/gemm/detail/nosync.h"

namespace cusync_gemm::detail {
void runNoSyncF16NK(const GemmArgs& a, TileConfig c, const NoSyncView& v, uint32_t blocks, cudaStream_t s) {
  dispatchTyped<__half, 0>(a, c, v, blocks, s, noSyncLaunchOpts());
}
}  // namespace cusync_gemm::detail
