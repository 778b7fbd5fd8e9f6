#!/usr/bin/env python3
"""Compare `cusync-bench attention` results with PyTorch's and plot them.

    tools/plot_attention.py attention_bench.json [--torch bench-torch-attention.json] [-o attention_speedup.png]

Merges the PyTorch baselines of `tools/torch_baselines.py attention --json`
where given (its modes: `eager` and `graph`, the whole block; `attention-graph`,
SDPA alone, the fastest backend each). Per shape the best baseline is the
fastest of our `cublas` and `stream` variants and PyTorch's eager and graph
blocks. Prints a table, one row per model and shape: our variants, PyTorch's
times, the best baseline, the cusync block's (`rowsync`) speedup over it and
roofline efficiency, and our attention stage against PyTorch's best SDPA
(its time / ours); then the status of each target:

  attention stage: at least 0.9x PyTorch's best SDPA at every decode shape,
                   at least 0.8x at every prefill shape;
  cusync block:    faster than the best baseline at every shape, geomean
                   speedup at least 1.10 over the decode shapes, roofline
                   efficiency at least 0.80 at every decode shape with L = 4096.

Without the PyTorch file (absent, or not given) it says so and compares with
our in-process baselines only. Then writes a PNG: per model, the block's
speedups over the best baseline and the attention stage's ratio to PyTorch.

Needs matplotlib for the PNG (Debian: python3-matplotlib; scripts/install-deps
installs it); the table prints without it.
Exit status: 0 done; 1 no timed results in the file, an unreadable PyTorch
file, or matplotlib missing.
"""
import math
import os
import sys

import plot_setup

ATTENTION_TARGET = {"decode": 0.9, "prefill": 0.8}
DECODE_GEOMEAN_TARGET = 1.10
EFFICIENCY_TARGET = 0.80
EFFICIENCY_L = 4096


def finite(x):
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def ours_by_shape(data):
    """{(model, M, L): {variant: row}} of the timed rows that passed their check."""
    shapes = {}
    for r in data.get("results", []):
        if r.get("ok") and finite(r.get("ms")):
            shapes.setdefault((r["model"], r["M"], r["L"]), {})[r["variant"]] = r
    return shapes


def torch_by_shape(path):
    """{(model, M, L): {mode: row}} from torch_baselines.py's JSON; None where
    the file does not exist; exits 1 where it cannot be read."""
    if not path or not os.path.exists(path):
        return None
    try:
        rows = plot_setup.load(path).get("results", [])
    except (OSError, ValueError) as e:
        sys.exit(f"plot_attention: cannot read the PyTorch baselines {path}: {e}")
    shapes = {}
    for r in rows:
        if r.get("bench") == "attention" and finite(r.get("ms")):
            shapes.setdefault((r["model"], r["M"], r["L"]), {})[r["mode"]] = r
    return shapes


def merge(ours, torch):
    """One record per shape of ours: the times, the best baseline, the ratios."""
    records = []
    for (model, M, L), v in ours.items():
        t = (torch or {}).get((model, M, L), {})
        ms = lambda name: v[name]["ms"] if name in v else float("nan")
        tms = lambda mode: t[mode]["ms"] if mode in t else float("nan")
        bases = [(ms("cublas"), "cublas"), (ms("stream"), "stream"),
                 (tms("eager"), "torch eager"), (tms("graph"), "torch graph")]
        bases = [b for b in bases if finite(b[0])]
        base_ms, base_name = min(bases) if bases else (float("nan"), "-")
        tile = ms("rowsync")
        attn, torch_attn = ms("attention"), tms("attention-graph")
        records.append(dict(
            model=model, M=M, L=L, phase="prefill" if L == 0 else "decode",
            stream=ms("stream"), rowsync=tile, cublas=ms("cublas"), attention=attn,
            torch_eager=tms("eager"), torch_graph=tms("graph"), torch_attention=torch_attn,
            torch_backend=t["attention-graph"]["backend"] if "attention-graph" in t else "-",
            base_ms=base_ms, base=base_name,
            speedup=base_ms / tile if finite(tile) and finite(base_ms) else float("nan"),
            stream_speedup=base_ms / ms("stream") if finite(ms("stream")) and finite(base_ms) else float("nan"),
            eff=v["rowsync"]["roofline_eff"] if "rowsync" in v else float("nan"),
            attention_ratio=torch_attn / attn if finite(attn) and finite(torch_attn) else float("nan")))
    order = {"decode": 0, "prefill": 1}
    records.sort(key=lambda r: (r["model"], order[r["phase"]], r["L"], r["M"]))
    return records


