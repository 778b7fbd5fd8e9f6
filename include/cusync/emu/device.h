// The tile-program API inside the emulator: the same protocol functions as
// cusync/device.h, with the host backend.
#pragma once

#include "cusync/emu/emulator.h"
#include "cusync/emu/host_backend.h"
#include "cusync/protocol.h"

namespace cusync::emu {

template <class V>
TileWork tile(const V& v, const Block& b) {
  TileWork slot;
  return protocol::dispense<HostBackend>(v, &slot, b.linear);
}

template <class V>
void wait(const V& v, const TileWork& w, const Read& r, uint32_t input = 0) {
  protocol::wait<HostBackend>(v, w, r, input);
}

template <class V>
void post(const V& v, const TileWork& w) {
  protocol::post<HostBackend>(v, w);
}

}  // namespace cusync::emu
