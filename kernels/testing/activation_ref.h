// The GEMM epilogues' activations in double on the host, for the tests' and
// the benchmarks' references (the kernels' are in kernels/gemm/kernel/epilogue.cuh).
#pragma once

#include <cmath>

namespace cusync_testing {

// GELU, tanh form (as cuBLASLt's GELU epilogue and ours).
inline double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
inline double silu(double x) { return x / (1 + std::exp(-x)); }

}  // namespace cusync_testing
