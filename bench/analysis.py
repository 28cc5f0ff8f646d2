"""Analysis at scale, beside its baselines in the same run:

1. convert: MB of JSON per second, CPU time and peak RSS of `devtrace
   convert`, with its step column (two passes) and without (`--no-steps`, one
   pass), beside the C reader alone (`devtrace stats` over the same traces);
2. kernels + temporal: `devtrace analyze` (DuckDB) against HTA 0.5's
   TraceAnalysis load plus its kernel and temporal breakdowns, wall time and
   peak RSS;
3. the same reports under a DuckDB memory_limit smaller than the dataset;
4. Dask with 1 and 2 local workers (`--dask-workers`) against DuckDB on the
   same dataset: all reports, wall and CPU time;
5. start-up: the CPU time of each command on a dataset of a few hundred
   events, beside Python doing nothing and Python importing HTA, and, with
   `--against DIR`, beside the commands of another devtrace tree built in
   DIR/build (an earlier version: before and after in one run);
6. new: each analysis HTA also has, beside HTA 0.5's on the same traces,
   wall and CPU time and peak RSS: the critical path of ProfilerStep#0 on
   every rank (devtrace: --window ProfilerStep#0; and of every step), the
   queue length summary, the frequent kernel sequences under aten::op, and
   the diff of step 0 of every rank against a second run (traces of other
   random kernels); HTA's figures are its load of the traces plus the
   analysis (the sequences of rank 0 alone: HTA writes each rank's trace
   again with them, minutes a rank; devtrace's of every rank), and its load
   alone is printed too. --new names the analyses to run.

Usage: python3 bench/analysis.py [--ranks 8] [--events 1000000] [--no-hta] [--work DIR] [--convert-only]
       [--only convert,hta,limit,dask,startup,new] [--dask-workers 1,2] [--against DIR]
       [--new critical_path,queue,sequences,diff]
(with DEVTRACE_LIBRARY and PYTHONPATH=python set, as for the tests, and
build/devtrace built). Each measurement runs in a child process of its own;
its peak RSS is the sum over the processes it starts. The machine's load
average is printed with the figures: wall times mean little on a loaded
machine, CPU times less so."""

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


# HTA 0.5's analyses, each in a process of its own (its load of the traces
# included): argv analysis, trace dir, ranks, second run's dir, scratch dir
HTA_NEW = r"""
import logging, os, sys, warnings
logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")
from hta.trace_analysis import TraceAnalysis
what, d, ranks, other, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
if what == "diff":
    from hta.trace_diff import TraceDiff
    TraceDiff.compare_traces(d, other, control_rank=list(range(ranks)), test_rank=list(range(ranks)),
                             control_iteration=0, test_iteration=0)
    sys.exit(0)
t = TraceAnalysis(trace_dir=d)
if what == "critical_path":
    for r in range(ranks):
        graph, ok = t.critical_path_analysis(rank=r, annotation="ProfilerStep#0", instance_id=0)
        assert ok
        graph.get_critical_path_breakdown()
elif what == "queue":
    t.get_queue_length_summary(ranks=list(range(ranks)))
elif what == "sequences":
    # rank 0 alone: each call also writes the rank's trace again (minutes a rank)
    t.get_frequent_cuda_kernel_sequences(operator_name="aten::op", output_dir=scratch, rank=0, visualize=False)
"""


def measure_cpu(cmd, env=None):
    """(wall s, CPU s, peak RSS MB) of cmd."""
    out = subprocess.run([sys.executable, "-c", MEASURE, *map(str, cmd)], capture_output=True, text=True,
                         env=env)
    if out.returncode:
        sys.exit(out.stderr)
    secs, cpu, kb = out.stdout.split()
    return float(secs), float(cpu), int(kb) / 1024.0


def cpu_of(cmd, env=None, runs=7):
    """The median and the least CPU time of cmd over runs runs (start-up:
    short commands, whose CPU time varies with the machine's load)."""
    import resource
    import statistics
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        if done.returncode:
            sys.exit("failed: %s\n%s" % (" ".join(map(str, cmd)), done.stderr.decode()[-2000:]))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(times), min(times)


def load():
    return "load average %.2f %.2f %.2f on %d CPUs" % (*os.getloadavg(), os.cpu_count() or 1)


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


