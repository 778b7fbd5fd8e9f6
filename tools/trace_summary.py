#!/usr/bin/env python3
"""Summarize the tile traces of `cusync-bench mlp|conv --trace-dir DIR`.

Each CSV holds back-to-back runs of one pipeline variant, one row per tile
of each stage (docs/tools.md). For every file this prints, as medians over
the runs after the first (the first pays its warm-up):

  s1_tile  stage 1: a tile's first MMA to its end (its stores issued), us
  s1_mma   stage 1: a tile's MMA time (its k-loop), us
  s2_tile  stage 2, likewise
  s2_mma
  lag      stage 2: when its block's waiter had resolved the tile's waits,
           less the last stage-1 tile's end (empty for a stage that waits
           on nothing, as nosync's), us
  ready_mma  stage 2: from those waits resolved to the tile's first MMA, us
  span     first stage-1 tile taken to last stage-2 tile ended, us

    tools/trace_summary.py DIR_OR_CSV [...] [--runs-from N]
"""
import argparse
import csv
import glob
import os
import statistics
import sys

COLUMNS = ["s1_tile", "s1_mma", "s2_tile", "s2_mma", "lag", "ready_mma", "span"]


def stage_column(header):
    for name in ("layer", "gemm"):
        if name in header:
            return name
    raise ValueError("no stage column (layer or gemm)")


def summarize_run(rows, col):
    """The COLUMNS of one run's rows, in ns (None where a value is missing)."""
    s1 = [r for r in rows if r[col] == "1" and r["end"] and r["mma_start"]]
    s2 = [r for r in rows if r[col] == "2" and r["end"] and r["mma_start"]]
    if not s1 or not s2:
        return None
    ns = lambda r, k: int(r[k])
    last1 = max(ns(r, "end") for r in s1)
    ready = [r for r in s2 if r.get("ready")]
    med = statistics.median
    return {
        "s1_tile": med(ns(r, "end") - ns(r, "mma_start") for r in s1),
        "s1_mma": med(ns(r, "mma_ns") for r in s1),
        "s2_tile": med(ns(r, "end") - ns(r, "mma_start") for r in s2),
        "s2_mma": med(ns(r, "mma_ns") for r in s2),
        "lag": med(ns(r, "ready") - last1 for r in ready) if ready else None,
        "ready_mma": med(ns(r, "mma_start") - ns(r, "ready") for r in ready) if ready else None,
        "span": max(ns(r, "end") for r in s2) - min(ns(r, "start") for r in s1 if r["start"]),
    }


def summarize_file(path, runs_from):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        col = stage_column(reader.fieldnames or [])
        rows = list(reader)
    runs = sorted({int(r["run"]) for r in rows})
    per_run = []
    for run in runs:
        if run < runs_from:
            continue
        s = summarize_run([r for r in rows if int(r["run"]) == run], col)
        if s is not None:
            per_run.append(s)
    if not per_run:
        return None
    out = {}
    for k in COLUMNS:
        vals = [s[k] for s in per_run if s[k] is not None]
        out[k] = statistics.median(vals) if vals else None
    return out


def main(argv):
    ap = argparse.ArgumentParser(
        description="Summarize cusync-bench --trace-dir CSVs (tile times of both stages, the waits' lag behind "
        "stage 1, the pair's span), as medians over runs, in microseconds.")
    ap.add_argument("paths", nargs="+", help="trace CSV files or folders of them")
    ap.add_argument("--runs-from", type=int, default=1, help="first run to count (default 1: the first run warms up)")
    args = ap.parse_args(argv)
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "*.csv")))
        elif os.path.isfile(p):
            files.append(p)
        else:
            print(f"trace_summary: {p}: no such file or folder", file=sys.stderr)
            return 2
    if not files:
        print("trace_summary: no CSV files", file=sys.stderr)
        return 2
    width = max(len(os.path.basename(f)) - 4 for f in files)
    print(f"{'trace':<{width}}  " + "  ".join(f"{c:>9}" for c in COLUMNS) + "   (us, medians)")
    status = 0
    for f in files:
        name = os.path.basename(f)[:-4]
        try:
            s = summarize_file(f, args.runs_from)
        except (ValueError, KeyError) as e:
            print(f"trace_summary: {f}: {e}", file=sys.stderr)
            status = 2
            continue
        if s is None:
            print(f"{name:<{width}}  (no run with tiles of both stages from run {args.runs_from} on)")
            continue
        cells = ["" if s[c] is None else f"{s[c] / 1e3:.2f}" for c in COLUMNS]
        print(f"{name:<{width}}  " + "  ".join(f"{c:>9}" for c in cells))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
