"""What the plot scripts (plot_mlp.py, plot_conv.py) share: their command
line (a cusync-bench JSON file, -o PNG) and matplotlib, loaded without a
display, with a message naming the script where it is missing."""
import argparse
import json
import sys


def parse_and_load(doc, bench):
    """Parses the command line of tools/plot_BENCH.py, the plot of `cusync-bench
    BENCH --json`; returns (args, pyplot, the file's JSON). Exits 1 without
    matplotlib."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help=f"file written by cusync-bench {bench} --json")
    ap.add_argument("-o", "--output", default=f"{bench}_speedup.png")
    args = ap.parse_args()
    try:
        import matplotlib
    except ImportError:
        sys.exit(f"plot_{bench}: needs matplotlib, which is not installed (Debian: apt-get install python3-matplotlib, "
                 "or scripts/install-deps)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(args.json) as f:
        return args, plt, json.load(f)
