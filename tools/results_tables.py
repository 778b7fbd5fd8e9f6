#!/usr/bin/env python3
"""Print the Markdown tables of README.md's "Latest measured results" from the
benchmark results in a folder laid out as bench/results/:

  gemm       gemm/bench-gemm.csv and gemm/bench-gemm.log (`cusync-bench gemm`):
             time ratio ours / cuBLASLt per shape and M, its geomean, the
             points over the targets (1.0526 at M >= 512, 1.1111 below)
  mlp        mlp/bench-mlp.json (launches) and mlp/bench-mlp-graph.json
             (`--graph`): per model and M the best cusync variant over the best
             baseline (the faster of cublas and nosync), the variant, its
             roofline efficiency, bold where the speedup shows above 1.00;
             then the same variant over nosync and over cuBLAS; geomeans
  conv       conv/bench-conv-graph.json and torch/bench-torch-conv.json: per
             model, our pair in stream order over the faster of cuDNN and
             PyTorch (eager or graph), single layers cuDNN / ours, the best
             cusync variant over the best of cuDNN, PyTorch and nosync
  attention  attention/bench-attention-graph.json and
             torch/bench-torch-attention.json, merged as tools/plot_attention.py
             merges them, whose table attention/attention-vs-torch.log must
             hold; per model and phase the geomeans of the README's four rows

    tools/results_tables.py [--results DIR] [--section all|gemm|mlp|conv|attention]

Each table follows a line naming its files; `all` starts with the run's GPU
line from DIR/summary.txt. Values are rounded once, from the files' full
precision: ratios and speedups in a cell to 2 (MLP) or 3 places, geomeans to
3, roofline efficiencies and worst ratios to 2.

Exit status: 0 done; 2 bad usage, or a file missing, malformed or
inconsistent with the others (the message names it).
"""
import argparse
import contextlib
import csv
import io
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plot_attention  # noqa: E402  (the merge and targets that wrote attention-vs-torch.log)

SECTIONS = ("gemm", "mlp", "conv", "attention")

# Where each file comes from, for the message when one is missing.
PRODUCERS = {
    "gemm/bench-gemm.csv": "cusync-bench gemm --csv",
    "gemm/bench-gemm.log": "cusync-bench gemm's standard output",
    "mlp/bench-mlp.json": "cusync-bench mlp --json",
    "mlp/bench-mlp-graph.json": "cusync-bench mlp --graph --json",
    "conv/bench-conv-graph.json": "cusync-bench conv --graph --json",
    "torch/bench-torch-conv.json": "tools/torch_baselines.py conv --json",
    "attention/bench-attention-graph.json": "cusync-bench attention --graph --json",
    "torch/bench-torch-attention.json": "tools/torch_baselines.py attention --json",
    "attention/attention-vs-torch.log": "the standard output of tools/plot_attention.py "
                                        "attention/bench-attention-graph.json --torch torch/bench-torch-attention.json",
    "summary.txt": "scripts/gpu-check",
}

MLP_NAMES = {"gpt3": "GPT-3 175B", "llama": "LLaMA 65B"}
CONV_NAMES = {"resnet": "ResNet-38", "vgg": "VGG-19"}
ATTENTION_NAMES = {"gpt3": "GPT-3", "llama": "LLaMA"}

# The GEMM targets as cusync-bench gemm judges them: cuBLAS time / ours at
# least 0.95 at M >= 512 and 0.90 below.
GEMM_TARGET_M = 512
GEMM_TARGETS = (0.95, 0.90)


class InputError(Exception):
    """A results file that is missing, malformed or inconsistent; exit 2."""

    def __init__(self, path, message):
        super().__init__(f"{path}: {message}")


class Results:
    """The results folder: paths and checked reads of its files."""

    def __init__(self, folder):
        self.folder = folder

    def path(self, name):
        return os.path.join(self.folder, name)

    def text(self, name):
        path = self.path(name)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            raise InputError(path, f"missing (written by {PRODUCERS.get(name, 'scripts/gpu-check')})")
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(path, f"cannot read: {e}")

    def json(self, name):
        try:
            doc = json.loads(self.text(name))
        except ValueError as e:
            raise InputError(self.path(name), f"not valid JSON: {e}")
        if not isinstance(doc, dict):
            raise InputError(self.path(name), "not a JSON object")
        return doc


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite(x):
    return is_num(x) and math.isfinite(x)


