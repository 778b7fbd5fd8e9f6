// Runs a fused pipeline (cusync/fused.h) in the emulator: one persistent
// grid of `blocks` blocks, each taking units from the schedule's counter
// until it gets the closing ticket, and running `unit(u, block)` for each,
// with the same decode the GPU kernel uses.
#pragma once

#include <functional>

#include "cusync/emu/device.h"
#include "cusync/emu/emulator.h"
#include "cusync/fused.h"
#include "cusync/memory.h"

namespace cusync::emu {

inline void launchFused(Emulator& emu, uint32_t stream, const FusedSchedule<HostMemory>& sched, uint32_t blocks,
                        std::function<void(const FusedUnit&, Block&)> unit) {
  const FusedScheduleView f = sched.view(blocks);
  emu.launch(stream, sched.name(), Dim3(blocks), [f, unit](Block& b) {
    for (;;) {
      const FusedUnit u = fusedUnit(f, HostBackend::takeTicket(f.tickets));
      if (!u.valid) break;
      unit(u, b);
    }
  });
}

}  // namespace cusync::emu
