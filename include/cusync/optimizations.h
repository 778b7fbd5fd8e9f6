// Optimization flags of a stage (bit set), named as in the original cuSync.
#pragma once

namespace cusync {

enum Optimizations : int {
  NoOptimization = 0,
  // A semaphore with a single writer is stored (run * postValue), not added.
  NoAtomicAdd = 1 << 0,
  // Launch no wait kernel in stream mode: valid only when producer and
  // consumer blocks all fit on the GPU at once.
  AvoidWaitKernel = 1 << 1,
  // Take tiles in the hardware's block order instead of the stage's order table.
  AvoidCustomOrder = 1 << 2,
  // Kernels load the operand that does not depend on the producer (weights)
  // before waiting; a hint the kernels read, the protocol does not change.
  ReorderTileLoads = 1 << 3,
  // The stage's kernel waits for the grids before it in its stream
  // (griddepcontrol.wait) before it touches global memory. In a Pdl pipeline
  // the first stage is then launched as a programmatic dependent of what
  // precedes the pipeline (the previous run, the previous layer), so its
  // blocks are placed and set up during that kernel's tail.
  WaitsForPriorGrid = 1 << 4,
};

// Every flag above: a Stage refuses any other bit.
inline constexpr int kKnownOptimizations =
    NoAtomicAdd | AvoidWaitKernel | AvoidCustomOrder | ReorderTileLoads | WaitsForPriorGrid;

}  // namespace cusync