def print_table(records, data, have_torch):
    timing = "CUDA graph replays" if data.get("timing") == "graph" else "back-to-back launches"
    print(f"attention block on {data.get('device', '?')}: ours ({timing}) against "
          + ("PyTorch (eager and graph) and " if have_torch else "")
          + "our in-process baselines; ms per step; base = the fastest of "
          + ("cublas, stream, torch eager and torch graph" if have_torch else "cublas and stream")
          + "; speedup = base / rowsync; attn = PyTorch's best SDPA / our attention stage")
    head = ("model", "phase", "M", "L", "stream", "rowsync", "cublas", "t_eager", "t_graph", "base", "speedup",
            "eff", "attention", "t_sdpa", "attn", "sdpa_backend")
    print("%-6s %-7s %5s %5s %9s %9s %9s %9s %9s %-12s %7s %5s %9s %9s %5s %s" % head)
    for r in records:
        print("%-6s %-7s %5d %5d %9.4f %9.4f %9.4f %9.4f %9.4f %-12s %7.3f %5.2f %9.4f %9.4f %5.2f %s" % (
            r["model"], r["phase"], r["M"], r["L"], r["stream"], r["rowsync"], r["cublas"], r["torch_eager"],
            r["torch_graph"], r["base"], r["speedup"], r["eff"], r["attention"], r["torch_attention"],
            r["attention_ratio"], r["torch_backend"]))


def shape_name(r):
    return "%s M=%d L=%d" % (r["model"], r["M"], r["L"])


def judge(records, value, passes, unjudged=lambda r: False):
    """The status of a per-shape target: each record's value(r) must pass;
    a record without its value (a failed or missing variant) misses; where
    unjudged(r) (the baseline is missing) it does not count."""
    rs = [r for r in records if not unjudged(r)]
    if not rs:
        return "UNKNOWN (no shape with the numbers it needs)"
    missed = ["%s %s" % (shape_name(r), "%.3f" % value(r) if finite(value(r)) else "no time")
              for r in rs if not (finite(value(r)) and passes(value(r)))]
    skipped = len(records) - len(rs)
    note = "; %d shape%s without PyTorch's time" % (skipped, "s" * (skipped > 1)) if skipped else ""
    if missed:
        return "MISSED at %d of %d shapes: %s%s" % (len(missed), len(rs), ", ".join(missed[:6])
                                                    + (", ..." if len(missed) > 6 else ""), note)
    low = min(rs, key=lambda r: value(r))
    return "MET (%d shapes, lowest %.3f at %s%s)" % (len(rs), value(low), shape_name(low), note)


