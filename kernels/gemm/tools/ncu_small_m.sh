#!/bin/bash
# ncu: ours against cuBLAS at two of the remaining misses, with the sections
# that say where the time goes (NOTES.md v12f). Needs cusync-bench at $B.
B=${B:-/tmp/b/cusync-bench}
SEC="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy"
run() { # name shape M kernel-regex
  timeout 120 ncu --clock-control none --kernel-name regex:"$4" --launch-skip 12 --launch-count 1 $SEC \
    $B gemm --shape $2 --m $3 --iters 5 --csv /tmp/x.csv > ${OUT:-/tmp}/ncu_$1.log 2>&1
  echo "== $1 rc=$?"
}
run qkv256_ours llama-qkv 256 gemmKernelSplit
run qkv256_cublas llama-qkv 256 nvjet
run wo512_ours gpt3-wo 512 "^gemmKernel$"
run wo512_cublas gpt3-wo 512 nvjet
