"""Analysis at scale, beside its baselines in the same run:

1. convert: MB of JSON per second, CPU time and peak RSS of `devtrace
   convert`, with its step column (two passes) and without (`--no-steps`, one
   pass), beside the C reader alone (`devtrace stats` over the same traces);
2. kernels + temporal: `devtrace analyze` (DuckDB) against HTA 0.5's
   TraceAnalysis load plus its kernel and temporal breakdowns, wall time and
   peak RSS;
3. the same reports under a DuckDB memory_limit smaller than the dataset;
4. Dask with 2 local workers against DuckDB on the same dataset.

Usage: python3 bench/analysis.py [--ranks 8] [--events 1000000] [--no-hta] [--work DIR] [--convert-only]
(with DEVTRACE_LIBRARY and PYTHONPATH=python set, as for the tests, and
build/devtrace built). Each measurement runs in a child process of its own;
its peak RSS is the sum over the processes it starts."""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVTRACE = Path(os.environ.get("DT_BUILD_DIR", ROOT / "build")) / "devtrace"

# Wall time, CPU time (user + system, of the command and every process it
# waited for: on a loaded machine the steadier figure), and the peak of the
# summed RSS of the command and every process it starts (HTA parses in a
# pool of processes; Dask runs workers), sampled every 20 ms.
MEASURE = r"""
import resource, subprocess, sys, time
import psutil
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
proc, peak = psutil.Process(p.pid), 0
while p.poll() is None:
    try:
        rss = sum(q.memory_info().rss for q in [proc] + proc.children(recursive=True))
    except psutil.Error:
        rss = 0
    peak = max(peak, rss)
    time.sleep(0.02)
err = p.stderr.read()
dt = time.perf_counter() - t
if p.returncode:
    sys.exit("failed: %s\n%s" % (" ".join(sys.argv[1:]), err[-2000:]))
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(dt, ru.ru_utime + ru.ru_stime, peak // 1024)
"""

HTA = r"""
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1])
t.get_gpu_kernel_breakdown(visualize=False)
t.get_temporal_breakdown(visualize=False)
"""


