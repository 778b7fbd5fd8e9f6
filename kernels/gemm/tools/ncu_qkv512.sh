#!/bin/bash
# ncu of llama-qkv M=512: ours forced to 128x96 (128 whole-K tiles) against cuBLAS.
B=${B:-/tmp/b/cusync-bench}
SEC="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section LaunchStats"
timeout 150 ncu --clock-control none --kernel-name regex:"gemmKernel" --launch-skip 12 --launch-count 1 $SEC \
  $B gemm --shape llama-qkv --m 512 --config 128x96 --iters 5 --csv /tmp/x.csv > ${OUT:-/tmp}/ncu_ours96.log 2>&1; echo "ours rc=$?"
timeout 150 ncu --clock-control none --kernel-name regex:"nvjet" --launch-skip 12 --launch-count 1 $SEC \
  $B gemm --shape llama-qkv --m 512 --config 128x96 --iters 5 --csv /tmp/x.csv > ${OUT:-/tmp}/ncu_cublas.log 2>&1; echo "cublas rc=$?"
