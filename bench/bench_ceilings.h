// The ceilings of the roofline the cusync-bench commands report
// (efficiency = max(FLOPs / peak, bytes / bandwidth) / time), measured on the
// local GPU in the same run, and the random bf16 data the commands fill
// their operands with.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace bench {

// Peak bf16 GEMM rate (TFLOP/s) of cuBLASLt on an 8192^3 GEMM.
double measurePeakTflops(cudaStream_t s, int iters);

// Device-to-device copy bandwidth (bytes read + written per second), TB/s.
double measureBandwidthTBs(cudaStream_t s, int iters);

// n bf16 values uniform in [-scale, scale), a function of (seed, index), on stream s.
void fillRandomBf16(void* p, size_t n, uint64_t seed, float scale, cudaStream_t s);

}  // namespace bench
