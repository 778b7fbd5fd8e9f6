#!/bin/bash
# One device call: build the GEMM targets for sm_90a, run the tests and the benchmark.
# Usage (repo root): bash kernels/gemm/tools/device_run.sh [bench args...]
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=/tmp/build-gemm-dev
# The project's own build, only the GEMM's targets (faster than scripts/gpu-check).
cmake -S . -B $B -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
ninja -C $B -j16 cusync-bench gemm_gpu_test gemm_cpu_test > "$OUT/build.log" 2>&1 || { grep -v "ptxas info\|Function properties\|bytes stack\|Compile time" "$OUT/build.log" | tail -40; exit 1; }
grep -E "spill (stores|loads)" "$OUT/build.log" | grep -v " 0 bytes spill stores, 0 bytes spill loads" | head -5
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
$B/kernels/gemm/tests/gemm_cpu_test --gtest_brief=1 2>&1 | tail -3
timeout 240 $B/kernels/gemm/tests/gemm_gpu_test --gtest_brief=1 > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
grep -E "FAILED|Failure|got|error|PASSED" "$OUT/gpu_test.log" | head -40
timeout 280 $B/bench/cusync-bench gemm --csv "$OUT/gemm_bench.csv" "$@" 2>&1 | tee "$OUT/bench.log"
