// Launch modes, and where each stage of a pipeline goes under each mode. The
// GPU launcher (launch.h) and the CPU emulator (emu/pipeline.h) both place
// stages through place(), so the emulator checks the very plan the GPU runs.
#pragma once

#include <string>

#include "cusync/error.h"
#include "cusync/optimizations.h"

namespace cusync {

enum class LaunchMode {
  // One stream, plain kernel order: the consumer starts when the producer
  // ends; waits succeed at once. The baseline.
  Serial,
  // The original cuSync: stage p on its own stream with priority rank p
  // (0 = highest); a consumer's stream first runs a one-thread wait kernel
  // that holds it until its producers have started. Higher priority keeps
  // every pending producer block ahead of consumer blocks.
  Streams,
  // Hopper programmatic dependent launch on one stream: producers trigger
  // their dependents at block start, so a consumer grid is scheduled only
  // once every producer block is resident or done. A first stage whose
  // kernel waits for prior grids (WaitsForPriorGrid) is a programmatic
  // dependent of the kernel before the pipeline.
  Pdl,
};

inline const char* toString(LaunchMode m) {
  switch (m) {
    case LaunchMode::Serial: return "serial";
    case LaunchMode::Streams: return "streams";
    case LaunchMode::Pdl: return "pdl";
  }
  return "?";
}

inline LaunchMode parseLaunchMode(const std::string& s) {
  if (s == "serial") return LaunchMode::Serial;
  if (s == "streams") return LaunchMode::Streams;
  if (s == "pdl") return LaunchMode::Pdl;
  throw Error(ErrorCode::InvalidArgument, "", "unknown launch mode '" + s + "' (serial, streams or pdl)");
}

struct Placement {
  unsigned stream = 0;        // index of the pipeline's stream
  unsigned priorityRank = 0;  // 0 = the GPU's greatest priority
  bool programmatic = false;  // launch with programmatic stream serialization
  bool startGate = false;     // put the wait kernel in front of the stage
};

inline Placement place(LaunchMode mode, unsigned position, bool consumer, int opts) {
  Placement p;
  switch (mode) {
    case LaunchMode::Serial: break;
    case LaunchMode::Streams:
      p.stream = position;
      p.priorityRank = position;
      p.startGate = consumer && !(opts & AvoidWaitKernel);
      break;
    case LaunchMode::Pdl:
      p.programmatic = (consumer && position > 0) || (position == 0 && (opts & WaitsForPriorGrid));
      break;
  }
  return p;
}

}  // namespace cusync
