#!/bin/bash
# Builds the GEMM's device-run binaries (cusync-bench, gemm_gpu_test,
# gemm_cpu_test) for sm_90a on this machine and copies them to DIR, so that
# a device call can carry DIR and skip its own build (device_run.sh --prebuilt).
#
#   bash kernels/gemm/tools/prebuild.sh [DIR]     (default .prebuilt; keep it out of git)
set -eo pipefail
dir=${1:-.prebuilt}
B=${PREBUILD_DIR:-/tmp/build-gemm-prebuilt}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES=90a > /dev/null
cmake --build "$B" -j "$(nproc)" --target cusync-bench gemm_gpu_test gemm_cpu_test 2>&1 |
  grep -E "error|warning: |FAILED" || true
mkdir -p "$dir"
cp "$B/bench/cusync-bench" "$B/kernels/gemm/tests/gemm_gpu_test" "$B/kernels/gemm/tests/gemm_cpu_test" "$dir/"
ls -la "$dir"
