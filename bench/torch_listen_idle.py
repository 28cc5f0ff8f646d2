#!/usr/bin/env python3
"""What devtrace.torch.listen() costs a training loop while no trigger comes:
ns per optimizer step of a tiny model (Linear 8x8, SGD, CPU) without the
listener (baseline) and with it, in the same process, rounds interleaved;
and the cost of one step boundary alone (the hook's work: a Python call and
one ctypes call of dt_control_take) and of the bare ctypes call.

  DEVTRACE_LIBRARY=build/libdevtrace.so PYTHONPATH=python python3 bench/torch_listen_idle.py [STEPS] [ROUNDS]

Prints wall-time medians over the rounds with their half spread
((max - min) / 2) and their minimum (the least disturbed round); the added
cost per step is the difference of two medians, printed as "below noise"
when within the two half spreads, added;
it is a benchmark, not a test. No device backend is enabled (backend=None):
while idle the listener arms nothing, so a backend would not change these.
"""
import statistics
import sys
import tempfile
import os
import time

import torch

import devtrace.torch
from devtrace.torch import _listen


def per_step_ns(fn, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n


def summary(values):
    return "%8.1f ns  (±%.1f, min %.1f)" % (statistics.median(values), (max(values) - min(values)) / 2, min(values))


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    # a socket directory of this run's own
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="devtrace-bench-"))
    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    devtrace.torch.listen(backend=None, steps_hook=False)
    listener = _listen.listener()
    take, request = listener._take, listener._request_ref
    per_step_ns(opt.step, 2000)  # warm up
    base, listening, boundary, ctypes_call = [], [], [], []
    for _ in range(rounds):
        base.append(per_step_ns(opt.step, steps))
        listener.install_hook()
        listening.append(per_step_ns(opt.step, steps))
        listener.remove_hook()
        boundary.append(per_step_ns(listener.boundary, steps * 5))
        ctypes_call.append(per_step_ns(lambda: take(request), steps * 5))
    assert listener.captures == 0
    devtrace.torch.stop_listening()
    half = lambda v: (max(v) - min(v)) / 2  # noqa: E731
    added = statistics.median(listening) - statistics.median(base)
    noise = half(base) + half(listening)
    print("torch %s, %d optimizer steps x %d rounds, wall time, medians (half spread, min)"
          % (torch.__version__, steps, rounds))
    print("optimizer step, not listening (baseline): %s" % summary(base))
    print("optimizer step, listening (idle):         %s" % summary(listening))
    if abs(added) <= noise:
        print("added per optimizer step:                 below noise (±%.1f ns)" % noise)
    else:
        print("added per optimizer step:                 %8.1f ns  (noise ±%.1f)" % (added, noise))
    print("one step boundary (hook body):            %s" % summary(boundary))
    print("  of which dt_control_take via ctypes:    %s" % summary(ctypes_call))

if __name__ == "__main__":
    main()
