#!/usr/bin/env python3
"""Compare builds of cusync-bench from the CSVs of an A/B run.

An A/B run times two or more builds of `cusync-bench` (the code before and
after a change) alternately in one GPU call, each several times
(scripts/ab-run writes such a folder). Give each CSV with the label of its
build: LABEL=PATH, as many files per label as it ran. For every point
(a gemm shape and M, an mlp model, M and variant, a conv pair, batch, layer
and variant, an attention shape, variant and stage) this takes each build's
fastest run, divides the other builds' times by the base build's (the first
label, or --base), and prints per group of points the geomean, the lowest
and the highest ratio, then the points that moved most.

The vendor's rows (cuBLAS, cuDNN) run the same library in every build, so
their ratio is the run's noise: a change smaller than their spread is not
measured.

    tools/ab_compare.py [--base LABEL] [--show N] LABEL=CSV [LABEL=CSV ...]

Exit status: 0 done; 1 the builds share no point; 2 bad usage, or a file
missing, unreadable or of another benchmark than the first (named in the
message).
"""
import argparse
import csv
import math
import sys
from collections import defaultdict

# Per benchmark (told apart by their CSV headers): the columns that name a
# point, the time column(s) as (group, column), and how a row's group is named.
KINDS = {
    "gemm": {
        "needs": {"shape", "M", "ours_ms", "cublas_ms"},
        "key": ["shape", "M", "epilogue", "config"],
    },
    "mlp": {"needs": {"model", "M", "variant", "ms"}, "key": ["model", "M", "variant"]},
    "conv": {"needs": {"model", "pair", "batch", "what", "variant", "ms"},
             "key": ["model", "pair", "batch", "what", "variant"]},
    "attention": {"needs": {"model", "M", "L", "phase", "variant", "stage", "ms"},
                  "key": ["model", "M", "L", "phase", "variant", "stage"]},
}
VENDOR_VARIANTS = {"cublas", "cudnn", "cudnn-conv"}


class Bad(Exception):
    pass


def kind_of(header, path):
    # Most specific first: an attention CSV also has the mlp columns.
    for name in ("attention", "conv", "gemm", "mlp"):
        if KINDS[name]["needs"] <= set(header):
            return name
    raise Bad(f"{path}: not a cusync-bench gemm, mlp, conv or attention CSV (columns: {', '.join(header)})")


def times_of(path):
    """(kind, {(group, point): ms}) of one CSV; gemm rows give two points, ours and cuBLAS's."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            kind = kind_of(header, path)
            rows = list(reader)
    except OSError as e:
        raise Bad(f"{path}: {e.strerror}")
    key = [k for k in KINDS[kind]["key"] if k in header]
    out = {}
    for n, r in enumerate(rows, start=2):
        try:
            point = tuple(f"{k}={r[k]}" for k in key)
            if kind == "gemm":
                out[("ours", point)] = float(r["ours_ms"])
                out[("vendor cublas", point)] = float(r["cublas_ms"])
            else:
                v = r["variant"]
                group = f"vendor {v}" if v in VENDOR_VARIANTS else v
                if kind == "conv":
                    group += f" {r['what']}"
                if kind == "attention":
                    group += f" {r['stage']}"
                out[(group, point)] = float(r["ms"])
        except (KeyError, TypeError, ValueError):
            raise Bad(f"{path}, line {n}: no time in this row")
    return kind, out


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ab_compare.py",
        description="Compare builds of cusync-bench from the CSVs of an A/B run: per point each build's "
        "fastest run over the base build's, geomeans per group, the points that moved most; the vendor's "
        "rows (same library in every build) show the run's noise.",
    )
    p.add_argument("inputs", nargs="+", metavar="LABEL=CSV", help="a CSV of cusync-bench and the build it came from")
    p.add_argument("--base", help="the build the others are divided by (default: the first label)")
    p.add_argument("--show", type=int, default=8, metavar="N", help="points that moved most to list (default 8)")
    a = p.parse_args(argv)
    if a.show < 0:
        p.error("--show takes 0 or more")
    return a


def main(argv):
    a = parse_args(argv)
    best = defaultdict(dict)  # label -> {(group, point): fastest ms}
    order = []
    kind0 = None
    for arg in a.inputs:
        label, sep, path = arg.partition("=")
        if not sep or not label or not path:
            raise Bad(f"'{arg}': give each CSV as LABEL=PATH")
        kind, times = times_of(path)
        if kind0 is None:
            kind0 = kind
        elif kind != kind0:
            raise Bad(f"{path}: a {kind} CSV, but the first one is {kind0}")
        if label not in best:
            order.append(label)
        for k, ms in times.items():
            best[label][k] = min(ms, best[label].get(k, math.inf))
    base = a.base or order[0]
    if base not in best:
        raise Bad(f"--base {base}: no CSV has that label (labels: {', '.join(order)})")
    others = [l for l in order if l != base]
    if not others:
        raise Bad("give CSVs of at least two builds (two labels)")
    found = False
    for other in others:
        common = sorted(set(best[base]) & set(best[other]))
        if not common:
            print(f"ab_compare: {other} and {base} share no point", file=sys.stderr)
            continue
        found = True
        ratios = defaultdict(list)
        for g, point in common:
            ratios[g].append((best[other][(g, point)] / best[base][(g, point)], point))
        print(f"{kind0}: {other} / {base}, each build's fastest run per point ({len(common)} points)")
        print(f"  {'group':<24} {'points':>6} {'geomean':>8} {'lowest':>8} {'highest':>8}")
        for g in sorted(ratios, key=lambda g: (g.startswith("vendor"), g)):
            rs = [r for r, _ in ratios[g]]
            gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
            print(f"  {g:<24} {len(rs):>6} {gm:>8.4f} {min(rs):>8.3f} {max(rs):>8.3f}")
        moved = sorted(((r, g, p) for g, lst in ratios.items() if not g.startswith("vendor") for r, p in lst),
                       key=lambda t: abs(math.log(t[0])), reverse=True)[: a.show]
        if moved:
            print(f"  moved most ({other} / {base}):")
            for r, g, p in moved:
                print(f"    {r:.3f}  {g}  {' '.join(p)}")
        only = len(set(best[base]) ^ set(best[other]))
        if only:
            print(f"  {only} points ran in only one of the two builds (other configurations or variants)")
    return 0 if found else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Bad as e:
        print(f"ab_compare: {e}", file=sys.stderr)
        sys.exit(2)