def measure_cpu(cmd):
    """(wall s, CPU s, peak RSS MB) of cmd."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *map(str, cmd)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    secs, cpu, kb = out.stdout.split()
    return float(secs), float(cpu), int(kb) / 1024.0


def measure(cmd):
    secs, _, mb = measure_cpu(cmd)
    return secs, mb


def write_trace(path, rank, events, seed):
    """A torch.profiler-like trace: steps, launch calls, kernels on two
    streams (one of them NCCL's), a third of the events each."""
    rnd = random.Random(seed)
    names = ["gemm_%d_kernel" % i for i in range(40)] + ["elementwise_%d" % i for i in range(40)]
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"rank": %d, "world_size": 8}, "traceEvents": [\n' % rank)
        ts, corr, first = 1_700_000_000_000_000.0, 1, True
        per_step = 3000
        for i in range(events // 3):
            if i % per_step == 0:
                f.write('%s{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 1, "tid": 1, '
                        '"ts": %.3f, "dur": %.3f}\n' % ("" if first else ",", i // per_step, ts, per_step * 12.0))
                first = False
            nccl = i % 50 == 0
            name = "ncclDevKernel_AllReduce_Sum_f32" if nccl else rnd.choice(names)
            dur = rnd.uniform(2, 10)
            f.write(',{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                    '"ts": %.3f, "dur": 3.000, "args": {"correlation": %d, "External id": %d}}\n' % (ts, corr, corr))
            f.write(',{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": %d, "ts": %.3f, "dur": %.3f, '
                    '"args": {"device": 0, "stream": %d, "correlation": %d, "External id": %d, '
                    '"grid": [128, 1, 1], "block": [256, 1, 1]}}\n'
                    % (name, 20 if nccl else 7, ts + 5, dur, 20 if nccl else 7, corr, corr))
            f.write(',{"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 1, "tid": 1, "ts": %.3f, '
                    '"dur": 8.000, "args": {"External id": %d}}\n' % (ts - 1, corr))
            ts += 12.0
            corr += 1
        f.write("]}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--events", type=int, default=1_000_000, help="events per rank")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--min-limit", type=int, default=64, help="smallest DuckDB memory_limit tried, MB")
    ap.add_argument("--work", help="directory for the traces (default: a temporary one)")
    ap.add_argument("--convert-only", action="store_true", help="measure the conversion only (1.)")
    a = ap.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="dt-bench-analysis-"))
    traces = work / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    paths = [traces / ("rank%d.json" % r) for r in range(a.ranks)]
    for r, p in enumerate(paths):
        if not p.exists():
            write_trace(p, r, a.events, r)
    mb = sum(p.stat().st_size for p in paths) / 1e6
    print("traces: %d ranks x %d events, %.0f MB of JSON" % (a.ranks, a.events, mb))

    # 1. convert beside the reader alone, over every rank
    t_read, c_read, rss_read = measure_cpu(["sh", "-c", 'for f; do "$0" stats "$f" >/dev/null || exit 1; done',
                                            DEVTRACE, *paths])
    t_imp, c_imp, rss_imp = measure_cpu([sys.executable, "-c", "import devtrace.analysis._columns"])
    ds = work / "ds"
    shutil.rmtree(ds, ignore_errors=True)
    t_one, c_one, rss_one = measure_cpu([DEVTRACE, "convert", "--to", "parquet", "--no-steps", *paths, "-o", ds])
    shutil.rmtree(ds, ignore_errors=True)
    t_all, c_all, rss_all = measure_cpu([DEVTRACE, "convert", "--to", "parquet", *paths, "-o", ds])
    pq_mb = sum(p.stat().st_size for p in ds.rglob("*.parquet")) / 1e6
    print("reader alone (devtrace stats, each rank):  %7.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB"
          % (mb / t_read, c_read, rss_read))
    print("devtrace convert --no-steps (one pass):    %7.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB"
          % (mb / t_one, c_one, rss_one))
    print("devtrace convert (two passes, step column): %6.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB  (%.0f MB of Parquet)"
          % (mb / t_all, c_all, rss_all, pq_mb))
    print("  of which Python's start with pyarrow:    %7.2f s     CPU %6.2f s  peak RSS %6.1f MB"
          % (t_imp, c_imp, rss_imp))
    if a.convert_only:
        return

    # 2. kernels + temporal against HTA
    t_dt, c_dt, rss_dt = measure_cpu([DEVTRACE, "analyze", ds, "--report", "kernels,temporal"])
    print("devtrace analyze kernels,temporal (DuckDB): %7.2f s  CPU %6.2f s  peak RSS %6.1f MB" % (t_dt, c_dt, rss_dt))
    if not a.no_hta:
        t_h, c_h, rss_h = measure_cpu([sys.executable, "-c", HTA, traces])
        print("HTA 0.5 load + kernel + temporal breakdown: %7.2f s  CPU %6.2f s  peak RSS %6.1f MB" % (t_h, c_h, rss_h))
        print("  devtrace (convert + analyze) vs HTA: %.1fx faster (CPU %.1fx), %.2f of its memory; "
              "analyze alone %.1fx (CPU %.1fx)"
              % (t_h / (t_all + t_dt), c_h / (c_all + c_dt), max(rss_all, rss_dt) / rss_h, t_h / t_dt, c_h / c_dt))

    # 3. a memory limit far below the dataset's size in memory: its rows as
    # Arrow arrays (what a query holding them would need), one file at a
    # time
    import pyarrow.parquet as pq
    arrow_mb = sum(pq.read_table(p).nbytes for p in ds.rglob("*.parquet")) / 1e6
    limit_mb = max(a.min_limit, int(arrow_mb / 16))
    t_lim, rss_lim = measure([DEVTRACE, "analyze", ds, "--report", "kernels,temporal,idle",
                              "--memory-limit", "%dMB" % limit_mb])
    print("DuckDB memory_limit %d MB over a dataset of %.0f MB in memory as Arrow (%.0f MB of Parquet): "
          "kernels,temporal,idle completed in %.2f s, peak RSS %.1f MB" % (limit_mb, arrow_mb, pq_mb, t_lim, rss_lim))

    # 4. Dask with 2 local workers against DuckDB
    t_duck, c_duck, rss_duck = measure_cpu([DEVTRACE, "analyze", ds, "--report", "all"])
    t_dask, c_dask, rss_dask = measure_cpu([DEVTRACE, "analyze", ds, "--report", "all", "--engine", "dask"])
    print("all reports: DuckDB %.2f s (CPU %.2f s, %.0f MB), Dask (2 local workers, start-up included) %.2f s "
          "(CPU %.2f s, %.0f MB)" % (t_duck, c_duck, rss_duck, t_dask, c_dask, rss_dask))
    if not a.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
