"""The critical path of each rank's steps (docs/analysis.md, "Critical
path"): on HTA's own critical-path traces and two NCCL ranks, the same path
as HTA 0.5's CriticalPathAnalysis (its length, its time by what bounds it,
the events on it); across ranks, the rank whose path set the step's time;
the slack of what is not on it; written back into the trace for Perfetto."""

import gzip
import json
import re
from collections import Counter

import pytest

from conftest import (BUILD, DEVTRACE, EMU_RUN, FIXTURES, HTA_DATA, convert, hta_analysis, hta_quiet, need, report,
                      run)

MEASURE = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
BOUNDS = {"cpu_bound": "cpu_ns", "gpu_compute_bound": "compute_ns", "gpu_communication_bound": "communication_ns",
          "gpu_kernel_launch_overhead": "launch_ns", "gpu_kernel_kernel_overhead": "kernel_gap_ns"}

# (the trace, its rank, HTA's annotation and instance, devtrace's window and step)
CASES = {
    "simple_add": (HTA_DATA / "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", 0,
                   MEASURE, 1, MEASURE, 1),
    "alexnet": (FIXTURES / "critical_path-alexnet.json.gz", 0, MEASURE, 1, MEASURE, 1),
    "event_sync": (HTA_DATA / "critical_path/cuda_event_sync/event_sync_trace.json.gz", 0, "ProfilerStep", 0,
                   None, 100),
    "stream_wait": (HTA_DATA / "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 0, "", None,
                    None, None),
    # two ranks of one NCCL job (HTA fails on their last step, ProfilerStep#552)
    "nccl_rank0": (FIXTURES / "trace_filter-sampled_rank-0.json.gz", 0, "ProfilerStep#551", 0, None, 551),
    "nccl_rank1": (FIXTURES / "trace_filter-sampled_rank-1.json.gz", 1, "ProfilerStep#551", 0, None, 551),
}


def _step(rows, step):
    return rows[rows.step.isna()] if step is None else rows[rows.step == step]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_path_is_hta_s(case, tmp_path, monkeypatch):
    """In HTA's view, the path HTA finds: its length, its time by bound (host,
    device compute, launch delay, kernel-to-kernel gap) and the events on it;
    on these traces of whole microseconds devtrace's own view finds the
    same."""
    need("hta")
    hta_quiet()
    trace, rank, annotation, instance, window, step = CASES[case]
    monkeypatch.delenv("CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE", raising=False)
    graph, ok = hta_analysis([trace], tmp_path).critical_path_analysis(rank=rank, annotation=annotation,
                                                                        instance_id=instance)
    assert ok
    hta = graph.get_critical_path_breakdown()
    ds = convert([trace], tmp_path / "ds")
    for view in (True, False):
        steps = _step(report(ds, "critical_steps", hta=view, window=window), step)
        assert len(steps) == 1 and steps.iloc[0].failed is None
        row = steps.iloc[0]
        assert row.path_ns == int(hta.duration.sum()) * 1000
        by_bound = hta.groupby("bound_by").duration.sum()
        for bound, col in BOUNDS.items():
            assert row[col] == int(by_bound.get(bound, 0)) * 1000, (view, bound)
        events = _step(report(ds, "critical_events", hta=view, window=window), step)
        on_path = Counter(events[(events.row == "event") & events.on_path].name)
        assert on_path == Counter(graph._get_node_name(e) for e in graph.critical_path_events_set), view
        # the path's segments add up to it, each attributed to an event of the window
        segments = events[events.row == "segment"]
        assert segments.path_ns.sum() == row.path_ns and segments["index"].notna().all()
    # the elements' shares add up to the whole path
    elements = _step(report(ds, "critical_path", hta=True, window=window), step)
    assert elements.share.sum() == pytest.approx(1.0)
    assert elements.path_ns.sum() == row.path_ns


# ---- across ranks --------------------------------------------------------------

