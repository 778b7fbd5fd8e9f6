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
};

}  // namespace cusync
