import importlib
import importlib.util
import logging
import math
import shutil
from pathlib import Path


# the CLI integration tests' helpers (paths, run), one copy
_spec = importlib.util.spec_from_file_location(
    "dt_integration", Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
BUILD, DEVTRACE, EMU_RUN, SOURCE = _integration.BUILD, _integration.DEVTRACE, _integration.EMU_RUN, _integration.SOURCE
run, load_trace = _integration.run, _integration.load_trace
MSPTI_EMU = BUILD / "emu" / "libmspti.so"
FIXTURES = SOURCE.parent / "shared" / "fixtures" / "torch-traces"
if not FIXTURES.exists():
    FIXTURES = SOURCE / ".." / "shared" / "fixtures" / "torch-traces"
# HTA's own test traces (data/hta/README.md)
HTA_DATA = Path(__file__).resolve().parent / "data" / "hta"

# HTA logs a warning per file parsed
logging.getLogger("hta").setLevel(logging.ERROR)


need = _integration.need


def convert(traces, out):
    res = run([DEVTRACE, "convert", "--to", "parquet", *traces, "-o", out])
    assert res.returncode == 0, res.stderr
    return out


def report(path, name, **kw):
    from devtrace.analysis import report as rep
    return rep(str(path), name, **kw).to_pandas()


def hta_quiet():
    """HTA's warnings (pandas' deprecations in its code) out of the way."""
    import warnings
    warnings.filterwarnings("ignore", module="hta")
    warnings.filterwarnings("ignore", category=FutureWarning)


def hta_analysis(traces, tmp_path):
    need("hta")
    d = tmp_path / "hta"
    d.mkdir()
    for t in traces:
        shutil.copy(t, d / Path(t).name)
    from hta.trace_analysis import TraceAnalysis
    return TraceAnalysis(trace_dir=str(d))


def compare_with_hta(traces, ds, analysis):
    """Every report HTA also computes, in HTA's view (--hta): equal."""
    ranks = sorted(analysis.t.traces)
    # temporal breakdown: HTA's per rank, ours per rank and device (one device a rank here)
    hta_t = analysis.get_temporal_breakdown(visualize=False).set_index("rank")
    ours = report(ds, "temporal", hta=True).set_index("rank")
    for r in ranks:
        # (HTA downcasts its integers: int16 microseconds would overflow as nanoseconds)
        assert ours.loc[r, "span_ns"] == int(hta_t.loc[r, "kernel_time(us)"]) * 1000
        assert ours.loc[r, "idle_ns"] == int(hta_t.loc[r, "idle_time(us)"]) * 1000
        assert ours.loc[r, "compute_ns"] == int(hta_t.loc[r, "compute_time(us)"]) * 1000
        assert ours.loc[r, "non_compute_ns"] == int(hta_t.loc[r, "non_compute_time(us)"]) * 1000
    # comm/comp overlap: HTA gives a percentage rounded to 2 places
    hta_o = analysis.get_comm_comp_overlap(visualize=False).set_index("rank")
    ours = report(ds, "overlap", hta=True).set_index("rank")
    for r in ranks:
        h = hta_o.loc[r, "comp_comm_overlap_pctg"]
        o = ours.loc[r, "overlap_ratio"]
        assert (math.isnan(h) and (o is None or math.isnan(o))) or round(100 * o, 2) == h
    # kernel breakdown: each kernel HTA names (not its "others"), with its total (past
    # num_kernels names HTA's min, max and mean are over its per-name sums)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    ours = report(ds, "kernels", hta=True).set_index(["rank", "name"])
    named = hta_k[hta_k.name != "others"]
    assert len(named)
    for k in named.itertuples():
        row = ours.loc[(k.rank, k.name)]
        assert row["class"] == k.kernel_type.lower()
        assert row.total_ns == int(k._2) * 1000
    # idle time by stream and cause
    hta_i = analysis.get_idle_time_breakdown(ranks=ranks, visualize=False)[0]
    ours = report(ds, "idle", hta=True).set_index(["rank", "stream", "idle_category"])
    for i in hta_i.itertuples():
        key = (i.rank, i.stream, i.idle_category)
        if key in ours.index:
            assert ours.loc[key, "idle_ns"] == int(i.idle_time) * 1000, key
        else:  # a stream with one kernel has no gap; HTA writes a 0
            assert i.idle_time == 0, key
    assert len(ours) == int((hta_i.idle_time != 0).sum() + (hta_i.idle_time == 0).sum()
                            - sum(1 for i in hta_i.itertuples()
                                  if (i.rank, i.stream, i.idle_category) not in ours.index))
    # launch statistics: per kernel, HTA's CUDA launch calls
    from devtrace.analysis import launch_events
    ev = launch_events(str(ds), hta=True).to_pandas().set_index(["rank", "correlation"])
    hta_l = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    for r, df in hta_l.items():
        # HTA knows CUDA's launch calls only: on ROCm it finds none, devtrace every one
        assert len(df) or len(ev.loc[r])
        for row in df.itertuples():
            o = ev.loc[(r, row.correlation)]
            assert (o.cpu_duration, o.gpu_duration, o.launch_delay) == \
                (int(row.cpu_duration) * 1000, int(row.gpu_duration) * 1000, int(row.launch_delay) * 1000)


# ---- synthetic Kineto traces: steps, launches, kernels, an all-reduce ----

def kineto_trace(rank, steps, slow=None, kernel_prefix="ncclDevKernel_AllReduce_Sum_f32_RING_LL", delay=3000.0,
                 jitter=10.0):
    """A torch.profiler trace of `steps` steps; step `slow` of this rank
    computes `delay` us (3 ms) longer and the other ranks wait for it in the
    all-reduce."""
    ev, t, corr = [], 1_000_000.0, 100
    slow_by = delay
    for step in range(steps):
        delay = slow_by if slow == step else 0.0
        start = t
        # each rank's steps a little apart (rank * jitter us), the slow one longer
        length = 10000.0 + jitter * rank + delay
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 10, "tid": 10,
                   "ts": start, "dur": length})
        k_ts = start + 50.0
        for i, (name, dur) in enumerate([("gemm_kernel", 2000.0 + delay), ("relu_kernel", 300.0),
                                         (kernel_prefix, 1500.0 if slow is None or slow != step else 100.0)]):
            corr += 1
            launch = start + 10.0 + 5.0 * i
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                       "ts": launch, "dur": 4.0, "args": {"correlation": corr, "External id": corr}})
            args = {"device": 0, "stream": 7 if i < 2 else 20, "correlation": corr, "External id": corr,
                    "grid": [64, 1, 1], "block": [256, 1, 1]}
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": args["stream"],
                       "ts": k_ts, "dur": dur, "args": args})
            ev.append({"ph": "s", "id": corr, "pid": 10, "tid": 10, "ts": launch, "cat": "ac2g", "name": "ac2g"})
            ev.append({"ph": "f", "id": corr, "pid": 0, "tid": args["stream"], "ts": k_ts, "cat": "ac2g",
                       "name": "ac2g", "bp": "e"})
            k_ts += dur + 20.0
        t += length
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 4},
            "traceEvents": ev}