def x(cat, name, ts, dur, pid, tid, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = {{"ext": "External id"}.get(k, k): v for k, v in args.items()}
    return e


def data_parallel_rank(rank, gemm_us, allreduce_end):
    """One step of a data-parallel rank: a gemm on stream 7, an event
    recorded after it that the all-reduce's stream 20 waits for, the
    all-reduce (ending when every rank has joined it: allreduce_end), a
    stream synchronisation; and a small kernel on stream 8 that nothing
    waits for."""
    h = (100, 100)
    ev = [x("user_annotation", "ProfilerStep#0", 0.0, 1000.0, *h)]

    def launch(call, corr, ts, kernel=None, start=None, dur=None, stream=7):
        ev.append(x("cuda_runtime", call, ts, 2.0, *h, correlation=corr))
        if kernel:
            ev.append(x("kernel", kernel, start, dur, 0, stream, device=0, stream=stream, correlation=corr))

    ev.append(x("cpu_op", "aten::mm", 10.0, 10.0, *h))
    launch("cudaLaunchKernel", 1, 12.0, "gemm", 20.0, gemm_us)
    launch("cudaLaunchKernel", 2, 16.0, "small_kernel", 24.0, 5.0, stream=8)
    ev.append(x("cpu_op", "nccl:all_reduce", 30.0, 10.0, *h))
    launch("cudaEventRecord", 3, 31.0)
    launch("cudaStreamWaitEvent", 4, 34.0)
    ev.append(x("cuda_sync", "Stream Wait Event", 36.0, 1.0, 0, 20, device=0, stream=20, correlation=4,
                wait_on_stream=7, wait_on_cuda_event_record_corr_id=3))
    launch("cudaLaunchKernel", 5, 37.0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20.0 + gemm_us,
           allreduce_end - 20.0 - gemm_us, stream=20)
    ev.append(x("cuda_runtime", "cudaStreamSynchronize", 50.0, allreduce_end + 5.0 - 50.0, *h, correlation=6))
    ev.append(x("cuda_sync", "Stream Sync", allreduce_end, 2.0, 0, 20, device=0, stream=20, correlation=6))
    ev.append(x("cpu_op", "optimizer", allreduce_end + 10.0, 20.0, *h))
    return {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": ev}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Rank 1's gemm takes 300 us, rank 0's 100 us: both all-reduces end at
    370 us, rank 0's having waited 200 us longer for rank 1."""
    d = tmp_path_factory.mktemp("dp")
    paths = []
    for rank, gemm in ((0, 100.0), (1, 300.0)):
        p = d / ("rank%d.json" % rank)
        p.write_text(json.dumps(data_parallel_rank(rank, gemm, 370.0)))
        paths.append(p)
    return paths, convert(paths, d / "ds")


def test_the_rank_whose_path_set_the_step(two_ranks):
    """Each rank's path runs through its gemm, the stream wait, the
    all-reduce and the synchronisation: rank 0's holds 100 us of compute and
    250 us of the all-reduce (waiting for rank 1), rank 1's 300 us and 50 us.
    Rank 1's path set the step's time."""
    steps = report(two_ranks[1], "critical_steps").set_index("rank")
    assert list(steps.sets_step) == [False, True]
    assert steps.loc[0, "compute_ns"] == 100_000 and steps.loc[0, "communication_ns"] == 250_000
    assert steps.loc[1, "compute_ns"] == 300_000 and steps.loc[1, "communication_ns"] == 50_000
    # both paths: aten::mm until its launch (2 us), the launch delay (8 us),
    # the gemm, the all-reduce, the optimizer (20 us); the synchronisation's
    # own time is waiting, and the host's between top-level operators is no
    # one's (HTA's dependency edges have no length)
    assert list(steps.path_ns) == [380_000, 380_000]
    assert list(steps.cpu_ns) == [22_000, 22_000] and list(steps.launch_ns) == [8_000, 8_000]
    assert steps.loc[1, "own_ns"] - steps.loc[0, "own_ns"] == 200_000
    elements = report(two_ranks[1], "critical_path")
    comm = elements[elements.bound_by == "gpu_communication_bound"].set_index("rank")
    assert comm.loc[1, "share"] == pytest.approx(50 / 380)


def test_what_is_off_the_path_has_slack(two_ranks):
    """The small kernel on stream 8 (24 to 29 us) is not on the path, and
    could end as late as the all-reduce's end (where the synchronisation
    waits for stream 20 only, it is free until the step's last operator):
    its slack is positive; the gemm, on the path, has none."""
    rows = report(two_ranks[1], "critical_events")
    ev = {(r.rank, r.name): r for r in rows[rows.row == "event"].itertuples()}
    for rank in (0, 1):
        assert not ev[(rank, "small_kernel")].on_path and ev[(rank, "small_kernel")].slack_ns > 0
        assert ev[(rank, "gemm")].on_path and ev[(rank, "gemm")].slack_ns == 0
    elements = report(two_ranks[1], "critical_path")
    small = elements[(elements["rank"] == 0) & (elements.name == "small_kernel")]
    assert list(small.bound_by) == ["gpu_compute_bound"]
    small = small.iloc[0]
    assert small.on_path == 0 and small.path_ns == 0 and small.min_slack_ns == ev[(0, "small_kernel")].slack_ns


# ---- written back into the trace ----------------------------------------------

def test_the_path_and_counters_are_written_back(two_ranks, tmp_path):
    """--overlay writes each trace again: the events on the path carry args
    critical = 1, counter tracks show the path's bound, each stream's queue
    and each kind of copy's bandwidth; every other event is as it was."""
    paths, ds = two_ranks
    out = tmp_path / "overlay"
    res = run([DEVTRACE, "analyze", ds, "--report", "critical_steps", "--overlay", out])
    assert res.returncode == 0, res.stderr
    for rank, p in enumerate(paths):
        before = json.loads(p.read_text())["traceEvents"]
        after = json.loads((out / p.name).read_text())["traceEvents"]
        marked = [e for e in after[:len(before)] if e.get("args", {}).pop("critical", None) == 1]
        for e in marked:  # critical taken out again: the events as they were
            if not e["args"]:
                del e["args"]
        assert after[:len(before)] == before
        names = {e["name"] for e in marked}
        assert {"gemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"} <= names and "small_kernel" not in names
        counters = [e for e in after[len(before):]]
        assert counters and all(e["ph"] == "C" for e in counters)
        path = [e for e in counters if e["name"] == "Critical path"]
        # the path's time by bound, from the counter: 1 while the path is in that bound
        time_in = Counter()
        for a, b in zip(path, path[1:]):
            for bound, on in a["args"].items():
                time_in[bound] += on * round((b["ts"] - a["ts"]) * 1000)
        steps = report(ds, "critical_steps").set_index("rank")
        assert time_in["gpu_communication_bound"] == steps.loc[rank, "communication_ns"]
        assert time_in["gpu_compute_bound"] == steps.loc[rank, "compute_ns"]
        queue = [e for e in counters if e["name"] == "Queue length (stream 7)"]
        assert [e["args"]["queue length"] for e in queue] == [1, 0]
        assert all((e["pid"], e["tid"]) == (0, 7) for e in queue)


def test_a_devtrace_trace_written_back_still_checks(tmp_path):
    """A devtrace trace of the MSPTI emulator (a collective, kernels,
    allocations and frees) written back: `devtrace check` finds it whole,
    with its memory and queue counters on named rows, and exact numbers."""
    emu = BUILD / "emu" / "libmspti.so"
    scenario = tmp_path / "s.scn"
    scenario.write_text(
        "vendor mspti\ndevices 1\nthread \"w\" {\n  malloc device=0 bytes=1048576\n"
        "  malloc device=0 bytes=2097152\n  kernel device=0 stream=1 name=\"MatMulV2\" dur_us=40\n  free\n"
        "  collective device=0 stream=3 name=\"hcom_allReduce_\" group=\"g\" count=1024 dtype=fp32 dur_us=30\n"
        "  kernel device=0 stream=1 name=\"Add\" dur_us=10\n  sync device=0\n}\n")
    trace = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "mspti", "-o", trace, "--", EMU_RUN, "--quiet", "--library", emu,
               scenario], env={"DEVTRACE_MSPTI_LIBRARY": str(emu)})
    assert res.returncode == 0, res.stderr
    ds = convert([trace], tmp_path / "ds")
    res = run([DEVTRACE, "analyze", ds, "--report", "memory", "--format", "json", "--overlay", tmp_path / "out"])
    assert res.returncode == 0, res.stderr
    memory = json.loads(res.stdout)
    assert [(m["device"], m["allocations"], m["frees"], m["peak_bytes"], m["last_bytes"]) for m in memory] == \
        [(0, 2, 1, 3 << 20, 1 << 20)]
    written = tmp_path / "out" / "t.json"
    check = run([DEVTRACE, "check", written])
    assert check.returncode == 0, check.stdout + check.stderr
    after = json.loads(written.read_text())["traceEvents"]
    mem = [e["args"]["bytes"] for e in after if e["ph"] == "C" and e["name"] == "Memory in use (device 0)"]
    assert mem == [1 << 20, 3 << 20, 1 << 20]
    assert any(e.get("args", {}).get("critical") == 1 for e in after)


