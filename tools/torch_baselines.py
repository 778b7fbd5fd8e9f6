#!/usr/bin/env python3
"""PyTorch's best on the GPU for the blocks cusync targets, the baselines of
the attention and convolution benchmarks, timed as eager calls and as CUDA
graph replays.

    tools/torch_baselines.py attention [--model gpt3,llama] [--iters N] [--json F] [--csv F]
    tools/torch_baselines.py conv [--model resnet,vgg] [--batch 1,4,8,16,32] [--iters N] [--json F] [--csv F]

attention: one GPU of tensor parallel 8, bf16, head dimension 128 (GPT-3
175B: 12 heads, Wqkv 12288 x 4608, Wo 1536 x 12288; LLaMA 65B: 8 heads, Wqkv
8192 x 3072, Wo 1024 x 8192). The block is X Wqkv (cuBLAS), the new tokens'
K and V appended to a [heads, capacity, 128] cache, scaled-dot-product
attention of the M new queries over the L cached and, causally, the new keys,
then A Wo. Every SDPA backend PyTorch has (flash, cuDNN, memory-efficient,
math) is tried per shape; the fastest counts. Decode: M in {1, 8, 32, 64,
128, 256} with L in {1024, 4096}; prefill: M in {512, 1024, 2048, 4096},
L = 0.

conv: bf16 channels_last conv2d chains with cudnn.benchmark (cuDNN's fastest
algorithm per layer), bias + ReLU between layers: the ResNet-38 residual
pairs (3x3, C = K in {64, 128, 256, 512} at 56, 28, 14, 7) and stride-2
transitions, and VGG-19's consecutive layer pairs at a 224 x 224 input.

Each result is checked against a float32 reference before timing. Timing:
CUDA events, warm-up, the median of --iters runs, the graph replays of a
shape (each SDPA backend's block and SDPA call alone) interleaved run by run
so that all see the same GPU clock states (eager runs, host-bound, are timed
alone), inputs rotated over copies that together exceed twice the L2 cache.
Modes: `eager` (Python launches, host time included where it exceeds the
GPU's), `graph` (the block as a replayed CUDA graph), and the stage alone as
a graph (`attention-graph`: the SDPA call; `layer1-graph`: the pair's first
convolution, cuDNN's time for one layer). Progress goes to stderr.
Exit status: 0 done; 1 a check failed or a file could not be written;
2 bad usage; 3 no PyTorch with a CUDA GPU here.
"""
import argparse
import csv
import json
import math
import random
import sys
import time

ATTN_MODELS = {
    # heads per GPU, hidden size (X's columns), Wo's output columns
    "gpt3": dict(heads=12, hidden=12288),
    "llama": dict(heads=8, hidden=8192),
}
HEAD_DIM = 128
DECODE_M = [1, 8, 32, 64, 128, 256]
DECODE_L = [1024, 4096]
PREFILL_M = [512, 1024, 2048, 4096]