# Field kinds of the rows checked by rows_of(): "num?" is a number or null
# (the benches write unmeasured values as null).
KINDS = {
    "str": lambda x: isinstance(x, str),
    "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "num": is_num,
    "num?": lambda x: x is None or is_num(x),
    "bool": lambda x: isinstance(x, bool),
}


def rows_of(doc, key, path, fields):
    """doc[key], a non-empty list of objects each with the given fields of
    the given kinds; anything else is an InputError naming path."""
    rows = doc.get(key)
    if not isinstance(rows, list):
        raise InputError(path, f"no '{key}' list")
    if not rows:
        raise InputError(path, f"'{key}' is empty: no results")
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise InputError(path, f"{key}[{i}] is not an object")
        for field, kind in fields.items():
            if field not in r:
                raise InputError(path, f"{key}[{i}] has no field '{field}'")
            if not KINDS[kind](r[field]):
                raise InputError(path, f"{key}[{i}].{field} is {json.dumps(r[field])}, not a {kind.rstrip('?')}")
    return rows


def expect_timing(doc, path, timing):
    if doc.get("timing") != timing:
        raise InputError(path, f"its timing is {json.dumps(doc.get('timing'))}, expected \"{timing}\"")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(head, body):
    """Markdown table lines: the header row, the rule, the body rows."""
    def row(cells):
        return "|" + "|".join(" %s " % c if c else " " for c in cells) + "|"

    return [row(head), "|" + "---|" * len(head)] + [row(r) for r in body]


def counted(text, n, total, what):
    """text, with the count where only some of the points had the values."""
    if n == 0:
        return "-"
    return text if n == total else f"{text} ({n} of {total} {what})"


def either(names):
    """`a`, `b` or `c`."""
    quoted = ["`%s`" % n for n in names]
    return " or ".join([", ".join(quoted[:-1])] + quoted[-1:]) if len(quoted) > 1 else "".join(quoted)


# --- GEMM ---------------------------------------------------------------------------------------------------------

# A row of the log's table: shape, M, N, K, config, ours_ms, cublas_ms, ours_TF,
# cublas_TF, ratio, ...; "  MISS" at the end where the point misses its target.
GEMM_LOG_ROW = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\d+\.\d{3})\s")


def gemm_section(res):
    csv_name, log_name = "gemm/bench-gemm.csv", "gemm/bench-gemm.log"
    csv_path, log_path = res.path(csv_name), res.path(log_name)
    reader = csv.DictReader(io.StringIO(res.text(csv_name)))
    need = ("shape", "M", "N", "K", "ratio")
    if not reader.fieldnames or any(f not in reader.fieldnames for f in need):
        raise InputError(csv_path, "not a cusync-bench gemm CSV (it needs the columns %s)" % ", ".join(need))
    rows = []
    for line_no, r in enumerate(reader, start=2):
        try:
            rows.append(dict(shape=r["shape"], M=int(r["M"]), N=int(r["N"]), K=int(r["K"]), ratio=float(r["ratio"])))
        except (TypeError, ValueError):
            raise InputError(csv_path, f"line {line_no}: M, N, K and ratio must be numbers")
        if not (math.isfinite(rows[-1]["ratio"]) and rows[-1]["ratio"] > 0):
            raise InputError(csv_path, f"line {line_no}: ratio {r['ratio']} is not a positive number")
    if not rows:
        raise InputError(csv_path, "no result rows")
    # The log's ratio, rounded once from the measured times, is what the
    # cells show: the CSV's, rounded to 4 places and then again to 3, can
    # be one off in the last place where its fourth place is a 5.
    logged = {}
    for line in res.text(log_name).splitlines():
        m = GEMM_LOG_ROW.match(line)
        if m:
            logged[(m.group(1), int(m.group(2)))] = (m.group(5), line.rstrip().endswith("MISS"))
    for r in rows:
        key = (r["shape"], r["M"])
        if key not in logged:
            raise InputError(log_path, f"no row for {r['shape']} M = {r['M']} of {csv_path}: not from the same run")
        text, r["miss"] = logged.pop(key)
        if abs(float(text) - r["ratio"]) > 0.00051:
            raise InputError(log_path, f"ratio {text} at {r['shape']} M = {r['M']}, {r['ratio']} in {csv_path}: "
                                       "not from the same run")
        r["text"] = text
    if logged:
        shape, M = next(iter(logged))
        raise InputError(log_path, f"a row for {shape} M = {M}, which {csv_path} lacks: not from the same run")

    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    ms = sorted({r["M"] for r in rows})
    cell = {(r["shape"], r["M"]): r for r in rows}
    body = []
    for s in shapes:
        first = next(r for r in rows if r["shape"] == s)
        body.append(["%s (%d x %d)" % (s, first["N"], first["K"])]
                    + [cell[(s, M)]["text"] if (s, M) in cell else "-" for M in ms])
    over = sorted((r for r in rows if r["miss"]), key=lambda r: -float(r["text"]))
    limits = "%.4f at M >= %d, %.4f below" % (1 / GEMM_TARGETS[0], GEMM_TARGET_M, 1 / GEMM_TARGETS[1])
    points = ", ".join("%s M = %d (%s)" % (r["shape"], r["M"], r["text"]) for r in over)
    return ([f"GEMM, time ratio ours / cuBLASLt (lower is better), from {csv_path} and {log_path}:",
             "geomean %.3f over %d shapes; %s over the targets (%s)%s" % (
                 geomean([r["ratio"] for r in rows]), len(rows),
                 "%d point%s" % (len(over), "s" * (len(over) != 1)) if over else "no point", limits,
                 ": " + points if over else ""),
             ""] + table(["shape (N x K)"] + [str(M) for M in ms], body))


