#!/usr/bin/env bash
# One device-tool call: build the MLP targets for sm_90a, run the emulator and
# GPU tests, then `cusync-bench mlp` (args passed through) and the plot.
# Logs and results go to $OUT (or ./mlp-out).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/mlp-out}
mkdir -p "$out"
b=/tmp/build-mlp-gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
date -u +%Y-%m-%dT%H:%MZ | tee -a "$out/gpu.txt"
t0=$(date +%s)
cmake -S "$root" -B $b -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a -DCUSYNC_BOUNDED_WAIT=${BOUNDED_WAIT:-ON} >"$out/build.log" 2>&1 &&
  ninja -C $b -j16 mlp_emu_test mlp_gpu_test cusync-bench >>"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -30; echo "BUILD FAILED"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
timeout 60 $b/kernels/mlp/mlp_emu_test 2>&1 | tail -3 | tee "$out/emu_test.log"
timeout ${GPU_TEST_TIMEOUT:-200} $b/kernels/mlp/mlp_gpu_test > "$out/gpu_test.log" 2>&1; echo "gpu test rc=$?"
grep -E "OK \]|FAILED|Failure|PASSED|error" "$out/gpu_test.log" | head -30
cd "$out" && timeout ${BENCH_TIMEOUT:-300} $b/bench/cusync-bench mlp --json mlp_bench.json --csv mlp_bench.csv "$@" 2>&1 | tee bench.log | grep -v "^\[mlp\]"
python3 "$root/tools/plot_mlp.py" mlp_bench.json -o mlp_speedup.png 2>&1 | tail -2