def resnet_layers():
    """(name, C, K, H, R, stride) of consecutive convolution pairs."""
    pairs = []
    for c, h in [(64, 56), (128, 28), (256, 14), (512, 7)]:
        pairs.append((f"res{h}-3x3", [(c, c, h, 3, 1), (c, c, h, 3, 1)]))
    for c, h in [(64, 56), (128, 28), (256, 14)]:
        pairs.append((f"res{h}-down", [(c, 2 * c, h, 3, 2), (2 * c, 2 * c, h // 2, 3, 1)]))
    return pairs


def vgg_layers():
    blocks = [(64, 224, 2), (128, 112, 2), (256, 56, 4), (512, 28, 4), (512, 14, 4)]
    pairs, cin = [], 3
    for k, h, n in blocks:
        layers = []
        for i in range(n):
            layers.append((cin if i == 0 else k, k, h, 3, 1))
        cin = k
        for i in range(n - 1):
            pairs.append((f"vgg{h}-{i + 1}{i + 2}", [layers[i], layers[i + 1]]))
    return pairs


def capture(torch, fn, copies):
    """Replays of CUDA graphs that each run fn once, one graph per input copy: replay(i) runs copy i % copies."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(copies):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    graphs = []
    for i in range(copies):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(i)
        graphs.append(g)
    return lambda i: graphs[i % copies].replay()


def interleaved_ms(torch, fns, iters, warmup=3, seed=1):
    """Median ms of each fn(i), timed interleaved run by run: each iteration runs every fn once, back to
    back, in an order drawn anew per iteration (a fixed-seed shuffle, as cusync-bench's
    bench/interleave.h does, so that no fn follows the same neighbour in almost every iteration), a CUDA
    event between consecutive runs, after `warmup` such iterations untimed. Each fn is called with the run's index in the whole sequence, so consecutive runs take
    consecutive input copies and none finds in L2 the copy the run before it read. All see the same GPU
    clock states, which under a power cap move with load and temperature (timed one after the other, the
    first after an idle phase ran up to 10% faster). For GPU-bound fns (graph replays) only: a host-bound
    one (eager launches) leaves the GPU idle between its kernels, and the fn after it starts on an idle
    GPU. One fn alone: back-to-back runs."""
    n = len(fns)
    draw = random.Random(seed)
    order = []
    for _ in range(warmup + iters):
        perm = list(range(n))
        draw.shuffle(perm)
        order += perm
    timed = order[warmup * n:]
    events = [torch.cuda.Event(enable_timing=True) for _ in range(len(timed) + 1)]
    for seq, c in enumerate(order):
        if seq == warmup * n:
            events[0].record()
        fns[c](seq)
        if seq >= warmup * n:
            events[seq - warmup * n + 1].record()
    torch.cuda.synchronize()
    per = [[] for _ in range(n)]
    for j, c in enumerate(timed):
        per[c].append(events[j].elapsed_time(events[j + 1]))
    return [sorted(t)[len(t) // 2] for t in per]


def copies_for(bytes_per_copy, l2_bytes, most=64):
    return max(2, min(most, math.ceil(2 * l2_bytes / max(1, bytes_per_copy))))


def sdpa_backends(torch):
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return []
    names = ["FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"]
    return [(n.lower(), getattr(SDPBackend, n), sdpa_kernel) for n in names if hasattr(SDPBackend, n)]


def attention_block(torch, model, M, L, args, l2, out_rows):
    F = torch.nn.functional
    p = ATTN_MODELS[model]
    h, d, hidden = p["heads"], HEAD_DIM, p["hidden"]
    dev = "cuda"
    bf = torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(1)
    wqkv = (torch.randn(hidden, 3 * h * d, device=dev, generator=gen) / math.sqrt(hidden)).to(bf)
    wo = (torch.randn(h * d, hidden, device=dev, generator=gen) / math.sqrt(h * d)).to(bf)
    per_copy = 2 * (M * hidden * 2 + 2 * h * (L + M) * d)  # X, Y and the cache read
    n = copies_for(per_copy, l2, most=16)
    xs = [torch.randn(M, hidden, device=dev, generator=gen).to(bf) for _ in range(n)]
    caches = [(torch.randn(h, L + M, d, device=dev, generator=gen).to(bf),
               torch.randn(h, L + M, d, device=dev, generator=gen).to(bf)) for _ in range(n)]
    try:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(M, L + M) if L > 0 else None
    except ImportError:
        mask = torch.ones(M, L + M, device=dev, dtype=torch.bool).tril(diagonal=L) if L > 0 else None

    def attend(q, k, v):
        if L == 0:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    queries = [None] * n  # each copy's Q as the last block run left it, for timing the attention alone

    def block(i):
        x, (kc, vc) = xs[i % n], caches[i % n]
        qkv = x @ wqkv
        q, k, v = qkv.view(M, 3, h, d).unbind(1)
        kc[:, L:L + M].copy_(k.transpose(0, 1))
        vc[:, L:L + M].copy_(v.transpose(0, 1))
        queries[i % n] = q.transpose(0, 1).unsqueeze(0)
        a = attend(queries[i % n], kc.unsqueeze(0), vc.unsqueeze(0))
        return a.squeeze(0).transpose(0, 1).reshape(M, h * d) @ wo

    def attention_alone(i):
        kc, vc = caches[i % n]
        return attend(queries[i % n], kc.unsqueeze(0), vc.unsqueeze(0))

    # Reference: float32 math on copy 0.
    with torch.no_grad():
        x, (kc, vc) = xs[0], caches[0]
        qkv = (x.float() @ wqkv.float()).to(bf).float()
        q, k, v = qkv.view(M, 3, h, d).unbind(1)
        kk = torch.cat([kc[:, :L].float(), k.transpose(0, 1)], 1)
        vv = torch.cat([vc[:, :L].float(), v.transpose(0, 1)], 1)
        s = (q.transpose(0, 1) @ kk.transpose(1, 2)) / math.sqrt(d)
        allowed = torch.ones(M, L + M, device=dev, dtype=torch.bool).tril(diagonal=L)
        s = s.masked_fill(~allowed, float("-inf"))
        ref = ((s.softmax(-1) @ vv).transpose(0, 1).reshape(M, h * d).to(bf).float() @ wo.float())

    pairs = M * L + M * (M + 1) // 2  # (query, key) pairs a causal block scores
    flops = 2 * M * hidden * 3 * h * d + 2 * M * h * d * hidden + 4 * h * d * pairs
    bytes_ = 2 * (hidden * 3 * h * d + h * d * hidden + 2 * h * (L + M) * d + 2 * M * hidden)
    # Every backend that takes this shape, checked and timed eager; then the graphs of all of them (the
    # block and the SDPA call alone) timed together.
    best = {}
    cands = []  # (backend name, mode, error, replay)
    for name, backend, sdpa_kernel in sdpa_backends(torch) or [("default", None, None)]:
        try:
            def run(i, fn=block, backend=backend, sdpa_kernel=sdpa_kernel):
                if backend is None:
                    return fn(i)
                with sdpa_kernel(backend):
                    return fn(i)
            with torch.no_grad():
                y = run(0).float()
                err = ((y - ref).norm() / ref.norm()).item()
                if not err < 2e-2:
                    raise RuntimeError(f"relative error {err:.2e}")
                eager = interleaved_ms(torch, [run], args.iters)[0]  # host-bound: timed alone
                mine = [(name, "graph", err, capture(torch, run, n)),
                        (name, "attention-graph", err, capture(torch, lambda i, run=run: run(i, attention_alone), n))]
        except Exception as e:  # a backend that does not take this shape
            print(f"[attention] {model} M={M} L={L} {name}: not used ({str(e).splitlines()[0][:120]})",
                  file=sys.stderr)
            continue
        cands += mine
        if "eager" not in best or eager < best["eager"][0]:
            best["eager"] = (eager, name, err)
    if cands:
        with torch.no_grad():
            times = interleaved_ms(torch, [c[3] for c in cands], args.iters)
        for (name, mode, err, _), ms in zip(cands, times):
            if mode not in best or ms < best[mode][0]:
                best[mode] = (ms, name, err)
    if not best:
        return False
    for mode, (ms, name, err) in best.items():
        out_rows.append(dict(bench="attention", model=model, M=M, L=L, mode=mode, backend=name, ms=ms,
                             tflops=flops / ms / 1e9, gbs=bytes_ / ms / 1e6, rel_err=err))
        print(f"  {model:6s} M={M:<5d} L={L:<5d} {mode:15s} {ms:8.4f} ms  {name:20s} err {err:.1e}")
    return True


def conv_pair(torch, model, name, layers, batch, args, l2, out_rows):
    F = torch.nn.functional
    dev, bf = "cuda", torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(2)
    c0, _, h0, _, _ = layers[0]
    cpad = max(8, c0)  # tensor cores want channels in multiples of 8: VGG's 3 RGB channels are padded
    ws, bs = [], []
    for i, (c, k, h, r, stride) in enumerate(layers):
        c = cpad if i == 0 else c
        ws.append((torch.randn(k, c, r, r, device=dev, generator=gen) / math.sqrt(c * r * r)).to(bf)
                  .contiguous(memory_format=torch.channels_last))
        bs.append((torch.randn(k, device=dev, generator=gen) * 0.1).to(bf))
    per_copy = 2 * batch * cpad * h0 * h0
    n = copies_for(per_copy, l2)
    xs = [torch.randn(batch, cpad, h0, h0, device=dev, generator=gen).to(bf)
          .contiguous(memory_format=torch.channels_last) for _ in range(n)]

    def chain(i, upto=2):
        y = xs[i % n]
        for (c, k, h, r, stride), w, b in list(zip(layers, ws, bs))[:upto]:
            y = F.relu(F.conv2d(y, w, b, stride=stride, padding=r // 2))
        return y

    with torch.no_grad():
        y = xs[0].float()
        for (c, k, h, r, stride), w, b in zip(layers, ws, bs):
            y = F.relu(F.conv2d(y, w.float(), b.float(), stride=stride, padding=r // 2)).to(bf).float()
        got = chain(0).float()
        err = ((got - y).norm() / y.norm().clamp_min(1e-30)).item()
        if not err < 2e-2:
            print(f"[conv] {model} {name} batch {batch}: check FAILED (relative error {err:.2e})", file=sys.stderr)
            return False
        eager = interleaved_ms(torch, [chain], args.iters)[0]  # host-bound: timed alone
        graph, first = interleaved_ms(
            torch, [capture(torch, chain, n), capture(torch, lambda i: chain(i, 1), n)], args.iters)
    flops = 0
    for c, k, h, r, stride in layers:
        ho = (h + 2 * (r // 2) - r) // stride + 1
        flops += 2 * batch * ho * ho * k * (cpad if c < 8 else c) * r * r
    for mode, ms in (("eager", eager), ("graph", graph), ("layer1-graph", first)):
        out_rows.append(dict(bench="conv", model=model, layers=name, batch=batch, mode=mode, backend="cudnn",
                             ms=ms, tflops=flops / ms / 1e9, rel_err=err))
    print(f"  {model:6s} {name:14s} batch {batch:<3d} eager {eager:8.4f} ms  graph {graph:8.4f} ms  "
          f"first layer alone (graph) {first:8.4f} ms  err {err:.1e}")
    return True


def write_outputs(rows, args):
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": rows}, f, indent=1)
    if args.csv and rows:
        keys = sorted({k for r in rows for k in r})
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)


def int_list(s):
    try:
        v = [int(x) for x in s.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a comma-separated list of whole numbers")
    if not v or any(x < 1 or x > 4096 for x in v):
        raise argparse.ArgumentTypeError(f"'{s}': each value must be 1 to 4096")
    return v


def name_list(choices):
    def parse(s):
        v = [x for x in s.split(",") if x]
        bad = [x for x in v if x not in choices]
        if not v or bad:
            raise argparse.ArgumentTypeError(f"'{s}': choose from {', '.join(choices)}")
        return v
    return parse


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("attention", help="QKV GEMM, KV-cache append, SDPA, Wo GEMM")
    a.add_argument("--model", type=name_list(list(ATTN_MODELS)), default=list(ATTN_MODELS))
    c = sub.add_parser("conv", help="ResNet-38 and VGG-19 convolution pairs")
    c.add_argument("--model", type=name_list(["resnet", "vgg"]), default=["resnet", "vgg"])
    c.add_argument("--batch", type=int_list, default=[1, 4, 8, 16, 32])
    for p in (a, c):
        p.add_argument("--iters", type=int, default=20, help="timed runs per median (1 to 10000)")
        p.add_argument("--json", help="results as JSON")
        p.add_argument("--csv", help="results as CSV")
    args = ap.parse_args()
    if not 1 <= args.iters <= 10000:
        ap.error("--iters must be 1 to 10000")
    try:
        import torch
    except ImportError:
        print("torch_baselines: needs PyTorch, which is not installed here", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_baselines: needs a CUDA GPU; none is visible", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    print(f"device: {props.name}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    rows, ok, t0 = [], True, time.time()
    if args.cmd == "attention":
        shapes = [(M, L) for L in DECODE_L for M in DECODE_M] + [(M, 0) for M in PREFILL_M]
        for model in args.model:
            for k, (M, L) in enumerate(shapes):
                print(f"[attention] {model} M={M} L={L} ({k + 1}/{len(shapes)}, {time.time() - t0:.0f} s)",
                      file=sys.stderr)
                ok &= attention_block(torch, model, M, L, args, l2, rows)
    else:
        for model in args.model:
            pairs = resnet_layers() if model == "resnet" else vgg_layers()
            for k, (name, layers) in enumerate(pairs):
                for batch in args.batch:
                    print(f"[conv] {model} {name} batch {batch} ({k + 1}/{len(pairs)}, {time.time() - t0:.0f} s)",
                          file=sys.stderr)
                    ok &= conv_pair(torch, model, name, layers, batch, args, l2, rows)
    try:
        write_outputs(rows, args)
    except OSError as e:
        print(f"torch_baselines: cannot write results: {e}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
