#!/bin/bash
# One device call for GEMM work: build the GEMM targets for sm_90a (or take
# binaries built elsewhere), run the CPU and GPU tests, then `cusync-bench gemm`.
#
#   bash kernels/gemm/tools/device_run.sh [--prebuilt DIR | --bench BIN] [--no-tests]
#                                         [--ncu SHAPE:M[:CONFIG]] [bench args...]
#
# --prebuilt DIR: DIR holds cusync-bench, gemm_gpu_test and gemm_cpu_test
#   built on another machine (kernels/gemm/tools/prebuild.sh makes it); no build here.
# --bench BIN: this cusync-bench (BIN.xz is unpacked first: prebuild.sh --name
#   writes one); no build and no tests here.
# --no-tests: skip the CPU and GPU tests.
# --ncu SHAPE:M[:CONFIG]: after the benchmark, profile one launch of our kernel
#   on that shape (Nsight Compute: speed of light, warp states, memory, and
#   the stall samples per SASS instruction, which tell which warp of the
#   block waits where: the loading thread, the consumers); the report
#   (ncu.ncu-rep) and its per-instruction table (ncu-source.csv) go to $OUT.
# Logs go to $OUT (default /tmp/out).
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
prebuilt="" bench="" ncu_spec="" tests=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) prebuilt=$2; shift 2 ;;
    --bench) bench=$2; tests=0; shift 2 ;;
    --no-tests) tests=0; shift ;;
    --ncu) ncu_spec=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
if [ -n "$bench" ]; then
  if [[ $bench == *.xz ]]; then xz -d -k -f "$bench" || exit 1; bench=${bench%.xz}; fi
  chmod +x "$bench"
elif [ -n "$prebuilt" ]; then
  bench=$prebuilt/cusync-bench gpu_test=$prebuilt/gemm_gpu_test cpu_test=$prebuilt/gemm_cpu_test
else
  B=/tmp/build-gemm-dev
  cmake -S . -B $B -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90a > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
  ninja -C $B -j16 cusync-bench gemm_gpu_test gemm_cpu_test > "$OUT/build.log" 2>&1 ||
    { grep -v "ptxas info\|Function properties\|bytes stack\|Compile time" "$OUT/build.log" | tail -40; exit 1; }
  bench=$B/bench/cusync-bench gpu_test=$B/kernels/gemm/tests/gemm_gpu_test cpu_test=$B/kernels/gemm/tests/gemm_cpu_test
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
if [ $tests = 1 ]; then
  $cpu_test --gtest_brief=1 2>&1 | tail -3
  timeout 300 $gpu_test --gtest_brief=1 > "$OUT/gpu_test.log" 2>&1; echo "gpu_test rc=$?"
  grep -E "FAILED|Failure|got|error|PASSED|tests ran" "$OUT/gpu_test.log" | head -40
fi
timeout 400 $bench gemm --csv "$OUT/gemm_bench.csv" "$@" 2>&1 | tee "$OUT/bench.log"
if [ -n "$ncu_spec" ]; then
  IFS=: read -r shape m cfg <<< "$ncu_spec"
  timeout 180 ncu --clock-control none --kernel-name regex:gemmKernel --launch-skip 30 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section SourceCounters -f -o "$OUT/ncu" \
    $bench gemm --shape "$shape" --m "$m" --iters 5 --config "${cfg:-auto}" --csv /tmp/ncu.csv > "$OUT/ncu.log" 2>&1
  echo "ncu rc=$?"
  ncu -i "$OUT/ncu.ncu-rep" > "$OUT/ncu-details.log" 2>&1
  grep -vE "^==PROF==|^\s*$" "$OUT/ncu-details.log" | tail -90
  # Per SASS instruction: its stall samples by reason, to find the loading
  # thread's loop (UTMALDG) and the consumers' (HGMMA) in.
  ncu -i "$OUT/ncu.ncu-rep" --page source --print-source sass --csv > "$OUT/ncu-source.csv" 2>&1 ||
    echo "ncu: no per-instruction page from this version (the report holds it: open ncu.ncu-rep)"
fi
