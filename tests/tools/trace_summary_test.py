#!/usr/bin/env python3
"""tools/trace_summary.py: on traces of known times it prints the medians
the bench's tile records imply (the first run left out as warm-up), an
empty lag where the consumer waits on nothing, and exits 2 on a file
without a stage column or a path that does not exist."""
import pathlib
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
script = root / "tools" / "trace_summary.py"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from script_checks import ScriptChecks  # noqa: E402

checks = ScriptChecks(script)
check, run = checks.check, checks.run

HEADER = "run,layer,index,start,wait_ns,mma_start,mma_ns,end,sm,sm2,setup_ns,block_entry,block_exit,ready\n"


def row(run, stage, index, start, mma_start, mma_ns, end, ready=""):
    return f"{run},{stage},{index},{start},0,{mma_start},{mma_ns},{end},0,-1,0,,,{ready}\n"


with tempfile.TemporaryDirectory() as d:
    d = pathlib.Path(d)
    # Run 0 is far off (warm-up, left out); runs 1 and 2 agree, in ns.
    text = HEADER
    text += row(0, 1, 0, 0, 100, 90000, 99000) + row(0, 2, 0, 0, 100, 90000, 99000, ready=50)
    for run_, t0 in ((1, 100000), (2, 200000)):
        # Stage 1: tiles of 2 and 4 us (first MMA to end), MMA 1.5 and 3.5 us; last end at t0 + 5000.
        text += row(run_, 1, 0, t0, t0 + 1000, 1500, t0 + 3000)
        text += row(run_, 1, 1, t0 + 500, t0 + 1000, 3500, t0 + 5000)
        # Stage 2: waits resolved 600 and 1000 ns after stage 1's last end, first MMA 400 ns after that.
        text += row(run_, 2, 0, t0 + 200, t0 + 6000, 2000, t0 + 9000, ready=t0 + 5600)
        text += row(run_, 2, 1, t0 + 300, t0 + 6400, 2000, t0 + 9400, ready=t0 + 6000)
    (d / "pair-synced.csv").write_text(text)
    # A consumer that waits on nothing: no ready times.
    plain = HEADER + "".join(row(r, s, 0, r * 100000, r * 100000 + 1000, 1000, r * 100000 + 3000 + s * 4000)
                             for r in (0, 1) for s in (1, 2))
    (d / "pair-plain.csv").write_text(plain)
    code, out, err = run(str(d))
    check(code == 0, f"exit {code}: {err}")
    lines = {l.split()[0]: l.split() for l in out.splitlines()[1:]}
    synced = lines.get("pair-synced", [])
    # s1_tile median(2, 4) = 3; s1_mma median(1.5, 3.5) = 2.5; s2_tile 3; s2_mma 2; lag median(0.6, 1.0) = 0.8;
    # ready_mma 0.4; span 9.4 (from the first stage-1 tile taken to the last stage-2 end).
    check(synced[1:] == ["3.00", "2.50", "3.00", "2.00", "0.80", "0.40", "9.40"], f"synced row: {synced}")
    plain_row = lines.get("pair-plain", [])
    check(len(plain_row) == 6, f"plain row has no lag nor ready_mma: {plain_row}")
    check(plain_row[1:] == ["6.00", "1.00", "10.00", "1.00", "11.00"], f"plain row: {plain_row}")
    # From run 0 on, the warm-up run counts too: with runs 0 and 1 alone the medians are their means.
    two = HEADER + "".join(l for l in text.splitlines(keepends=True)[1:] if l.split(",")[0] in ("0", "1"))
    (d / "two" ).mkdir()
    (d / "two" / "pair-two.csv").write_text(two)
    code, out, _ = run(str(d / "two"))
    check(code == 0 and out.splitlines()[1].split()[5] == "0.80", f"runs from 1: {out}")
    code, out, _ = run(str(d / "two"), "--runs-from", "0")
    # s1_tile: run 0 (99000 - 100) and run 1's median 3000 -> 50.95 us.
    check(code == 0 and out.splitlines()[1].split()[1] == "50.95", f"--runs-from 0: {out}")
    # A CSV without a stage column, a missing path.
    (d / "bad.csv").write_text("run,index,start\n0,0,1\n")
    code, _, err = run(str(d / "bad.csv"))
    check(code == 2 and "no stage column" in err, f"bad csv: exit {code}, {err}")
    code, _, err = run(str(d / "missing"))
    check(code == 2 and "no such file" in err, f"missing path: exit {code}, {err}")

checks.finish("trace_summary_test")
