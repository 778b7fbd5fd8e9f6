#!/bin/bash
# Builds the device-run binaries for sm_90a without bounded waits on this
# machine (no GPU needed) and puts them in DIR, so that a device call carries
# them and skips its own build.
#
#   bash kernels/gemm/tools/prebuild.sh [DIR]
#       cusync-bench, gemm_gpu_test and gemm_cpu_test of the working tree into
#       DIR (default .prebuilt; git ignores it), for device_run.sh --prebuilt
#       and scripts/gpu-check --bench-bin DIR/cusync-bench
#   bash kernels/gemm/tools/prebuild.sh --name NAME [--rev REV] [DIR]
#       cusync-bench alone, xz-compressed as DIR/bench-NAME.xz (the device
#       tool carries at most 64 MiB), of the working tree or of git revision
#       REV: the two sides of an A/B run (scripts/ab-run, docs/tools.md)
#
# Builds are incremental: the working tree's in $PREBUILD_DIR (default
# /tmp/build-gemm-prebuilt), a revision's in a worktree of its own under
# /tmp/cusync-prebuild-rev, whose unchanged files keep their times.
# Exit status: 0 done; 1 a build failed; 2 bad usage (an unknown revision).
set -eo pipefail
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
name="" rev="" dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --name)
      [ $# -ge 2 ] && [[ $2 =~ ^[A-Za-z0-9_.]+$ ]] || { echo "prebuild: --name takes letters, digits, '_' and '.'" >&2; exit 2; }
      name=$2; shift 2 ;;
    --rev) [ $# -ge 2 ] || { echo "prebuild: --rev needs a revision" >&2; exit 2; }; rev=$2; shift 2 ;;
    -*) echo "prebuild: unknown option '$1' (--help)" >&2; exit 2 ;;
    *) [ -z "$dir" ] || { echo "prebuild: one DIR only" >&2; exit 2; }; dir=$1; shift ;;
  esac
done
[ -z "$rev" ] || [ -n "$name" ] || { echo "prebuild: --rev goes with --name (the A/B side it builds)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${dir:-$root/.prebuilt}
src=$root
B=${PREBUILD_DIR:-/tmp/build-gemm-prebuilt}
if [ -n "$rev" ]; then
  commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || { echo "prebuild: '$rev' is not a revision here" >&2; exit 2; }
  src=/tmp/cusync-prebuild-rev/src B=/tmp/cusync-prebuild-rev/build
  if [ -d "$src" ]; then
    git -C "$src" checkout -q --detach "$commit"
  else
    mkdir -p "$(dirname "$src")"
    git -C "$root" worktree prune  # a worktree whose folder /tmp lost
    git -C "$root" worktree add -q --detach "$src" "$commit"
  fi
  echo "prebuild: $rev is $(git -C "$src" log --oneline -1 | cut -c1-70)"
fi
targets=(cusync-bench gemm_gpu_test gemm_cpu_test)
[ -z "$name" ] || targets=(cusync-bench)
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$B" "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES=90a -DCUSYNC_BOUNDED_WAIT=OFF > /dev/null
if ! cmake --build "$B" -j "$(nproc)" --target "${targets[@]}" > "$B/prebuild.log" 2>&1; then
  grep -E "error|FAILED" "$B/prebuild.log" | head -20
  echo "prebuild: the build failed (log: $B/prebuild.log)" >&2
  exit 1
fi
mkdir -p "$dir"
if [ -n "$name" ]; then
  xz -2 -T "$(nproc)" -c "$B/bench/cusync-bench" > "$dir/bench-$name.xz"
  ls -la "$dir/bench-$name.xz"
else
  cp "$B/bench/cusync-bench" "$B/kernels/gemm/tests/gemm_gpu_test" "$B/kernels/gemm/tests/gemm_cpu_test" "$dir/"
  ls -la "$dir"
fi