def test_written_back_numbers_keep_every_digit(tmp_path):
    """A Kineto trace at epoch microseconds with nanoseconds (HTA's
    nanosecond trace's form), gzip'd: written back gzip'd, with every
    number as it was."""
    # written as text: a float holds a quarter of a microsecond at epoch times
    ev = [('"user_annotation"', '"ProfilerStep#7"', "1712345678901234.125", "100.5", ""),
          ('"cpu_op"', '"aten::add"', "1712345678901240.375", "20.125", ""),
          ('"cuda_runtime"', '"cudaLaunchKernel"', "1712345678901245.001", "3.999", ', "args": {"correlation": 9}'),
          ('"kernel"', '"add_kernel"', "1712345678901260.999", "7.001",
           ', "args": {"device": 0, "stream": 7, "correlation": 9}')]
    text = '{"schemaVersion": 1, "traceEvents": [%s]}' % ", ".join(
        '{"ph": "X", "cat": %s, "name": %s, "pid": %d, "tid": %d, "ts": %s, "dur": %s%s}'
        % (cat, name, 0 if cat == '"kernel"' else 1, 7 if cat == '"kernel"' else 1, ts, dur, args)
        for cat, name, ts, dur, args in ev)
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(text.encode()))
    ds = convert([trace], tmp_path / "ds")
    res = run([DEVTRACE, "analyze", ds, "--report", "critical_steps", "--overlay", tmp_path / "out"])
    assert res.returncode == 0, res.stderr
    out = gzip.decompress((tmp_path / "out" / "t.json.gz").read_bytes()).decode()
    for _, _, ts, dur, _ in ev:
        assert '"ts":%s,"dur":%s' % (ts, dur) in out
    # the counters at the nanosecond: the queue's at the launch and the kernel's start
    queue = [json.loads(m) for m in re.findall(r'\{"ph":"C","name":"Queue length[^}]*\}\}', out)]
    assert [(q["args"]["queue length"]) for q in queue] == [1, 0]
    assert re.search(r'"ts":1712345678901245\.001,"args":\{"queue length":1\}', out)
    assert re.search(r'"ts":1712345678901260\.999,"args":\{"queue length":0\}', out)
    res = run([DEVTRACE, "analyze", ds, "--overlay", tmp_path])
    assert res.returncode == 1 and "would write over the trace" in res.stderr