def print_targets(records, have_torch):
    print("targets" + ("" if have_torch else " (no PyTorch baselines: the attention targets cannot be judged, the "
                                             "block's are judged against cublas and stream only)") + ":")
    for phase, target in ATTENTION_TARGET.items():
        line = "  attention stage >= %.1fx PyTorch's best SDPA at every %s shape: " % (target, phase)
        if not have_torch:
            print(line + "UNKNOWN (no PyTorch baselines)")
            continue
        print(line + judge([r for r in records if r["phase"] == phase], lambda r: r["attention_ratio"],
                           lambda v: v >= target, lambda r: not finite(r["torch_attention"])))
    print("  cusync block faster than the best baseline at every shape: "
          + judge(records, lambda r: r["speedup"], lambda v: v > 1.0))
    decode = [r for r in records if r["phase"] == "decode" and finite(r["speedup"])]
    line = "  cusync block geomean speedup >= %.2f over the decode shapes: " % DECODE_GEOMEAN_TARGET
    if decode:
        g = geomean([r["speedup"] for r in decode])
        per_model = ", ".join("%s %.3f" % (m, geomean([r["speedup"] for r in decode if r["model"] == m]))
                              for m in dict.fromkeys(r["model"] for r in decode))
        print(line + "%.3f (%s; %d shapes): %s" % (g, per_model, len(decode),
                                                   "MET" if g >= DECODE_GEOMEAN_TARGET else "MISSED"))
    else:
        print(line + "UNKNOWN (no decode shape with a speedup)")
    print("  cusync block roofline efficiency >= %.2f at decode L = %d: " % (EFFICIENCY_TARGET, EFFICIENCY_L)
          + judge([r for r in records if r["phase"] == "decode" and r["L"] == EFFICIENCY_L], lambda r: r["eff"],
                  lambda v: v >= EFFICIENCY_TARGET))


def plot(records, data, have_torch, output):
    plt = plot_setup.pyplot("attention")
    models = list(dict.fromkeys(r["model"] for r in records))
    nrows = 2 if have_torch else 1
    fig, axes = plt.subplots(nrows, len(models), figsize=(9 * len(models), 4.5 * nrows), squeeze=False)
    names = {"gpt3": "GPT-3 175B", "llama": "LLaMA 65B"}
    timing = "CUDA graph replays" if data.get("timing") == "graph" else "back-to-back launches"
    for col, model in enumerate(models):
        rs = [r for r in records if r["model"] == model]
        labels = ["%d/%d" % (r["M"], r["L"]) for r in rs]
        head = "%s attention, %s, ours as %s" % (names.get(model, model), data.get("device", ""), timing)
        bars(axes[0][col], labels, [("rowsync", [r["speedup"] for r in rs], None),
                                    ("stream", [r["stream_speedup"] for r in rs], "gray")],
             "speedup over the best baseline", head + "\nblock: speedup over the best baseline", [(1.0, "-")])
        if have_torch:
            bars(axes[1][col], labels, [("attention stage", [r["attention_ratio"] for r in rs], None)],
                 "PyTorch SDPA time / ours",
                 head + "\nattention stage alone: PyTorch's best SDPA time / ours (targets, dashed: %.1f decode, "
                 "%.1f prefill)" % (ATTENTION_TARGET["decode"], ATTENTION_TARGET["prefill"]),
                 [(t, "--") for t in sorted(set(ATTENTION_TARGET.values()))])
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print("wrote", output)


def bars(ax, labels, series, ylabel, title, lines):
    width = 0.8 / len(series)
    lowest = min(y for y, _ in lines)
    for i, (name, ys, color) in enumerate(series):
        lowest = min([lowest] + [y for y in ys if finite(y)])
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, ys, width, label=name, color=color)
    for y, style in lines:
        ax.axhline(y, color="black", linewidth=0.8, linestyle=style)
    # Bars start below the lowest value, not at 0, so that percent differences show.
    ax.set_ylim(max(0.0, lowest - 0.05), None)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("M / L (new tokens / cached tokens)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)


def main():
    args = plot_setup.parse(__doc__, "attention", lambda ap: ap.add_argument(
        "--torch", metavar="FILE", help="PyTorch's baselines: tools/torch_baselines.py attention --json FILE"))
    data = plot_setup.load(args.json)
    ours = ours_by_shape(data)
    if not ours:
        sys.exit("plot_attention: no timed results in " + args.json)
    torch = torch_by_shape(args.torch)
    if torch is None:
        print("no PyTorch baselines (%s): the best baseline is the faster of cublas and stream" % (
            "no --torch file given" if not args.torch else args.torch + " does not exist"))
    records = merge(ours, torch)
    print_table(records, data, torch is not None)
    print_targets(records, torch is not None)
    sys.stdout.flush()
    plot(records, data, torch is not None, args.output)


if __name__ == "__main__":
    main()