# --- MLP ----------------------------------------------------------------------------------------------------------

MLP_FIELDS = {"model": "str", "M": "int", "variant": "str", "ms": "num?", "speedup": "num?",
              "speedup_vs_cublas": "num?", "speedup_vs_nosync": "num?", "roofline_eff": "num?", "ok": "bool"}


def mlp_table(res, name, timing, title):
    path = res.path(name)
    doc = res.json(name)
    expect_timing(doc, path, timing)
    rows = rows_of(doc, "results", path, MLP_FIELDS)
    models = list(dict.fromkeys(r["model"] for r in rows))
    ms = list(dict.fromkeys(r["M"] for r in rows))
    body, wins, cublas_faster = [], [], []
    for model in models:
        # As the bench's summary: per M the fastest passing variant other
        # than the two baselines, where both baselines passed.
        winners = []
        for M in ms:
            here = [r for r in rows if r["model"] == model and r["M"] == M and r["ok"] and finite(r["ms"])]
            base = {r["variant"]: r for r in here if r["variant"] in ("cublas", "nosync")}
            ours = [r for r in here if r["variant"] not in ("cublas", "nosync")]
            best = min(ours, key=lambda r: r["ms"]) if ours and len(base) == 2 else None
            if best and not all(finite(best[k]) for k in ("speedup", "speedup_vs_nosync", "speedup_vs_cublas")):
                raise InputError(path, f"{model} M = {M} {best['variant']}: a timed row without its speedups")
            winners.append(best)
            if best and best["speedup"] > 1:
                wins.append("%s M = %d (%s, %.3f)" % (MLP_NAMES.get(model, model), M, best["variant"], best["speedup"]))
            if len(base) == 2 and base["cublas"]["ms"] < base["nosync"]["ms"]:
                cublas_faster.append((model, M))
        timed = [w for w in winners if w]

        def line(label, key, cell):
            g = counted("%.3f" % geomean([w[key] for w in timed]), len(timed), len(ms), "M") if timed else "-"
            return [label] + [cell(w) if w else "-" for w in winners] + [g]

        def main_cell(w):
            sp = "%.2f" % w["speedup"]
            eff = "%.2f" % w["roofline_eff"] if finite(w["roofline_eff"]) else "-"
            return "%s %s (%s)" % ("**%s**" % sp if float(sp) > 1 else sp, w["variant"], eff)

        body.append(line(MLP_NAMES.get(model, model), "speedup", main_cell))
        body.append(line("over nosync", "speedup_vs_nosync", lambda w: "%.2f" % w["speedup_vs_nosync"]))
        body.append(line("over cuBLAS", "speedup_vs_cublas", lambda w: "%.2f" % w["speedup_vs_cublas"]))
    faster = "; ".join("%s M = %s" % (MLP_NAMES.get(m, m), ", ".join(str(M) for mm, M in cublas_faster if mm == m))
                       for m in models if any(mm == m for mm, _ in cublas_faster))
    return ([f"MLP, {title}, from {path}:",
             "the best cusync variant beats the best baseline at: %s; cuBLAS is the faster baseline at: %s" % (
                 ", ".join(wins) or "no point", faster or "no point"),
             ""] + table(["M"] + [str(M) for M in ms] + ["geomean"], body))