def test_a_window_of_the_user_s_choosing(tmp_path):
    """--window NAME: the path over each instance of a host range named
    NAME, numbered from 0 (HTA's annotation and instance); a name no range
    has gives no rows."""
    trace = CASES["simple_add"][0]
    ds = convert([trace], tmp_path / "ds")
    steps = report(ds, "critical_steps", window=MEASURE)
    assert list(steps.step) == [0, 1] and steps.path_ns.gt(0).all()
    assert report(ds, "critical_steps", window="no such range").empty
    res = run([DEVTRACE, "analyze", ds, "--report", "critical_steps", "--window", MEASURE, "--format", "csv"])
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 3
    # without steps or a window: the whole trace
    whole = report(ds, "critical_steps")
    assert len(whole) == 1 and whole.step.isna().all() and whole.path_ns.iloc[0] > steps.path_ns.max()


def test_a_trace_gone_since_the_conversion_is_one_line(two_ranks, tmp_path):
    """--overlay needs the traces the dataset was converted from: one gone
    is one line naming it, exit status 1, and nothing half written."""
    import shutil
    paths, _ = two_ranks
    moved = tmp_path / "traces"
    moved.mkdir()
    for p in paths:
        shutil.copy(p, moved / p.name)
    ds = convert(sorted(moved.iterdir()), tmp_path / "ds")
    (moved / "rank1.json").unlink()
    res = run([DEVTRACE, "analyze", ds, "--report", "critical_steps", "--overlay", tmp_path / "out"])
    assert res.returncode == 1 and "rank1.json" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not any(p.name.endswith(".tmp") for p in (tmp_path / "out").iterdir())


@pytest.mark.parametrize("vendor", ["topspti", "cupti"])
def test_a_devtrace_trace_s_path_is_its_device_work(vendor, tmp_path):
    """devtrace's own traces of a host that launches 1.2 ms of kernels and
    waits for them: on CUPTI the synchronisation calls, on TOPSPTI (whose
    traces hold no synchronisation records) topsStreamSynchronize and
    topsDeviceSynchronize, block the host, so the path is the kernels
    (1.2 ms of the device's clock, on the host's through its clock fit),
    not the host's waiting."""
    emu = BUILD / "emu" / ("lib%s.so" % vendor)
    scenario = tmp_path / "s.scn"
    scenario.write_text("vendor %s\ndevices 1\nthread \"w\" {\n  repeat 3 {\n"
                        "    kernel device=0 stream=1 name=\"k1\" dur_us=300\n"
                        "    kernel device=0 stream=1 name=\"k2\" dur_us=100\n  }\n"
                        "  sync device=0 stream=1\n  sync device=0\n}\n" % vendor)
    trace = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", vendor, "-o", trace, "--", EMU_RUN, "--quiet", "--library", emu,
               scenario], env={"DEVTRACE_%s_LIBRARY" % vendor.upper(): str(emu)})
    assert res.returncode == 0, res.stderr
    ds = convert([trace], tmp_path / "ds")
    row = report(ds, "critical_steps").iloc[0]
    assert abs(row.compute_ns - 1_200_000) <= 20 and row.cpu_ns == 0
    assert row.path_ns == row.compute_ns + row.launch_ns
    path = report(ds, "critical_path")
    assert set(path[path.path_ns > 0].name) == {"k1", "k2"}
