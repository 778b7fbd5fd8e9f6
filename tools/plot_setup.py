"""What the plot scripts (plot_mlp.py, plot_conv.py, plot_attention.py) share:
their command line (a cusync-bench JSON file, -o PNG, a script's own
options) and matplotlib, loaded without a display, with a message naming the
script where it is missing."""
import argparse
import json
import sys


def parse(doc, bench, add_arguments=None):
    """Parses the command line of tools/plot_BENCH.py, the plot of `cusync-bench
    BENCH --json`; add_arguments(parser), where given, adds the script's own
    options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help=f"file written by cusync-bench {bench} --json")
    ap.add_argument("-o", "--output", default=f"{bench}_speedup.png")
    if add_arguments:
        add_arguments(ap)
    return ap.parse_args()


def load(path):
    with open(path) as f:
        return json.load(f)


def pyplot(bench):
    """matplotlib's pyplot without a display; exits 1 without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        sys.exit(f"plot_{bench}: needs matplotlib, which is not installed (Debian: apt-get install python3-matplotlib, "
                 "or scripts/install-deps)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def parse_and_load(doc, bench):
    """parse(), pyplot() and the file's JSON: (args, pyplot, data). Exits 1
    without matplotlib."""
    args = parse(doc, bench)
    plt = pyplot(bench)
    return args, plt, load(args.json)
