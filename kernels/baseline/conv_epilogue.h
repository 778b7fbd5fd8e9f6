// The epilogue of a convolution as a kernel of its own, for the cuDNN
// baseline where cuDNN's fused bias + activation call is not the fastest
// (or not supported): y = max(y + bias [+ residual], 0) in place, in fp32
// before rounding, over y [pixels, K] bf16 (NHWC).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cusync_baseline {

// bias [K] bf16 (required); residual [pixels, K] bf16 or null. Asynchronous
// on `stream`; throws cusync::Error(CudaError) when the launch fails.
void biasResidualRelu(void* y, const void* bias, const void* residual, int64_t pixels, int64_t K,
                      cudaStream_t stream);

}  // namespace cusync_baseline
