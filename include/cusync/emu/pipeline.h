// Launches stages into the emulator under a launch mode, placing them exactly
// as the GPU launcher does (cusync::place), wait kernels included.
#pragma once

#include <functional>
#include <vector>

#include "cusync/emu/device.h"
#include "cusync/launch_mode.h"

namespace cusync::emu {

class Pipeline {
 public:
  Pipeline(Emulator& emu, LaunchMode mode) : emu_(emu), mode_(mode) {}

  // Launches `program(view, block)` over `grid` blocks for `stage`. With
  // persistent = true the grid may be smaller than the stage's tile grid and
  // every block loops on tile() until it gets an invalid tile.
  template <class StageT>
  void launch(const StageT& stage, std::function<void(const typename StageT::View&, Block&)> program,
              Dim3 grid = Dim3(0, 0, 0), bool persistent = false) {
    if (grid.count() == 0) grid = stage.shape().grid;
    if (!persistent && grid.count() != stage.numTiles())
      throw Error(ErrorCode::GridMismatch, stage.name(),
                  "launch has " + std::to_string(grid.count()) + " blocks for " + std::to_string(stage.numTiles()) +
                      " tiles");
    stage.requireProducersLaunched();
    const Placement p = place(mode_, position_++, stage.isConsumer(), stage.opts());
    const uint32_t s = streamFor(p);
    if (p.startGate) {
      const protocol::StartGate gate = stage.startGate();
      emu_.launch(s, stage.name() + ":wait", Dim3(1), [gate](Block&) {
        protocol::awaitProducersStarted<HostBackend>(gate);
      });
    }
    const auto view = stage.view(persistent ? grid.count() : 0);
    // A kernel that waits for prior grids touches nothing before they end:
    // the emulator runs it as an ordinary launch.
    const bool programmatic = p.programmatic && !(stage.opts() & WaitsForPriorGrid);
    emu_.launch(s, stage.name(), grid, [view, program](Block& b) { program(view, b); }, programmatic);
    stage.countLaunch();
  }

  // The emulator stream that the stage at `position` goes to under this mode.
  uint32_t streamAt(unsigned position) { return streamFor(place(mode_, position, false, 0)); }

  // Ends a run of the pipeline: the next launch is position 0 again.
  void finish() { position_ = 0; }

 private:
  uint32_t streamFor(const Placement& p) {
    while (streams_.size() <= p.stream) streams_.push_back(emu_.createStream(static_cast<int>(streams_.size())));
    return streams_[p.stream];
  }

  Emulator& emu_;
  LaunchMode mode_;
  unsigned position_ = 0;
  std::vector<uint32_t> streams_;
};

}  // namespace cusync::emu
