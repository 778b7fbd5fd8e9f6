// cusync-gemm-bench: `cusync-bench gemm` alone, for device runs that must not
// depend on other benchmarks of the tree being buildable.
#include "bench/bench_gemm.h"

int main(int argc, char** argv) { return benchGemm(argc - 1, argv + 1); }
