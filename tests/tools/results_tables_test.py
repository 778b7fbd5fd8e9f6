#!/usr/bin/env python3
"""tools/results_tables.py: on a small results folder of known numbers it
prints the expected tables (each value rounded once, the best cusync
variant and baselines picked as the benches pick them, failed variants and
cuDNN's own single-layer rows left out); on the checked-in bench/results its
geomeans and winners agree with what the benches printed themselves; a
missing, malformed or stale file exits 2 naming it."""
import contextlib
import io
import json
import math
import os
import pathlib
import re
import shutil
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
script = root / "tools" / "results_tables.py"
sys.path.insert(0, str(root / "tools"))
import plot_attention  # noqa: E402  (writes the attention log as scripts/gpu-check has it written)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from script_checks import ScriptChecks  # noqa: E402

checks = ScriptChecks(script)
check, run, failures = checks.check, checks.run, checks.failures


def expect_lines(out, lines, what):
    have = out.splitlines()
    for line in lines:
        check(line in have, f"{what}: line {line!r} missing from:\n{out}")


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_json(folder, name, doc):
    write(folder, name, json.dumps(doc, indent=1) + "\n")


# --- A folder of known numbers ---------------------------------------------------------------------------------------


def gemm_files(folder):
    # (shape, M, N, K, ratio as the CSV has it, as the log has it, miss): the
    # first is where rounding the CSV's 0.9885 again would give 0.989.
    rows = [("gpt3-wo", 64, 12288, 1536, "0.9885", "0.988", False),
            ("gpt3-wo", 512, 12288, 1536, "1.0567", "1.057", True),
            ("llama-wo", 64, 8192, 1024, "1.1316", "1.132", True),
            ("llama-wo", 512, 8192, 1024, "1.0000", "1.000", False)]
    csv = "shape,M,N,K,config,ours_ms,cublas_ms,ours_tflops,cublas_tflops,ratio,ours_err,cublas_err,ours_host_us," \
          "cublas_host_us,cublas_algo\n"
    log = "device: Test GPU\nshape           M      N      K     config   ours_ms cublas_ms  ours_TF cublas_TF   ratio\n"
    for shape, M, N, K, r4, r3, miss in rows:
        csv += f"{shape},{M},{N},{K},128x128,0.01000,0.01000,1.0,1.0,{r4},1e-3,1e-3,5.00,5.00,a66\n"
        log += "%-11s %5d %6d %6d %10s %9.4f %9.4f %8.1f %8.1f %7s %9.2e %9.2e %6.1f %6.1f  %s%s\n" % (
            shape, M, N, K, "128x128", 0.01, 0.01, 1.0, 1.0, r3, 1e-3, 1e-3, 5.0, 5.0, "a66", "  MISS" if miss else "")
    log += "ratio = ours / cuBLAS time; 2 misses\n"
    write(folder, "gemm/bench-gemm.csv", csv)
    write(folder, "gemm/bench-gemm.log", log)


def mlp_doc(timing, points):
    """points: {M: {variant: (ms, ok[, chained us per run])}}; the speedups
    and efficiencies as cusync-bench mlp computes them (roofline 0.8 ms per
    point)."""
    results = []
    for M, variants in points.items():
        base = min(variants["cublas"][0], variants["nosync"][0])
        for v, (ms, ok, *chained) in variants.items():
            results.append(dict(model="gpt3", M=M, variant=v, ms=ms, speedup=base / ms,
                                speedup_vs_cublas=variants["cublas"][0] / ms,
                                speedup_vs_nosync=variants["nosync"][0] / ms, roofline_eff=0.8 * M / 64 / ms,
                                rel_err=1e-3, ok=ok, chained_us_per_run=chained[0] if chained else None))
    return dict(device="Test GPU", timing=timing, speedup_baseline="the faster of cublas and nosync", results=results)


def mlp_files(folder):
    # Launches: at M = 64 pdl wins (1/0.95), tilesync is faster but failed
    # its check; at M = 256 fused wins, cuBLAS the baseline.
    write_json(folder, "mlp/bench-mlp.json", mlp_doc("launches", {
        64: {"nosync": (1.0, True), "cublas": (1.1, True), "pdl": (0.95, True), "fused": (0.98, True),
             "tilesync": (0.5, False)},
        256: {"nosync": (2.0, True), "cublas": (1.9, True), "pdl": (2.1, True), "fused": (2.0, True)}}))
    # Graphs: pdl's 1.003 shows as 1.00, not bold. Chained runs (us per
    # run): pdl 90 / 75 = 1.2 over cuBLAS at M = 64, 200 / 250 = 0.8 at 256.
    write_json(folder, "mlp/bench-mlp-graph.json", mlp_doc("graph", {
        64: {"nosync": (1.0, True, 100.0), "cublas": (1.2, True, 90.0), "pdl": (1.0 / 1.003, True, 75.0)},
        256: {"nosync": (2.0, True, 200.0), "cublas": (1.6, True, 210.0), "pdl": (2.0, True, 250.0)}}))