def mlp_chain_table(res, name, title):
    """Per model and M the fastest cusync variant over the faster baseline
    in runs chained back to back (the bench's --chain), where the results
    carry them; else no lines."""
    path = res.path(name)
    rows = rows_of(res.json(name), "results", path, MLP_FIELDS)
    rows = [r for r in rows if r["ok"] and finite(r.get("chained_us_per_run"))]
    if not rows:
        return []
    models = list(dict.fromkeys(r["model"] for r in rows))
    ms = list(dict.fromkeys(r["M"] for r in rows))
    body = []
    for model in models:
        cells, speedups = [], []
        for M in ms:
            here = {r["variant"]: r["chained_us_per_run"] for r in rows if r["model"] == model and r["M"] == M}
            ours = {v: us for v, us in here.items() if v not in ("cublas", "nosync")}
            if "cublas" not in here or "nosync" not in here or not ours:
                cells.append("-")
                continue
            win = min(ours, key=ours.get)
            sp = min(here["cublas"], here["nosync"]) / ours[win]
            speedups.append(sp)
            cells.append("%s %s" % ("**%.2f**" % sp if round(sp, 2) > 1 else "%.2f" % sp, win))
        g = counted("%.3f" % geomean(speedups), len(speedups), len(ms), "M") if speedups else "-"
        body.append([MLP_NAMES.get(model, model)] + cells + [g])
    return ([f"MLP, {title}, runs chained back to back (us per run over 20 runs between two events), from {path}:",
             ""] + table(["M"] + [str(M) for M in ms] + ["geomean"], body))


def mlp_section(res):
    lines = (mlp_table(res, "mlp/bench-mlp.json", "launches", "back-to-back launches") + [""]
             + mlp_table(res, "mlp/bench-mlp-graph.json", "graph", "CUDA graph replays (--graph)"))
    chained = mlp_chain_table(res, "mlp/bench-mlp-graph.json", "CUDA graph replays")
    return lines + ([""] + chained if chained else [])


# --- Convolution --------------------------------------------------------------------------------------------------


def conv_section(res):
    name, torch_name = "conv/bench-conv-graph.json", "torch/bench-torch-conv.json"
    path, torch_path = res.path(name), res.path(torch_name)
    doc = res.json(name)
    expect_timing(doc, path, "graph")
    rows = rows_of(doc, "results", path, {"model": "str", "pair": "str", "batch": "int", "variant": "str",
                                          "cusync": "bool", "ms": "num?", "ok": "bool"})
    singles = rows_of(doc, "singles", path, {"model": "str", "pair": "str", "batch": "int", "layer": "int",
                                             "cudnn_over_ms": "num?"})
    target = doc.get("single_target", 0.9)
    if not finite(target):
        raise InputError(path, f"single_target is {json.dumps(target)}, not a number")
    torch = {}
    for r in rows_of(res.json(torch_name), "results", torch_path, {"bench": "str", "model": "str"}):
        if r["bench"] != "conv":
            continue
        for field, kind in (("layers", "str"), ("batch", "int"), ("mode", "str"), ("ms", "num?")):
            if field not in r or not KINDS[kind](r[field]):
                raise InputError(torch_path, f"a conv row without a valid '{field}': {json.dumps(r)}")
        if finite(r["ms"]) and r["mode"] in ("eager", "graph"):
            torch.setdefault((r["model"], r["layers"], r["batch"]), {})[r["mode"]] = r["ms"]

    models = list(dict.fromkeys(r["model"] for r in rows))
    cusync = list(dict.fromkeys(r["variant"] for r in rows if r["cusync"] and r["ok"] and finite(r["ms"])))
    head, stream, single, best = [""], [], [], []
    for model in models:
        points = {}
        for r in rows:
            if r["model"] == model and r["ok"] and finite(r["ms"]):
                points.setdefault((r["pair"], r["batch"]), {})[r["variant"]] = r["ms"]
        total = len(dict.fromkeys((r["pair"], r["batch"]) for r in rows if r["model"] == model))
        head.append("%s (%d points)" % (CONV_NAMES.get(model, model), total))
        over_fastest, over_best = [], []
        for (pair, batch), t in points.items():
            pt = torch.get((model, pair, batch), {})
            ours = [t[v] for v in cusync if v in t]
            if "cudnn" in t and "nosync" in t and pt:
                fastest = min([t["cudnn"]] + list(pt.values()))
                over_fastest.append(fastest / t["nosync"])
                if ours:
                    over_best.append(min(fastest, t["nosync"]) / min(ours))
        # Singles: our layers alone; files with a variant field also hold
        # cuDNN's rows (ratio 1) and cuDNN without its fused epilogue.
        ratios = [r["cudnn_over_ms"] for r in singles
                  if r["model"] == model and r.get("variant", "ours") == "ours" and finite(r["cudnn_over_ms"])]
        stream.append(counted("%.3f" % geomean(over_fastest), len(over_fastest), total, "points")
                      if over_fastest else "-")
        single.append("%.3f, %d of %d under %.2f" % (geomean(ratios), sum(x < target for x in ratios), len(ratios),
                                                     target) if ratios else "-")
        best.append(counted("%.3f" % geomean(over_best), len(over_best), total, "points") if over_best else "-")
    body = [["our conv pair in stream order over the faster of cuDNN and PyTorch"] + stream,
            ["single layers, cuDNN time / ours (target >= %.2f everywhere)" % target] + single,
            ["best cusync variant (%s) over the best baseline" % either(cusync)] + best]
    return [f"Convolution, CUDA graph replays, from {path} and {torch_path}:", ""] + table(head, body)


