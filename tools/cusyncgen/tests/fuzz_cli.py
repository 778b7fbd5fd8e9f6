#!/usr/bin/env python3
"""Fuzz test of the cusyncgen command line: mutated specs must end cleanly.

    fuzz_cli.py CUSYNCGEN WORKDIR SPEC... [--cases N] [--seed S] [--check-every K]

Mutates the given specs (random byte edits, truncations, deep nesting, huge
numbers, repeated, dropped or swapped lines, inserted keywords) and runs
`cusyncgen SPEC -o HEADER` on each under a time bound. Every run must exit 0
(with a non-empty header) or 1 with a message on stderr: a signal (a crash),
any other status, an empty stderr on failure or a run past the bound fails
the test. Every K-th spec that compiles is also checked with
`--check --sms 2 --timeout 5`, which may also end undecided (status 4, with
its message). Failing specs are kept in WORKDIR/failures.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

PUNCT = "()[]:,=*+-/<#"
KEYWORDS = ["param", "tensor", "stage", "output", "writes", "walk", "reads", "sync", "order", "grid(", "tile(",
            "padded", "cdiv(", "min(", "max(", "row", "rows(", "tile", "strided", "auto", "column_major", "i", "j",
            "k", "k < ", "H[", "]", ")", "(", ":"]
HUGE = ["1099511627776", "1099511627777", "99999999999999999999", "9223372036854775807", "4294967296",
        "2147483648", "1099511627776*1099511627776", "1099511627776*8388607+1099511627776*8388607", "0", "-1",
        "(0)", "1/0", "cdiv(1, 0)", "-1099511627776*1099511627776"]
GEN_LIMIT_S = 10    # one run of cusyncgen -o
CHECK_LIMIT_S = 30  # one --check run (its own --timeout is 5 s)


def byte_edits(rng, text):
    b = bytearray(text.encode())
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(len(b) + 1)
        pick = rng.random()
        ch = rng.choice([rng.randrange(256), ord(rng.choice(PUNCT)), ord(rng.choice("0123456789")),
                         ord(rng.choice("abijkMNz_ \t\n"))])
        if pick < 0.4 and pos < len(b):
            b[pos] = ch
        elif pick < 0.7:
            b.insert(pos, ch)
        elif pos < len(b):
            del b[pos]
    return bytes(b)


def truncation(rng, text):
    return text.encode()[: rng.randrange(len(text) + 1)]


def numbers(text):
    return [m.span() for m in re.finditer(r"\d+", text)]


def replace_number(rng, text, make):
    spans = numbers(text)
    if not spans:
        return text.encode()
    a, b = rng.choice(spans)
    return (text[:a] + make(text[a:b]) + text[b:]).encode()


def deep_nesting(rng, text):
    n = rng.choice([200, 257, 300, 1000, 7000, 20000])
    kind = rng.random()
    if kind < 0.4:
        return replace_number(rng, text, lambda s: "(" * n + s + ")" * n)
    if kind < 0.7:
        return replace_number(rng, text, lambda s: "-" * n + s)
    if kind < 0.85:
        return replace_number(rng, text, lambda s: "min(" * n + s + ", 1)" * n)
    return replace_number(rng, text, lambda s: "(" * n + s)  # unbalanced


def huge_number(rng, text):
    return replace_number(rng, text, lambda s: rng.choice(HUGE))


def lines_shuffled(rng, text):
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.35:
        lines.insert(j, lines[i])
    elif kind < 0.7:
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines).encode()


def keyword(rng, text):
    pos = rng.randrange(len(text) + 1)
    return (text[:pos] + rng.choice(KEYWORDS) + text[pos:]).encode()


MUTATIONS = [("byte edits", byte_edits, 30), ("truncation", truncation, 20), ("deep nesting", deep_nesting, 10),
             ("huge number", huge_number, 15), ("lines", lines_shuffled, 15), ("keyword", keyword, 10)]


def run(cmd, limit):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=limit)
        return p.returncode, p.stderr.decode(errors="replace"), time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return None, "", time.monotonic() - t0


def one_case(args, workdir, i, kind, data, check):
    spec = os.path.join(workdir, "case%d.cusync" % i)
    header = os.path.join(workdir, "case%d.h" % i)
    with open(spec, "wb") as f:
        f.write(data)
    problems = []
    rc, err, secs = run([args.cusyncgen, spec, "-o", header], GEN_LIMIT_S)
    if rc is None:
        problems.append("cusyncgen -o ran past %d s" % GEN_LIMIT_S)
    elif rc < 0:
        problems.append("cusyncgen -o died of signal %d" % -rc)
    elif rc not in (0, 1):
        problems.append("cusyncgen -o exited %d" % rc)
    elif rc == 1 and not err.strip():
        problems.append("cusyncgen -o exited 1 with nothing on stderr")
    elif rc == 0 and not (os.path.exists(header) and os.path.getsize(header) > 0):
        problems.append("cusyncgen -o exited 0 without writing the header")
    checked = None
    if not problems and rc == 0 and check:
        crc, cerr, csecs = run([args.cusyncgen, "--check", spec, "--sms", "2", "--timeout", "5"], CHECK_LIMIT_S)
        secs += csecs
        checked = crc
        if crc is None:
            problems.append("--check ran past %d s" % CHECK_LIMIT_S)
        elif crc < 0:
            problems.append("--check died of signal %d" % -crc)
        elif crc not in (0, 1, 4):
            problems.append("--check exited %d" % crc)
        elif crc != 0 and not cerr.strip():
            problems.append("--check exited %d with nothing on stderr" % crc)
        elif crc == 4 and "ran out of time" not in cerr:
            problems.append("--check exited 4 without saying it ran out of time")
        err = cerr or err
    if problems:
        keep = os.path.join(workdir, "failures")
        os.makedirs(keep, exist_ok=True)
        shutil.copy(spec, keep)
    os.remove(spec)
    if os.path.exists(header):
        os.remove(header)
    return kind, rc, checked, secs, problems, err, os.path.join(workdir, "failures", os.path.basename(spec))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cusyncgen")
    ap.add_argument("workdir")
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--cases", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--check-every", type=int, default=10)
    args = ap.parse_args()
    texts = []
    for s in args.specs:
        with open(s) as f:
            texts.append(f.read())
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rng = random.Random(args.seed)
    kinds = [m for m in MUTATIONS for _ in range(m[2])]
    cases = []
    compiled = 0
    for i in range(args.cases):
        name, fn, _ = rng.choice(kinds)
        cases.append((i, name, fn(rng, rng.choice(texts))))
    t0 = time.monotonic()
    stats, failures, slowest = {}, [], (0.0, "")
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        futures = []
        for i, name, data in cases:
            futures.append(pool.submit(one_case, args, args.workdir, i, name, data, i % args.check_every == 0))
        for f in futures:
            kind, rc, checked, secs, problems, err, kept = f.result()
            st = stats.setdefault(kind, {"cases": 0, "exit0": 0, "exit1": 0})
            st["cases"] += 1
            if rc in (0, 1):
                st["exit%d" % rc] += 1
            if checked is not None:
                compiled += 1
                stats.setdefault("--check", {})
                stats["--check"][checked] = stats["--check"].get(checked, 0) + 1
            if secs > slowest[0]:
                slowest = (secs, kind)
            if problems:
                failures.append("%s (%s): %s; last stderr: %s" % (kept, kind, "; ".join(problems), err.strip()[:300]))
    took = time.monotonic() - t0
    for kind, st in stats.items():
        if kind == "--check":
            print("fuzz: --check on %d specs that compiled: %s" % (
                compiled, ", ".join("exit %s: %d" % (k, v) for k, v in sorted(st.items(), key=lambda x: str(x[0])))))
        else:
            print("fuzz: %-12s %5d cases: %5d exit 0, %5d exit 1" % (kind, st["cases"], st["exit0"], st["exit1"]))
    print("fuzz: %d cases in %.1f s (slowest %.2f s, %s), %d failures" % (len(cases), took, slowest[0], slowest[1],
                                                                          len(failures)))
    for f in failures[:20]:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
