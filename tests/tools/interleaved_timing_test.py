#!/usr/bin/env python3
"""tools/torch_baselines.py's interleaved timing, on a fake torch whose clock
slows down as it runs (as a GPU's does under a power cap): every candidate's
median is its own duration scaled by the clock of the runs it shared with the
others, every iteration runs each candidate once in an order drawn anew (no
candidate follows the same neighbour every time, and the order repeats from
run to run), a candidate timed first no longer gets the fast clock alone, and
consecutive runs take consecutive input copies."""
import importlib.util
import pathlib
import sys
import types

root = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("torch_baselines", root / "tools" / "torch_baselines.py")
tb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tb)


class FakeGpu:
    def __init__(self):
        self.now = 0.0
        self.runs = 0

    def run(self, duration):
        # The clock slows from 1.0 to 0.8 over the first 200 runs and stays there.
        slowdown = 1.0 + 0.25 * min(self.runs, 200) / 200
        self.now += duration * slowdown
        self.runs += 1


gpu = FakeGpu()


class Event:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self):
        self.t = gpu.now

    def elapsed_time(self, end):
        return end.t - self.t


fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, synchronize=lambda: None))

order = []


def candidate(c, duration):
    def fn(i):
        order.append((i, c))
        gpu.run(duration)
    return fn


durations = [1.0, 2.0, 3.0]
iters = 300
ms = tb.interleaved_ms(fake, [candidate(c, d) for c, d in enumerate(durations)], iters, warmup=3)

failures = []
timed = order[3 * len(durations):]
perms = [tuple(c for (it, c) in timed[i * 3:(i + 1) * 3]) for i in range(iters)]
if any(sorted(p) != [0, 1, 2] for p in perms):
    failures.append(f"an iteration did not run every candidate once: {[p for p in perms if sorted(p) != [0, 1, 2]][:3]}")
# A fresh order per iteration: all 3! orders occur, and each candidate follows each other one.
if len(set(perms)) != 6:
    failures.append(f"only {len(set(perms))} of the 6 orders occur in {iters} iterations")
neighbours = {(p[k], p[k + 1]) for p in perms for k in range(2)}
if len(neighbours) != 6:
    failures.append(f"candidates follow only {sorted(neighbours)}")
# Consecutive runs take consecutive input copies (the run's index in the whole sequence), so that no
# run finds in L2 the copy the run before it read.
indices = [it for (it, c) in order]
if indices != list(range(len(order))):
    failures.append(f"runs were passed indices {indices[:8]}..., not their place in the sequence")
# Past the slowdown every run takes 1.25 x its duration; the medians must all carry the same factor.
factors = [m / d for m, d in zip(ms, durations)]
if max(factors) - min(factors) > 1e-9 or abs(factors[0] - 1.25) > 1e-9:
    failures.append(f"medians {ms} are not the durations {durations} under one clock (factors {factors})")
first_order = list(order)
order.clear()
tb.interleaved_ms(fake, [candidate(c, d) for c, d in enumerate(durations)], iters, warmup=3)
if order != first_order:
    failures.append("the order changed between two timings with the same seed")
if failures:
    print("FAILED:", *failures, sep="\n  ")
    sys.exit(1)
print(f"ok: medians {ms} (durations {durations} at the same clock)")