# --- Attention ----------------------------------------------------------------------------------------------------


def attention_section(res):
    name, torch_name, log_name = ("attention/bench-attention-graph.json", "torch/bench-torch-attention.json",
                                  "attention/attention-vs-torch.log")
    path, torch_path, log_path = res.path(name), res.path(torch_name), res.path(log_name)
    doc = res.json(name)
    expect_timing(doc, path, "graph")
    rows_of(doc, "results", path, {"model": "str", "M": "int", "L": "int", "variant": "str", "ms": "num?",
                                   "roofline_eff": "num?", "ok": "bool"})
    torch = {}
    for r in rows_of(res.json(torch_name), "results", torch_path, {"bench": "str", "model": "str"}):
        if r["bench"] != "attention":
            continue
        for field, kind in (("M", "int"), ("L", "int"), ("mode", "str"), ("ms", "num?"), ("backend", "str")):
            if field not in r or not KINDS[kind](r[field]):
                raise InputError(torch_path, f"an attention row without a valid '{field}': {json.dumps(r)}")
        if finite(r["ms"]):
            torch.setdefault((r["model"], r["M"], r["L"]), {})[r["mode"]] = r
    ours = plot_attention.ours_by_shape(doc)
    if not ours:
        raise InputError(path, "no timed result that passed its check")
    records = plot_attention.merge(ours, torch)

    # The log is plot_attention.py's table of these two files; one that
    # differs comes from another run.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        plot_attention.print_table(records, doc, True)
    want = [" ".join(line.split()) for line in printed.getvalue().splitlines()[1:]]
    log = [" ".join(line.split()) for line in res.text(log_name).splitlines()]
    if want[0] not in log:
        raise InputError(log_path, "has no table of tools/plot_attention.py with PyTorch's times")
    start = log.index(want[0])
    for i, line in enumerate(want[1:], start=1):
        have = log[start + i] if start + i < len(log) else "(end of file)"
        if have != line:
            raise InputError(log_path, f"line '{have}' where {path} and {torch_path} give '{line}': not from these "
                                       f"files (rerun: {PRODUCERS[log_name]})")
    after = log[start + len(want)] if start + len(want) < len(log) else "targets:"
    if not after.startswith("targets"):
        raise InputError(log_path, f"line '{after}' after the shapes of {path} and {torch_path}: not from these "
                                   f"files (rerun: {PRODUCERS[log_name]})")

    head, columns = [""], []
    for model in dict.fromkeys(r["model"] for r in records):
        for phase in ("decode", "prefill"):
            rs = [r for r in records if r["model"] == model and r["phase"] == phase]
            if rs:
                head.append("%s %s (%d)" % (ATTENTION_NAMES.get(model, model), phase, len(rs)))
                columns.append(rs)
    stream, block, alone, eff = [], [], [], []
    missed = judged = 0
    for rs in columns:
        n = len(rs)
        v = [min(t for t in (r["torch_eager"], r["torch_graph"]) if finite(t)) / r["stream"] for r in rs
             if finite(r["stream"]) and (finite(r["torch_eager"]) or finite(r["torch_graph"]))]
        stream.append(counted("%.3f, wins %d" % (geomean(v), sum(x > 1 for x in v)), len(v), n, "shapes")
                      if v else "-")
        v = [r["speedup"] for r in rs if finite(r["speedup"])]
        block.append(counted("%.3f" % geomean(v), len(v), n, "shapes") if v else "-")
        v = [r["attention_ratio"] for r in rs if finite(r["attention_ratio"])]
        alone.append(counted("%.3f, worst %.2f" % (geomean(v), min(v)), len(v), n, "shapes") if v else "-")
        for r in rs:
            if finite(r["torch_attention"]):
                judged += 1
                ok = finite(r["attention_ratio"]) and r["attention_ratio"] >= plot_attention.ATTENTION_TARGET[r["phase"]]
                missed += not ok
        v = [r["eff"] for r in rs if finite(r["eff"])]
        eff.append(counted("%.2f-%.2f" % (min(v), max(v)), len(v), n, "shapes") if v else "-")
    targets = plot_attention.ATTENTION_TARGET
    status = ("met here" if not missed else "missed at %d of %d shapes here" % (missed, judged)) if judged else \
        "not judged: no PyTorch SDPA times"
    body = [["our three kernels in stream order (`stream`) over PyTorch's best block"] + stream,
            ["the cusync pipeline (`rowsync`) over the best baseline (PyTorch or `stream`)"] + block,
            ["our attention kernel alone over PyTorch's best SDPA (targets %s decode, %s prefill: %s)" % (
                targets["decode"], targets["prefill"], status)] + alone,
            ["roofline efficiency of `rowsync` (target %.2f at decode L = %d)" % (
                plot_attention.EFFICIENCY_TARGET, plot_attention.EFFICIENCY_L)] + eff]
    return ([f"Attention block, CUDA graph replays, from {path} and {torch_path} (as in {log_path}):", ""]
            + table(head, body))


