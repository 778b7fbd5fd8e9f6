#!/usr/bin/env python3
"""Plot `cusync-bench conv` results, one column of panels per model:

  top:    per layer pair and batch, the speedup of the best cusync variant
          over the best baseline (the faster of cuDNN and our two
          convolutions in stream order, `nosync`); in a file without cusync
          variants, nosync's speedup over cuDNN instead;
  bottom: per layer pair and batch, cuDNN's time / ours for the slower of the
          pair's two layers alone (the target: at least 0.9, dashed).

    tools/plot_conv.py conv_bench.json [-o conv_speedup.png]

Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps installs it).
Exit status: 0 done; 1 matplotlib missing, or no timed results in the file.
"""
import math
import sys

import plot_setup


def finite(x):
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def top_values(rows, model):
    """{(pair, batch): speedup} and the panel's title."""
    mine = [r for r in rows if r["model"] == model and r["ok"] and finite(r["ms"])]
    best = {}
    for r in mine:
        if r.get("cusync") and finite(r["speedup"]):
            key = (r["pair"], r["batch"])
            best[key] = max(best.get(key, 0.0), r["speedup"])
    if best:
        return best, "best cusync variant over the best baseline"
    ms = {}
    for r in mine:
        ms[(r["pair"], r["batch"], r["variant"])] = r["ms"]
    ratio = {}
    for (pair, batch, variant), t in ms.items():
        if variant == "nosync" and (pair, batch, "cudnn") in ms:
            ratio[(pair, batch)] = ms[(pair, batch, "cudnn")] / t
    return ratio, "nosync over cuDNN (no cusync variant in this run)"


def bottom_values(singles, model):
    """{(pair, batch): min over the pair's layers of cuDNN's time / ours}."""
    worst = {}
    for r in singles:
        if r["model"] != model or r["variant"] != "ours" or not finite(r["cudnn_over_ms"]):
            continue
        key = (r["pair"], r["batch"])
        worst[key] = min(worst.get(key, float("inf")), r["cudnn_over_ms"])
    return worst


def bars(ax, values, pairs, batches, ylabel, title, line=1.0):
    width = 0.8 / max(1, len(batches))
    lowest = line
    for i, b in enumerate(batches):
        ys = [values.get((p, b), float("nan")) for p in pairs]
        lowest = min([lowest] + [y for y in ys if y == y])
        xs = [j + (i - (len(batches) - 1) / 2) * width for j in range(len(pairs))]
        ax.bar(xs, ys, width, label="batch %d" % b)
    ax.axhline(line, color="black", linewidth=0.8, linestyle="--" if line != 1.0 else "-")
    # Bars start below the lowest value, not at 0, so that percent differences show.
    ax.set_ylim(max(0.0, lowest - 0.05), None)
    ax.set_xticks(range(len(pairs)))
    ax.set_xticklabels(pairs, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=min(5, len(batches)))


def main():
    args, plt, data = plot_setup.parse_and_load(__doc__, "conv")
    rows, singles = data.get("results", []), data.get("singles", [])
    models = list(dict.fromkeys(r["model"] for r in rows + singles))
    panels = []
    for model in models:
        top, top_title = top_values(rows, model)
        panels.append((model, top, top_title, bottom_values(singles, model)))
    has_top = any(p[1] for p in panels)
    has_bottom = any(p[3] for p in panels)
    if not has_top and not has_bottom:
        sys.exit("plot_conv: no timed results to compare in " + args.json)
    nrows = int(has_top) + int(has_bottom)
    fig, axes = plt.subplots(nrows, len(panels), figsize=(8 * len(panels), 4.5 * nrows), squeeze=False)
    timing = "CUDA graph replays" if data.get("timing") == "graph" else "back-to-back launches"
    names = {"resnet": "ResNet-38", "vgg": "VGG-19"}
    for col, (model, top, top_title, bottom) in enumerate(panels):
        pairs = list(dict.fromkeys(r["pair"] for r in rows + singles if r["model"] == model))
        batches = sorted({r["batch"] for r in rows + singles if r["model"] == model})
        row = 0
        head = "%s, %s, %s" % (names.get(model, model), data.get("device", ""), timing)
        if has_top:
            bars(axes[row][col], top, pairs, batches, "speedup", "%s\n%s" % (head, top_title))
            row += 1
        if has_bottom:
            target = data.get("single_target", 0.9)
            bars(axes[row][col], bottom, pairs, batches, "cuDNN time / ours",
                 "%s\nsingle layers: cuDNN conv + bias + ReLU time / ours, the slower layer of the pair" % head,
                 line=target)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