def conv_files(folder):
    pairs = {1: dict(cudnn=1.0, nosync=1.2, pdl=1.25, tilesync=1.3), 4: dict(cudnn=2.0, nosync=1.6, pdl=1.5, tilesync=1.7)}
    results = [dict(model="resnet", pair="res56-3x3", batch=b, variant=v, cusync=v in ("pdl", "tilesync"), ms=ms,
                    speedup=min(t["cudnn"], t["nosync"]) / ms, roofline_eff=0.1, rel_err=1e-4, checked_against="cudnn",
                    ok=True)
               for b, t in pairs.items() for v, ms in t.items()]
    # A failed variant is left out, however fast.
    results.append(dict(model="resnet", pair="res56-3x3", batch=4, variant="tilesync:rowmajor", cusync=True, ms=0.1,
                        speedup=None, roofline_eff=None, rel_err=1.0, checked_against="cudnn", ok=False))
    singles = []
    for (b, layer), ratio in {(1, 1): 0.8, (1, 2): 1.25, (4, 1): 0.9, (4, 2): 1.0}.items():
        singles.append(dict(model="resnet", pair="res56-3x3", batch=b, layer=layer, shape="-", variant="ours", ms=0.01,
                            cudnn_over_ms=ratio, roofline_eff=0.1, cudnn_plan=""))
        # cuDNN's rows: not ours, not counted.
        singles.append(dict(model="resnet", pair="res56-3x3", batch=b, layer=layer, shape="-", variant="cudnn-conv",
                            ms=0.02, cudnn_over_ms=0.5, roofline_eff=0.1, cudnn_plan="x"))
    write_json(folder, "conv/bench-conv-graph.json",
               dict(device="Test GPU", timing="graph", single_target=0.9, results=results, singles=singles))
    torch = [dict(bench="conv", model="resnet", layers="res56-3x3", batch=b, mode=mode, backend="cudnn", ms=ms)
             for b, modes in {1: dict(eager=2.0, graph=0.9), 4: dict(eager=3.0, graph=2.5)}.items()
             for mode, ms in list(modes.items()) + [("layer1-graph", 0.01)]]
    write_json(folder, "torch/bench-torch-conv.json", dict(results=torch))


def attention_files(folder):
    # (M, L): ours (stream, rowsync, cublas, attention, rowsync's efficiency),
    # PyTorch's (eager, graph, SDPA alone).
    shapes = {(1, 4096): ((0.10, 0.11, 0.5, 0.02, 0.6), (0.2, 0.12, 0.022)),
              (8, 4096): ((0.10, 0.095, 0.5, 0.025, 0.7), (0.3, 0.09, 0.02)),
              (512, 0): ((0.5, 0.55, 1.0, 0.1, 0.8), (0.6, 0.65, 0.085))}
    results, torch = [], []
    for (M, L), ((stream, rowsync, cublas, attention, eff), (eager, graph, sdpa)) in shapes.items():
        for v, ms in dict(stream=stream, rowsync=rowsync, cublas=cublas, attention=attention).items():
            results.append(dict(model="gpt3", M=M, L=L, phase="prefill" if L == 0 else "decode", variant=v,
                                stage="attention" if v == "attention" else "block", ms=ms,
                                roofline_eff=eff if v == "rowsync" else 0.1, ok=True))
        for mode, ms in dict(eager=eager, graph=graph).items():
            torch.append(dict(bench="attention", model="gpt3", M=M, L=L, mode=mode, backend="flash_attention", ms=ms))
        torch.append(dict(bench="attention", model="gpt3", M=M, L=L, mode="attention-graph", backend="flash_attention",
                          ms=sdpa))
    doc = dict(device="Test GPU", timing="graph", results=results)
    write_json(folder, "attention/bench-attention-graph.json", doc)
    write_json(folder, "torch/bench-torch-attention.json", dict(results=torch))
    # The log as scripts/gpu-check writes it: tools/plot_attention.py's output.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        records = plot_attention.merge(plot_attention.ours_by_shape(doc),
                                       plot_attention.torch_by_shape(str(folder / "torch/bench-torch-attention.json")))
        plot_attention.print_table(records, doc, True)
        plot_attention.print_targets(records, True)
    write(folder, "attention/attention-vs-torch.log", out.getvalue())