# --- The run ------------------------------------------------------------------------------------------------------


def run_line(res):
    """The GPU, driver and date of the run, and gpu-check's verdict."""
    path = res.path("summary.txt")
    lines = res.text("summary.txt").splitlines()
    gpu = next((l[len("gpu:"):].strip() for l in lines if l.startswith("gpu:")), None)
    if not gpu:
        raise InputError(path, "no 'gpu:' line: not a scripts/gpu-check summary")
    parts = [p.strip() for p in gpu.split(",")]
    what = "%s, driver %s, %s" % (parts[0], parts[1], parts[-1]) if len(parts) >= 3 else gpu
    failed = [l for l in lines if re.match(r"^(bench|torch baselines) .*: FAILED", l)]
    verdict = next((l for l in reversed(lines) if l.startswith("gpu-check:")), "gpu-check: no verdict")
    return [f"Run ({path}): {what}; {verdict}" + "".join("; " + l for l in failed), ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Shown in the headers: relative where run inside the repository.
    default = os.path.normpath(os.path.join(HERE, "..", "bench", "results"))
    if not os.path.relpath(default).startswith(".."):
        default = os.path.relpath(default)
    ap.add_argument("--results", metavar="DIR", default=default,
                    help="the results folder, laid out as bench/results/ (default: %(default)s)")
    ap.add_argument("--section", choices=("all",) + SECTIONS, default="all",
                    help="the table(s) to print (default: all, with the run's line from DIR/summary.txt)")
    args = ap.parse_args()
    if not os.path.isdir(args.results):
        print(f"results_tables: {args.results}: no such folder", file=sys.stderr)
        return 2
    res = Results(args.results)
    makers = {"gemm": gemm_section, "mlp": mlp_section, "conv": conv_section, "attention": attention_section}
    try:
        # Everything is read before anything prints, so that an error leaves no half output.
        out = run_line(res) if args.section == "all" else []
        for i, s in enumerate(SECTIONS if args.section == "all" else (args.section,)):
            out += ([""] if i else []) + makers[s](res)
    except InputError as e:
        print(f"results_tables: {e}", file=sys.stderr)
        return 2
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
