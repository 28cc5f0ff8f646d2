#!/usr/bin/env python3
"""PyTorch workloads for the CUDA validation (tests/gpu/cuda_validate.sh).

  torch_workload.py model [--steps N] [--profile-out TRACE]
      matmul -> relu -> softmax, N steps; with --profile-out, under
      torch.profiler (CPU and CUDA activities) exporting its Kineto trace.
  torch_workload.py loop [--launches N] [--profile]
      a launch-bound loop of N tiny kernels (in-place add on one element).

Prints one JSON line: the measured span in seconds ("loop_s"), for an
unprofiled model run its CLOCK_REALTIME bounds ("run_start_ns", "run_end_ns":
the span to compare with torch.profiler's), and for a profiled run the
export time and trace size. Run it under `devtrace record`
to trace it with devtrace; "end_ns" (CLOCK_REALTIME at the end of the
script) lets the caller measure how long devtrace took to write its trace.
"""
import argparse
import json
import os
import sys
import time


def model(steps, profile_out):
    import torch
    torch.manual_seed(0)
    dev = torch.device("cuda")
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)
    torch.cuda.synchronize()

    def run():
        for _ in range(steps):
            c = torch.relu(a @ b)
            torch.softmax(c, dim=1)
        torch.cuda.synchronize()

    run()  # warm-up: cuBLAS handles, kernel selection
    result = {}
    if profile_out:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            run()
            result["loop_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        prof.export_chrome_trace(profile_out)
        result["export_s"] = time.perf_counter() - t0
        result["trace_bytes"] = os.path.getsize(profile_out)
    else:
        result["run_start_ns"] = time.time_ns()
        t0 = time.perf_counter()
        run()
        result["loop_s"] = time.perf_counter() - t0
        result["run_end_ns"] = time.time_ns()
    return result


def loop(launches, profiled):
    import torch
    x = torch.zeros(1, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()

    def run():
        t0 = time.perf_counter()
        for _ in range(launches):
            x.add_(1)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    if profiled:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            span = run()
    else:
        span = run()
    return {"loop_s": span}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["model", "loop"])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--launches", type=int, default=100000)
    p.add_argument("--profile-out")
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    if a.what == "model":
        r = model(a.steps, a.profile_out)
    else:
        r = loop(a.launches, a.profile)
    r["end_ns"] = time.time_ns()
    print(json.dumps(r))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