def startup(work, against):
    """5. Each command's CPU time on a dataset of a few hundred events."""
    tiny = work / "tiny"
    tiny.mkdir(parents=True, exist_ok=True)
    trace = tiny / "rank0.json"
    write_trace(trace, 0, 300, 0)
    trees = [("this tree", ROOT, os.environ)]
    if against:
        src = Path(against).resolve()
        env = dict(os.environ, PYTHONPATH=str(src / "python"), DEVTRACE_LIBRARY=str(src / "build" / "libdevtrace.so"))
        trees.append(("%s" % src, src, env))
    print("start-up: CPU s of each command on a trace of 300 events (median, least of 7), %s" % load())
    floor = cpu_of([sys.executable, "-c", "pass"])
    print("  %-44s %5.3f  %5.3f" % ("python3 -c pass (the interpreter alone)", *floor))
    try:
        import hta  # noqa: F401
        print("  %-44s %5.3f  %5.3f" % ("python3 -c 'import hta.trace_analysis'",
                                       *cpu_of([sys.executable, "-c", "import hta.trace_analysis"])))
    except ImportError:
        pass
    for label, src, env in trees:
        devtrace = src / "build" / "devtrace"
        ds = tiny / ("ds-%d" % len(label))
        shutil.rmtree(ds, ignore_errors=True)
        conv = [devtrace, "convert", trace, "-o", ds]
        convert_cpu = []
        for _ in range(7):
            shutil.rmtree(ds, ignore_errors=True)
            convert_cpu.append(cpu_of(conv, env, runs=1)[0])
        print("  %s:" % label)
        print("    %-42s %5.3f  %5.3f" % ("devtrace convert", sorted(convert_cpu)[3], min(convert_cpu)))
        for reports in ("kernels", "all"):
            print("    %-42s %5.3f  %5.3f" % ("devtrace analyze --report %s" % reports,
                                            *cpu_of([devtrace, "analyze", ds, "--report", reports], env)))


