// gemm() without synchronization: a NoSync stage per (device, stream, grid,
// persistent block count, configuration), so that concurrent launches never
// share a ticket counter, and every launch on a counter decodes its tickets
// alike (tile schedules and split schedules count tickets differently).
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "cusync/stage.h"
#include "kernels/gemm/detail/host.h"
#include "kernels/gemm/detail/nosync.h"
#include "kernels/gemm/gemm.h"

namespace cusync_gemm {

void gemm(const GemmArgs& a, cudaStream_t stream) {
  using NoSyncStage = cusync::Stage<cusync::policy::NoSync, cusync::policy::NoSync>;
  checkArgs(a);
  const detail::DeviceInfo& d = detail::currentDevice();
  if (d.major != 9)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "gemm",
                        "the Hopper GEMM needs compute capability 9.0; device " + std::to_string(d.device) + " is " +
                            std::to_string(d.major) + "." + std::to_string(d.minor));
  const TileConfig c = resolveNoSyncConfig(a, d.sms);
  const cusync::Dim3 grid = stageGrid(a, c);
  const cusync::Dim3 tile = stageTile(c);
  const uint32_t blocks = persistentBlocks(a, c, d.sms);
  const uint32_t takers = ticketBlocks(a, c, d.sms);

  using Key = std::tuple<int, cudaStream_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, int>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<NoSyncStage>> stages;
  NoSyncStage* st = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = stages[Key{d.device, stream, grid.x, grid.y, tile.x, tile.y, takers, static_cast<int>(c)}];
    if (!slot) {
      slot = std::make_unique<NoSyncStage>("gemm", grid, tile);
      slot->setOrder(GroupedOrder{orderGroup(c)});
    }
    st = slot.get();
  }
  const detail::NoSyncView v = st->view(takers);
  if (a.dtype == DType::BF16)
    (a.bLayout == BLayout::NK ? detail::runNoSyncBf16NK : detail::runNoSyncBf16KN)(a, c, v, blocks, stream);
  else
    (a.bLayout == BLayout::NK ? detail::runNoSyncF16NK : detail::runNoSyncF16KN)(a, c, v, blocks, stream);
}

}  // namespace cusync_gemm
