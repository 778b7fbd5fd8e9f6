#!/usr/bin/env python3
"""tools/ab_compare.py and scripts/ab-run: on CSVs of known times the tool
takes each build's fastest run per point, prints the geomean, lowest and
highest ratio per group (the vendor's rows apart), the points that moved
most, and exits 1 when the builds share no point and 2 on bad input; ab-run
runs fake builds in alternating order, names their files and ends with the
comparison."""
import math
import os
import pathlib
import stat
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
script = root / "tools" / "ab_compare.py"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from script_checks import ScriptChecks  # noqa: E402

checks = ScriptChecks(script)
check, run = checks.check, checks.run

MLP = "model,M,variant,ms,speedup,speedup_vs_cublas,speedup_vs_nosync,roofline_eff,rel_err,ok\n"
GEMM = "shape,M,N,K,config,ours_ms,cublas_ms,ratio,epilogue\n"


def mlp(times):
    return MLP + "".join(f"{m},{M},{v},{ms},1,1,1,0.8,0,1\n" for (m, M, v), ms in times.items())


def group_line(out, group):
    """The group's row: its name, then points, geomean, lowest, highest."""
    for l in out.splitlines():
        if l.strip().startswith(group + " "):
            return [group] + l.strip()[len(group):].split()
    return []