def known_folder(folder):
    gemm_files(folder)
    mlp_files(folder)
    conv_files(folder)
    attention_files(folder)
    write(folder, "summary.txt", "--- gpu-check summary ---\ngpu: Test GPU, 1.2.3, 345 MHz, 39, 2026-01-01T00:00Z\n"
                                 "bench gemm: ok (1 s)\nbench conv: FAILED (no cuDNN)\ngpu-check: FAIL\n")


tmp = pathlib.Path(tempfile.mkdtemp(prefix="results_tables_test."))
try:
    known = tmp / "known"
    known_folder(known)
    rc, out, err = run("--results", str(known))
    check(rc == 0 and not err, f"known folder: exit {rc}, stderr {err!r}")
    g = (0.9885 * 1.0567 * 1.1316 * 1.0) ** 0.25
    expect_lines(out, [
        f"Run ({known}/summary.txt): Test GPU, driver 1.2.3, 2026-01-01T00:00Z; gpu-check: FAIL; "
        "bench conv: FAILED (no cuDNN)",
        # GEMM: the log's ratios; misses by the log's marks, largest first.
        f"GEMM, time ratio ours / cuBLASLt (lower is better), from {known}/gemm/bench-gemm.csv and "
        f"{known}/gemm/bench-gemm.log:",
        "geomean %.3f over 4 shapes; 2 points over the targets (1.0526 at M >= 512, 1.1111 below): "
        "llama-wo M = 64 (1.132), gpt3-wo M = 512 (1.057)" % g,
        "| shape (N x K) | 64 | 512 |",
        "| gpt3-wo (12288 x 1536) | 0.988 | 1.057 |",
        "| llama-wo (8192 x 1024) | 1.132 | 1.000 |",
        # MLP: M = 64 pdl 1/0.95 over nosync (eff 0.8 / 0.95), M = 256 fused
        # 1.9 / 2.0 over cuBLAS (eff 3.2 / 2.0 = 1.60); geomeans sqrt(1.0),
        # sqrt(1/0.95), sqrt(1.1 / 0.95 * 0.95).
        f"MLP, back-to-back launches, from {known}/mlp/bench-mlp.json:",
        "the best cusync variant beats the best baseline at: GPT-3 175B M = 64 (pdl, 1.053); "
        "cuBLAS is the faster baseline at: GPT-3 175B M = 256",
        "| M | 64 | 256 | geomean |",
        "| GPT-3 175B | **1.05** pdl (0.84) | 0.95 fused (1.60) | 1.000 |",
        "| over nosync | 1.05 | 1.00 | %.3f |" % math.sqrt(1 / 0.95),
        "| over cuBLAS | 1.16 | 0.95 | %.3f |" % math.sqrt(1.1),
        f"MLP, CUDA graph replays (--graph), from {known}/mlp/bench-mlp-graph.json:",
        "| GPT-3 175B | 1.00 pdl (0.80) | 0.80 pdl (1.60) | %.3f |" % math.sqrt(1.003 * 0.8),
        f"MLP, CUDA graph replays, runs chained back to back (us per run over 20 runs between two events), "
        f"from {known}/mlp/bench-mlp-graph.json:",
        "| GPT-3 175B | **1.20** pdl | 0.80 pdl | %.3f |" % math.sqrt(1.2 * 0.8),
        # Convolution: nosync over min(cuDNN, PyTorch) 0.9 / 1.2 and 2.0 / 1.6;
        # pdl over the best of all 0.9 / 1.25 and 1.6 / 1.5.
        f"Convolution, CUDA graph replays, from {known}/conv/bench-conv-graph.json and "
        f"{known}/torch/bench-torch-conv.json:",
        "| | ResNet-38 (2 points) |",
        "| our conv pair in stream order over the faster of cuDNN and PyTorch | %.3f |" % math.sqrt(0.75 * 1.25),
        "| single layers, cuDNN time / ours (target >= 0.90 everywhere) | %.3f, 1 of 4 under 0.90 |" % 0.9 ** 0.25,
        "| best cusync variant (`pdl` or `tilesync`) over the best baseline | %.3f |"
        % math.sqrt(0.72 * 1.6 / 1.5),
        # Attention: decode stream over PyTorch 0.12 / 0.10, 0.09 / 0.10; rowsync
        # over the best 0.10 / 0.11, 0.09 / 0.095; attention 1.1, 0.8 (a miss).
        "| | GPT-3 decode (2) | GPT-3 prefill (1) |",
        "| our three kernels in stream order (`stream`) over PyTorch's best block | %.3f, wins 1 | 1.200, wins 1 |"
        % math.sqrt(1.2 * 0.9),
        "| the cusync pipeline (`rowsync`) over the best baseline (PyTorch or `stream`) | %.3f | 0.909 |"
        % math.sqrt(0.10 / 0.11 * 0.09 / 0.095),
        "| our attention kernel alone over PyTorch's best SDPA (targets 0.9 decode, 0.8 prefill: missed at 1 of 3 "
        "shapes here) | %.3f, worst 0.80 | 0.850, worst 0.85 |" % math.sqrt(1.1 * 0.8),
        "| roofline efficiency of `rowsync` (target 0.80 at decode L = 4096) | 0.60-0.70 | 0.80-0.80 |",
    ], "known folder")

    # One section: its table only, without the run's line.
    rc, out, err = run("--results", str(known), "--section", "conv")
    check(rc == 0 and out.startswith("Convolution, ") and "GEMM" not in out and "Run (" not in out,
          f"--section conv: exit {rc}, output {out!r}")

    # A missing file: exit 2, the file and what writes it named.
    broken = tmp / "missing"
    shutil.copytree(known, broken)
    os.remove(broken / "torch/bench-torch-conv.json")
    rc, out, err = run("--results", str(broken))
    check(rc == 2 and not out and f"{broken}/torch/bench-torch-conv.json: missing (written by "
          "tools/torch_baselines.py conv --json)" in err, f"missing file: exit {rc}, stderr {err!r}")
    rc, out, err = run("--results", str(broken), "--section", "gemm")
    check(rc == 0, f"missing conv file, --section gemm: exit {rc}, stderr {err!r}")
    rc, out, err = run("--results", str(tmp / "nowhere"))
    check(rc == 2 and "nowhere: no such folder" in err, f"missing folder: exit {rc}, stderr {err!r}")

    # Malformed files: not JSON, a row without a field, the wrong run, a GEMM
    # log of another run, an attention log of other numbers.
    def broken_copy(name, path, text):
        folder = tmp / name
        shutil.copytree(known, folder)
        write(folder, path, text(folder / path))
        return folder

    for name, path, text, message in [
            ("notjson", "mlp/bench-mlp.json", lambda p: "{", "mlp/bench-mlp.json: not valid JSON"),
            ("nofield", "mlp/bench-mlp-graph.json", lambda p: p.read_text().replace('"ms":', '"time":', 1),
             "mlp/bench-mlp-graph.json: results[0] has no field 'ms'"),
            ("launches", "conv/bench-conv-graph.json", lambda p: p.read_text().replace('"graph"', '"launches"'),
             "conv/bench-conv-graph.json: its timing is \"launches\", expected \"graph\""),
            ("gemmlog", "gemm/bench-gemm.log", lambda p: p.read_text().replace("1.132", "1.140"),
             "gemm/bench-gemm.log: ratio 1.140 at llama-wo M = 64, 1.1316 in"),
            ("gemmcsv", "gemm/bench-gemm.csv", lambda p: p.read_text().replace("0.9885", "abc"),
             "gemm/bench-gemm.csv: line 2: M, N, K and ratio must be numbers"),
            ("stale", "attention/attention-vs-torch.log", lambda p: p.read_text().replace("0.1000", "0.1001", 1),
             "attention/attention-vs-torch.log: line 'gpt3 decode 1 4096 0.1001"),
            ("extra", "attention/attention-vs-torch.log",
             lambda p: re.sub(r"\ntargets", "\ngpt3 prefill 1024 0 1 1 1 1 1 stream 1 1 1 1 1 x\ntargets", p.read_text()),
             "attention/attention-vs-torch.log: line 'gpt3 prefill 1024 0"),
            ("nosummary", "summary.txt", lambda p: "gpu-check: PASS\n", "summary.txt: no 'gpu:' line")]:
        folder = broken_copy(name, path, text)
        rc, out, err = run("--results", str(folder))
        check(rc == 2 and not out and err.startswith("results_tables: ") and message in err,
              f"{name}: exit {rc}, stderr {err!r}, wanted {message!r}")

    # --- The checked-in results --------------------------------------------------------------------------------------
    # Whatever the run, the tables agree with what the benches printed.
    results = root / "bench" / "results"
    rc, out, err = run("--results", str(results))
    check(rc == 0 and not err, f"bench/results: exit {rc}, stderr {err!r}")
    lines = out.splitlines()

    def rows_after(header_start):
        at = next(i for i, l in enumerate(lines) if l.startswith(header_start))
        rows, i = [], at + 1
        while i < len(lines) and not lines[i].startswith("|"):
            i += 1
        while i < len(lines) and lines[i].startswith("|"):
            rows.append([c.strip() for c in lines[i].strip("|").split("|")])
            i += 1
        return rows

    # GEMM: every cell is the log's ratio.
    gemm_log = (results / "gemm/bench-gemm.log").read_text()
    logged = {(m.group(1), m.group(2)): m.group(3) for m in
              re.finditer(r"^(\S+)\s+(\d+)\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)", gemm_log, re.M)}
    gemm = rows_after("GEMM,")
    for row in gemm[2:]:
        for M, cell in zip(gemm[0][1:], row[1:]):
            check(logged.get((row[0].split()[0], M)) == cell, f"bench/results GEMM {row[0]} M = {M}: {cell}")
    check(len(gemm) - 2 == len({s for s, _ in logged}), "bench/results GEMM: a row per shape")

    # MLP: the winners and geomeans of the bench's summary.
    names = {"GPT-3 175B": "gpt3", "LLaMA 65B": "llama"}
    for header, log in [("MLP, back-to-back", "mlp/bench-mlp.log"), ("MLP, CUDA graph", "mlp/bench-mlp-graph.log")]:
        text, _, chained_text = (results / log).read_text().partition("\nsummary, chained runs")
        mlp = rows_after(header)
        for i, row in enumerate(mlp):
            if row[0] not in names:
                continue
            model = names[row[0]]
            g = re.search(r"^%s\s+geomean speedup of the winning cusync variant: (\S+) over the best baseline, (\S+) "
                          r"over cuBLAS, (\S+) over nosync" % model, text, re.M)
            check(g and (row[-1], mlp[i + 2][-1], mlp[i + 1][-1]) == g.groups(), f"bench/results {log} {model} geomeans")
            winners = re.findall(r"^%s\s+(\d+)\s+\S+\s+\S+\s+(\S+)\s" % model, text, re.M)
            check([w for _, w in winners] == [c.split()[1] for c in row[1:-1]], f"bench/results {log} {model} winners")
        # The chained runs' table (graphs, where the run timed them): the
        # winners and geomean of the log's second summary.
        if header == "MLP, CUDA graph" and chained_text:
            chained = rows_after("MLP, CUDA graph replays, runs chained")
            for row in chained[2:]:
                model = names[row[0]]
                g = re.search(r"^%s\s+geomean speedup of the winning cusync variant, chained runs: (\S+)" % model,
                              chained_text, re.M)
                check(g and row[-1] == g.group(1), f"bench/results {log} {model} chained geomean")
                winners = re.findall(r"^%s\s+\d+\s+\S+\s+\S+\s+(\S+)\s" % model, chained_text, re.M)
                check(winners == [c.split()[-1] for c in row[1:-1]], f"bench/results {log} {model} chained winners")

    # Convolution: the single layers as the bench summarized them.
    conv_log = (results / "conv/bench-conv-graph.log").read_text()
    conv = rows_after("Convolution,")
    for col, model in enumerate(["resnet", "vgg"], start=1):
        s = re.search(r"^%s\s+single layers: geomean cuDNN / ours (\S+); (\d+) of (\d+) layer runs" % model, conv_log, re.M)
        check(s and conv[3][col] == "%s, %s of %s under 0.90" % s.groups(), f"bench/results conv {model} singles")

    # Attention: the decode geomeans of plot_attention.py's targets.
    att_log = (results / "attention/attention-vs-torch.log").read_text()
    att = rows_after("Attention block,")
    d = re.search(r"decode shapes: \S+ \(gpt3 (\S+), llama (\S+);", att_log)
    check(d and (att[3][1], att[3][3]) == d.groups(), "bench/results attention decode geomeans")
finally:
    shutil.rmtree(tmp)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("results_tables: all checks passed")