def new_analyses(work, traces, paths, ds, a):
    """6. Each analysis beside HTA's on the same traces."""
    other = work / "traces2"
    other.mkdir(parents=True, exist_ok=True)
    for r in range(a.ranks):
        p = other / ("rank%d.json" % r)
        if not p.exists():
            write_trace(p, r, a.events, 1000 + r)
    ds2 = work / "ds2"
    if not (ds2 / "traces.parquet").exists():
        shutil.rmtree(ds2, ignore_errors=True)
        subprocess.run([DEVTRACE, "convert", *sorted(other.glob("rank*.json")), "-o", ds2], check=True,
                       capture_output=True)
    scratch = work / "hta-scratch"
    scratch.mkdir(exist_ok=True)
    devtrace = {
        "critical_path": [DEVTRACE, "analyze", ds, "--report", "critical_steps", "--window", "ProfilerStep#0"],
        "queue": [DEVTRACE, "analyze", ds, "--report", "queue"],
        "sequences": [DEVTRACE, "analyze", ds, "--report", "sequences", "--op", "aten::op"],
        "diff": [DEVTRACE, "diff", ds, ds2, "--steps", "0", "--threshold", "1e5"],
    }
    print("the analyses HTA also has, %d ranks x %d events (%s):" % (a.ranks, a.events, load()))
    print("  %-48s %8s %8s %9s" % ("", "wall s", "CPU s", "peak MB"))
    row = "  %-48s %8.2f %8.2f %9.0f"
    if "critical_path" in a.new.split(","):
        every = measure_cpu([DEVTRACE, "analyze", ds, "--report", "critical_steps"])
        print(row % ("devtrace critical path, every step of every rank", *every))
    hta = not a.no_hta
    if hta:
        h_load = measure_cpu([sys.executable, "-c", "import logging, sys, warnings; logging.disable(logging.WARNING);"
                              " warnings.filterwarnings('ignore'); from hta.trace_analysis import TraceAnalysis;"
                              " TraceAnalysis(trace_dir=sys.argv[1])", traces])
        print(row % ("HTA 0.5 loading the traces (in each of its figures)", *h_load))
    for what, cmd in devtrace.items():
        if what not in a.new.split(","):
            continue
        d = measure_cpu(cmd)
        print(row % ("devtrace %s" % what, *d))
        if hta:
            h = measure_cpu([sys.executable, "-c", HTA_NEW, what, traces, str(a.ranks), other, scratch])
            label = "HTA 0.5 %s%s" % (what, ", rank 0 alone" if what == "sequences" else "")
            print(row % (label, *h) + "   devtrace: %.1fx the speed, CPU %.1fx, %.2f of the memory"
                  % (h[0] / d[0], h[1] / d[1], d[2] / h[2]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--events", type=int, default=1_000_000, help="events per rank")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--min-limit", type=int, default=64, help="smallest DuckDB memory_limit tried, MB")
    ap.add_argument("--work", help="directory for the traces (default: a temporary one)")
    ap.add_argument("--convert-only", action="store_true", help="measure the conversion only (1.)")
    ap.add_argument("--only", default="convert,hta,limit,dask,startup,new",
                    help="the sections to run: convert, hta, limit, dask, startup, new (comma-separated)")
    ap.add_argument("--dask-workers", default="1,2", help="the local Dask clusters' sizes, comma-separated")
    ap.add_argument("--new", default="critical_path,queue,sequences,diff",
                    help="the analyses of section new: critical_path, queue, sequences, diff (comma-separated)")
    ap.add_argument("--against", metavar="DIR", help="another devtrace tree, built in DIR/build, for start-up")
    a = ap.parse_args()
    only = set(a.only.split(","))
    if a.convert_only:
        only = {"convert"}
    if a.no_hta:
        only.discard("hta")
    work = Path(a.work or tempfile.mkdtemp(prefix="dt-bench-analysis-"))
    if "startup" in only:
        startup(work, a.against)
        only.discard("startup")
        if not only:
            return
    traces = work / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    paths = [traces / ("rank%d.json" % r) for r in range(a.ranks)]
    for r, p in enumerate(paths):
        if not p.exists():
            write_trace(p, r, a.events, r)
    mb = sum(p.stat().st_size for p in paths) / 1e6
    print("traces: %d ranks x %d events, %.0f MB of JSON; %s" % (a.ranks, a.events, mb, load()))

    # 1. convert beside the reader alone, over every rank
    ds = work / "ds"
    if "convert" in only or not (ds / "traces.parquet").exists():
        t_read, c_read, rss_read = measure_cpu(["sh", "-c", 'for f; do "$0" stats "$f" >/dev/null || exit 1; done',
                                                DEVTRACE, *paths])
        t_imp, c_imp, rss_imp = measure_cpu([sys.executable, "-c", "import devtrace.analysis._columns"])
        shutil.rmtree(ds, ignore_errors=True)
        t_one, c_one, rss_one = measure_cpu([DEVTRACE, "convert", "--to", "parquet", "--no-steps", *paths, "-o", ds])
        shutil.rmtree(ds, ignore_errors=True)
        t_all, c_all, rss_all = measure_cpu([DEVTRACE, "convert", "--to", "parquet", *paths, "-o", ds])
        print("reader alone (devtrace stats, each rank):  %7.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB"
              % (mb / t_read, c_read, rss_read))
        print("devtrace convert --no-steps (one pass):    %7.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB"
              % (mb / t_one, c_one, rss_one))
        print("devtrace convert (two passes, step column): %6.1f MB/s  CPU %6.2f s  peak RSS %6.1f MB  (%.0f MB of "
              "Parquet)" % (mb / t_all, c_all, rss_all, sum(p.stat().st_size for p in ds.rglob("*.parquet")) / 1e6))
        print("  of which Python's start with pyarrow:    %7.2f s     CPU %6.2f s  peak RSS %6.1f MB"
              % (t_imp, c_imp, rss_imp))
    pq_mb = sum(p.stat().st_size for p in ds.rglob("*.parquet")) / 1e6

    # 2. kernels + temporal against HTA
    if "hta" in only:
        t_dt, c_dt, rss_dt = measure_cpu([DEVTRACE, "analyze", ds, "--report", "kernels,temporal"])
        print("devtrace analyze kernels,temporal (DuckDB): %7.2f s  CPU %6.2f s  peak RSS %6.1f MB"
              % (t_dt, c_dt, rss_dt))
        t_h, c_h, rss_h = measure_cpu([sys.executable, "-c", HTA, traces])
        print("HTA 0.5 load + kernel + temporal breakdown: %7.2f s  CPU %6.2f s  peak RSS %6.1f MB" % (t_h, c_h, rss_h))
        if "convert" in only:
            print("  devtrace (convert + analyze) vs HTA: %.1fx faster (CPU %.1fx), %.2f of its memory; "
                  "analyze alone %.1fx (CPU %.1fx)"
                  % (t_h / (t_all + t_dt), c_h / (c_all + c_dt), max(rss_all, rss_dt) / rss_h, t_h / t_dt,
                     c_h / c_dt))

    # 3. a memory limit far below the dataset's size in memory: its rows as
    # Arrow arrays (what a query holding them would need), one file at a
    # time
    if "limit" in only:
        import pyarrow.parquet as pq
        arrow_mb = sum(pq.read_table(p).nbytes for p in ds.rglob("*.parquet")) / 1e6
        limit_mb = max(a.min_limit, int(arrow_mb / 16))
        t_lim, rss_lim = measure([DEVTRACE, "analyze", ds, "--report", "kernels,temporal,idle",
                                  "--memory-limit", "%dMB" % limit_mb])
        print("DuckDB memory_limit %d MB over a dataset of %.0f MB in memory as Arrow (%.0f MB of Parquet): "
              "kernels,temporal,idle completed in %.2f s, peak RSS %.1f MB"
              % (limit_mb, arrow_mb, pq_mb, t_lim, rss_lim))

    # 4. Dask's local clusters against DuckDB
    if "dask" in only:
        t_duck, c_duck, rss_duck = measure_cpu([DEVTRACE, "analyze", ds, "--report", "all"])
        print("all reports, %s:" % load())
        print("  DuckDB:                                  %7.2f s  CPU %6.2f s  peak RSS %6.0f MB"
              % (t_duck, c_duck, rss_duck))
        for w in (int(n) for n in a.dask_workers.split(",")):
            t_dask, c_dask, rss_dask = measure_cpu([DEVTRACE, "analyze", ds, "--report", "all", "--engine", "dask",
                                                    "--workers", str(w)])
            print("  Dask, %d local worker%s (start-up included): %6.2f s  CPU %6.2f s  peak RSS %6.0f MB  "
                  "(CPU %.2fx DuckDB's)" % (w, " " if w == 1 else "s", t_dask, c_dask, rss_dask, c_dask / c_duck))
    # 6. the analyses HTA also has, beside HTA's
    if "new" in only:
        new_analyses(work, traces, paths, ds, a)
    if not a.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
