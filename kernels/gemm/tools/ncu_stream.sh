#!/bin/bash
# ncu: tile schedule vs stream schedule at the same shape (NOTES.md v12b)
B=/tmp/b/cusync-bench
MET=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
run() { # name shape M config regex
  timeout 120 ncu --clock-control none --kernel-name regex:"$5" --launch-skip 12 --launch-count 1 --section SpeedOfLight --metrics $MET \
    $B gemm --shape $2 --m $3 --iters 5 --config $4 --csv /tmp/x.csv > $OUT/ncu_$1.log 2>&1
  echo "== $1 rc=$?"; grep -E "Duration|dram__bytes|hit_rate|Throughput|DRAM|L2 Cache|Compute|Memory" $OUT/ncu_$1.log | sed "s/  */ /g" | head -14
}
run mlp2_256_tiles gpt3-mlp2 256 128x192 "gemmKernel[^S]"
run mlp2_256_s192 gpt3-mlp2 256 128x192-stream gemmKernelStream
run wo_512_tiles gpt3-wo 512 128x192 "gemmKernel[^S]"
run wo_512_s256 gpt3-wo 512 128x256-stream gemmKernelStream
run qkv_256_t4 llama-qkv 256 128x192-splittail gemmKernelSplit
run qkv_256_s192 llama-qkv 256 128x192-stream gemmKernelStream
