#!/usr/bin/env python3
"""Plot `cusync-bench mlp` results: per M, each cusync variant's speedup over
the best baseline (the faster of the cuBLAS pipeline and our own GEMMs in
stream order, `nosync`), and the cuBLAS pipeline's own; one panel per model.

    tools/plot_mlp.py mlp_bench.json [-o mlp_speedup.png]

Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps installs it).
Exit status: 0 done; 1 matplotlib missing, or no timed results in the file.
"""
import sys

import plot_setup


def main():
    args, plt, data = plot_setup.parse_and_load(__doc__, "mlp")
    rows = [r for r in data["results"] if r["ok"] and r["speedup"] is not None]
    models = sorted({r["model"] for r in rows})
    if not models:
        sys.exit("plot_mlp: no results with timings in " + args.json)
    fig, axes = plt.subplots(1, len(models), figsize=(7 * len(models), 4.8), squeeze=False)
    for ax, model in zip(axes[0], models):
        mr = [r for r in rows if r["model"] == model]
        Ms = sorted({r["M"] for r in mr})
        variants = [v for v in dict.fromkeys(r["variant"] for r in mr) if v != "nosync"]
        width = 0.8 / max(1, len(variants))
        lowest = 1.0
        for i, v in enumerate(variants):
            ys = []
            for M in Ms:
                hit = [r["speedup"] for r in mr if r["M"] == M and r["variant"] == v]
                ys.append(hit[0] if hit else float("nan"))
            lowest = min([lowest] + [y for y in ys if y == y])
            xs = [j + (i - (len(variants) - 1) / 2) * width for j in range(len(Ms))]
            ax.bar(xs, ys, width, label=v, color="gray" if v == "cublas" else None)
        ax.axhline(1.0, color="black", linewidth=0.8)
        # Bars start below the lowest speedup, not at 0, so that percent differences show.
        ax.set_ylim(max(0.0, lowest - 0.05), None)
        ax.set_xticks(range(len(Ms)))
        ax.set_xticklabels([str(M) for M in Ms])
        ax.set_xlabel("tokens M")
        ax.set_ylabel("speedup over the best baseline")
        timing = "CUDA graph replays" if data.get("timing") == "graph" else "back-to-back launches"
        ax.set_title("%s MLP, %s, %s" % ("GPT-3 175B" if model == "gpt3" else "LLaMA 65B", data.get("device", ""),
                                          timing), fontsize=10)
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print("wrote", args.output)


if __name__ == "__main__":
    main()