with tempfile.TemporaryDirectory() as d:
    d = pathlib.Path(d)
    # Build a, two runs: its fastest per point counts (0.100 and 0.200 for nosync).
    (d / "a1.csv").write_text(mlp({("gpt3", 64, "nosync"): 0.110, ("gpt3", 256, "nosync"): 0.200,
                                   ("gpt3", 64, "cublas"): 0.090, ("gpt3", 256, "cublas"): 0.180}))
    (d / "a2.csv").write_text(mlp({("gpt3", 64, "nosync"): 0.100, ("gpt3", 256, "nosync"): 0.210,
                                   ("gpt3", 64, "cublas"): 0.091, ("gpt3", 256, "cublas"): 0.181}))
    # Build b: nosync 0.095 and 0.180 (ratios 0.95 and 0.90), cuBLAS unchanged.
    (d / "b1.csv").write_text(mlp({("gpt3", 64, "nosync"): 0.095, ("gpt3", 256, "nosync"): 0.180,
                                   ("gpt3", 64, "cublas"): 0.090, ("gpt3", 256, "cublas"): 0.180}))
    code, out, err = run(f"a={d / 'a1.csv'}", f"b={d / 'b1.csv'}", f"a={d / 'a2.csv'}", "--show", "1")
    check(code == 0, f"exit {code}: {err}")
    row = group_line(out, "nosync")
    gm = math.sqrt(0.95 * 0.90)
    check(row[1:] == ["2", f"{gm:.4f}", "0.900", "0.950"], f"nosync row: {row} in\n{out}")
    check(group_line(out, "vendor cublas")[1:3] == ["2", "1.0000"], f"vendor row: {out}")
    moved = [l for l in out.splitlines() if l.startswith("    ")]
    check(len(moved) == 1 and "0.900" in moved[0] and "M=256" in moved[0], f"moved most: {moved}")
    # --base b divides a by b.
    code, out, _ = run(f"a={d / 'a1.csv'}", f"b={d / 'b1.csv'}", "--base", "b")
    check(code == 0 and out.startswith("mlp: a / b"), f"--base: {out}")
    # gemm rows give ours and cuBLAS's points.
    (d / "g1.csv").write_text(GEMM + "gpt3-mlp1,64,6144,12288,64x128/s1,0.050,0.045,1.1,identity\n")
    (d / "g2.csv").write_text(GEMM + "gpt3-mlp1,64,6144,12288,64x128/s1,0.045,0.045,1.0,identity\n")
    code, out, _ = run(f"x={d / 'g1.csv'}", f"y={d / 'g2.csv'}")
    check(code == 0 and group_line(out, "ours")[1:3] == ["1", "0.9000"], f"gemm: {out}")
    # No common point: exit 1; mixed benchmarks, a missing file, no label, one build: exit 2.
    (d / "other.csv").write_text(mlp({("llama", 64, "nosync"): 0.1}))
    code, _, err = run(f"a={d / 'a1.csv'}", f"b={d / 'other.csv'}")
    check(code == 1 and "share no point" in err, f"no common point: exit {code}, {err}")
    code, _, err = run(f"a={d / 'a1.csv'}", f"b={d / 'g1.csv'}")
    check(code == 2 and "a gemm CSV, but the first one is mlp" in err, f"mixed: exit {code}, {err}")
    code, _, err = run(f"a={d / 'missing.csv'}", f"b={d / 'a1.csv'}")
    check(code == 2 and "missing.csv" in err, f"missing file: exit {code}, {err}")
    code, _, err = run(str(d / "a1.csv"), f"b={d / 'a1.csv'}")
    check(code == 2 and "LABEL=PATH" in err, f"no label: exit {code}, {err}")
    code, _, err = run(f"a={d / 'a1.csv'}", f"a={d / 'a2.csv'}")
    check(code == 2 and "two builds" in err, f"one build: exit {code}, {err}")
    (d / "notcsv.csv").write_text("x,y\n1,2\n")
    code, _, err = run(f"a={d / 'notcsv.csv'}", f"b={d / 'a1.csv'}")
    check(code == 2 and "not a cusync-bench" in err, f"foreign csv: exit {code}, {err}")

    # scripts/ab-run with two fake builds: a writes nosync 0.100, b 0.090; both log their order.
    order = d / "order.txt"
    for label, ms in (("a", 0.100), ("b", 0.090)):
        fake = d / f"bench-{label}"
        fake.write_text(
            "#!/usr/bin/env bash\n"
            f"echo {label} >> {order}\n"
            'while [ $# -gt 0 ]; do [ "$1" = --csv ] && out=$2; shift; done\n'
            f"printf '%s' '{MLP}gpt3,64,nosync,{ms},1,1,1,0.8,0,1\\ngpt3,64,cublas,0.08,1,1,1,0.8,0,1\\n' > \"$out\"\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    ab = [str(root / "scripts" / "ab-run"), "--out", str(d / "ab"), "--reps", "2"]
    p = subprocess.run(ab + [f"a={d / 'bench-a'}", f"b={d / 'bench-b'}", "--", "mlp", "--graph"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"ab-run exit {p.returncode}: {p.stderr}")
    check(order.read_text().split() == ["a", "b", "b", "a"], f"ab-run order: {order.read_text().split()}")
    check(sorted(f.name for f in (d / "ab").glob("*.csv")) ==
          ["mlp-a-1.csv", "mlp-a-2.csv", "mlp-b-1.csv", "mlp-b-2.csv"], "ab-run files")
    check("[ab-run] 4/4" in p.stdout and group_line(p.stdout, "nosync")[1:3] == ["1", "0.9000"],
          f"ab-run output: {p.stdout}")
    # A failing build stops it with its log named; bad usage exits 2.
    (d / "bench-bad").write_text("#!/usr/bin/env bash\necho broken; exit 3\n")
    (d / "bench-bad").chmod(0o755)
    p = subprocess.run(ab + [f"a={d / 'bench-a'}", f"x={d / 'bench-bad'}", "--", "mlp"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "exit 3" in p.stderr and "mlp-x-1.log" in p.stderr, f"failing build: {p.stderr}")
    for args, what in (([f"a={d / 'bench-a'}", "--", "mlp"], "at least two builds"),
                       ([f"a={d / 'bench-a'}", f"b={d / 'bench-b'}", "--", "train"], "not a cusync-bench benchmark"),
                       ([f"a={d / 'bench-a'}", f"b={d / 'bench-b'}", "--", "mlp", "--csv", "x"], "leave --csv out"),
                       ([f"a={d / 'bench-a'}", f"a={d / 'bench-b'}", "--", "mlp"], "given twice"),
                       ([f"a={d / 'bench-a'}", f"b={d / 'nothing'}", "--", "mlp"], "not an executable")):
        p = subprocess.run(ab + args, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and what in p.stderr, f"ab-run {args[-1]}: exit {p.returncode}, {p.stderr}")

checks.finish("ab_compare_test")
