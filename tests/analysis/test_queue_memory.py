"""Queue length, memory and copies' bandwidth (docs/analysis.md): HTA 0.5's
queue length summary and time series on its own traces (its negative-queue
case included), memory in use per device from allocations and frees, and
each new report's rows the same on DuckDB and on Dask."""

import json
from collections import Counter

import pytest

from conftest import (DEVTRACE, HTA_DATA, convert, hta_analysis, hta_quiet, kineto_trace, load_trace, need, report,
                      run)

SIMPLE_ADD = HTA_DATA / "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"
NEGATIVE_QUEUE = HTA_DATA / "negative_queue_length_values_check/rank0.step550.json.gz"


def _ties(series):
    """The times at which a stream's series changes twice (a launch call and
    a work's start at one microsecond)."""
    return {t for t, n in Counter(series).items() if n > 1}


@pytest.mark.parametrize("trace", [SIMPLE_ADD, NEGATIVE_QUEUE], ids=["simple_add", "negative_queue"])
def test_queue_length_is_hta_s(trace, tmp_path):
    """In HTA's view, each stream's queue length at each change is HTA's: the
    same times (on HTA's axis, from the trace's first event) and values, but
    where a launch and a work's start fall in one microsecond, which HTA
    orders as its unstable sort leaves them (devtrace: the launch first);
    its summary per stream (count, mean, std, min, quartiles, max) is HTA's
    on every stream without such a tie. Never negative: work whose launch
    the trace lacks is not counted (872 kernels in the negative-queue trace,
    HTA's test of it)."""
    need("hta")
    hta_quiet()
    analysis = hta_analysis([trace], tmp_path)
    ds = convert([trace], tmp_path / "ds")
    hta_series = analysis.get_queue_length_time_series(ranks=[0])[0]
    ours = report(ds, "queue_series", hta=True)
    assert (ours.queue_length >= 0).all() and (hta_series.queue_length >= 0).all()
    first = ours.ts.min() // 1000 - hta_series.ts.min()
    summary = analysis.get_queue_length_summary(ranks=[0])
    mine = report(ds, "queue", hta=True).set_index("stream")
    assert sorted(mine.index) == sorted(set(hta_series.stream))
    tied = 0
    for stream, h in hta_series.groupby("stream"):
        o = ours[ours.stream == stream]
        hts = [int(t) + first for t in h.ts]
        assert [t // 1000 for t in o.ts] == hts, stream
        ties = _ties(hts)
        tied += bool(ties)
        assert [v for t, v in zip(hts, h.queue_length) if t not in ties] == \
            [v for t, v in zip(hts, o.queue_length) if t not in ties], stream
        row, s = mine.loc[stream], summary.loc[(0, stream)]["queue_length"]
        assert row.points == s["count"] and row["max"] == s["max"] and row["min"] == s["min"]
        if not ties:
            assert (row["mean"], row["std"], row["p25"], row["median"], row["p75"]) == \
                pytest.approx((s["mean"], s["std"], s["25%"], s["50%"], s["75%"]), rel=1e-12), stream
    if trace == NEGATIVE_QUEUE:
        # each launch call adds and its work's start takes off: work without a launch is left out
        from devtrace.analysis._reports import HTA_LAUNCH_NAMES
        events = load_trace(trace)["traceEvents"]
        calls = {e["args"]["correlation"]: e["name"] for e in events if e.get("cat") == "cuda_runtime"}
        work = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        launched = [e for e in work if calls.get(e["args"].get("correlation")) in HTA_LAUNCH_NAMES]
        assert len(ours) == 2 * len(launched) and tied == 1
        assert sum(1 for e in work if e["args"].get("correlation") not in calls) == 872


def test_time_at_the_queue_limit_is_hta_s_time_blocked(tmp_path):
    """--queue-limit N: the time a stream had N or more launched works
    waiting, HTA's time blocked on a full queue."""
    need("hta")
    hta_quiet()
    analysis = hta_analysis([SIMPLE_ADD], tmp_path)
    ds = convert([SIMPLE_ADD], tmp_path / "ds")
    blocked = analysis.get_time_spent_blocked_on_full_queue(analysis.get_queue_length_time_series(ranks=[0]),
                                                            max_queue_length=3)
    ours = report(ds, "queue", hta=True, queue_limit=3).set_index("stream")
    # HTA keeps one stream per rank (its dict is by rank)
    for row in blocked.itertuples():
        assert ours.loc[row.stream, "full_ns"] == int(row.duration_at_max_queue_length) * 1000
    res = run([DEVTRACE, "analyze", ds, "--report", "queue", "--queue-limit", "3", "--format", "json"])
    assert res.returncode == 0, res.stderr
    assert [r["full_ns"] for r in json.loads(res.stdout)] == list(ours.sort_index().full_ns)


def test_copies_bandwidth_as_hta_counts_it(tmp_path):
    """Per rank and kind of copy, HTA's memory bandwidth time series' points
    (count, and when they start and end); HTA takes each copy's bandwidth
    from Kineto's arg (from its duration in nanoseconds, which a trace of
    whole microseconds does not hold), devtrace from its bytes and duration."""
    need("hta")
    hta_quiet()
    analysis = hta_analysis([NEGATIVE_QUEUE], tmp_path)
    ds = convert([NEGATIVE_QUEUE], tmp_path / "ds")
    hta = analysis.get_memory_bw_summary(ranks=[0])
    ours = report(ds, "bandwidth", hta=True).set_index("type")
    assert sorted(ours.index) == sorted(t for _, t in hta.index)
    for (_, kind), row in hta.iterrows():
        assert ours.loc[kind, "points"] == row[("memory_bw_gbps", "count")]
    series = report(ds, "bandwidth_series", hta=True)
    hta_series = analysis.get_memory_bw_time_series(ranks=[0])[0]
    first = series.ts.min() // 1000 - hta_series.ts.min()
    for kind, h in hta_series.groupby("name"):
        assert sorted(series[series.type == kind].ts // 1000) == sorted(int(t) + first for t in h.ts), kind


def memory_trace(path, rank=0):
    """torch.profiler's [memory] events (profile_memory=True) on two devices
    and the host: allocations, frees and the totals torch wrote."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0.0,
           "dur": 1000.0}]
    totals = {0: 0, 1: 1 << 30, -1: 0}  # device 1 had a GiB before the trace began

    def mem(ts, device, nbytes):
        totals[device] += nbytes
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                   "ts": ts, "args": {"Total Reserved": 0, "Total Allocated": totals[device], "Bytes": nbytes,
                                      "Addr": 4096 * len(ev), "Device Type": 0 if device == -1 else 1,
                                      "Device Id": device}})
    mem(10.0, 0, 100 << 20)
    mem(20.0, 0, 50 << 20)
    mem(30.0, 1, 8 << 20)
    mem(40.0, 0, -(100 << 20))
    mem(50.0, -1, 4096)
    mem(60.0, 0, 200 << 20)
    mem(70.0, 0, -(200 << 20))
    path.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": rank}, "traceEvents": ev}))
    return path


def test_memory_in_use_and_its_peak_per_device(tmp_path):
    """From the [memory] events: allocations and frees per device (-1 the
    host's), the peak in use and when it was first reached, the first and
    last totals (torch's Total Allocated: device 1 started with a GiB)."""
    ds = convert([memory_trace(tmp_path / "m.json")], tmp_path / "ds")
    mem = report(ds, "memory").set_index("device")
    assert list(mem.index) == [-1, 0, 1]
    assert (mem.loc[0, "allocations"], mem.loc[0, "frees"]) == (3, 2)
    assert mem.loc[0, "peak_bytes"] == 250 << 20 and mem.loc[0, "peak_ts"] == 60_000
    assert (mem.loc[0, "first_bytes"], mem.loc[0, "last_bytes"]) == (100 << 20, 50 << 20)
    assert (mem.loc[0, "allocated_bytes"], mem.loc[0, "freed_bytes"]) == (350 << 20, 300 << 20)
    assert mem.loc[1, "peak_bytes"] == (1 << 30) + (8 << 20) and mem.loc[-1, "peak_bytes"] == 4096
    series = report(ds, "memory_series")
    assert list(series[series.device == 0].in_use) == [100 << 20, 150 << 20, 50 << 20, 250 << 20, 50 << 20]


# ---- every new report: the same rows on DuckDB and Dask ------------------------------

NEW_REPORTS = ["critical_path", "critical_steps", "critical_events", "queue", "queue_series", "memory",
               "memory_series", "bandwidth", "bandwidth_series", "ops", "annotations", "sequences"]


def test_dask_gives_the_same_rows_as_duckdb(tmp_path):
    """Each new report, in both views, over four synthetic ranks, HTA's
    simple_add trace and a rank of [memory] events: Dask's rows are DuckDB's,
    with each task a share of the ranks; and so is devtrace diff's."""
    need("dask.distributed")
    from devtrace.analysis import Dask, diff
    from devtrace.analysis import _engine
    paths = []
    for r in range(4):
        p = tmp_path / ("rank%d.json" % r)
        p.write_text(json.dumps(kineto_trace(r, 3, slow=1 if r == 2 else None)))
        paths.append(p)
    synthetic = convert(paths, tmp_path / "synthetic")
    other = convert([SIMPLE_ADD, memory_trace(tmp_path / "m.json", rank=1)], tmp_path / "other")
    rows = Counter()
    with Dask(workers=2) as cluster:
        for ds in (synthetic, other):
            for hta in (False, True):
                duck = _engine.run_reports(str(ds), NEW_REPORTS, hta=hta, arrow=True)
                dask = _engine.run_reports(str(ds), NEW_REPORTS, hta=hta, engine="dask", dask=cluster, arrow=True)
                for n in NEW_REPORTS:
                    assert dask[n].equals(duck[n]), (ds, hta, n)
                    rows[n] += duck[n].num_rows
        assert all(rows[n] for n in NEW_REPORTS), rows
        a = diff(str(synthetic), str(other), base_steps=(0, 1), test_steps=(0, 1))
        b = diff(str(synthetic), str(other), base_steps=(0, 1), test_steps=(0, 1), engine="dask", dask=cluster)
        assert a.equals(b) and a.num_rows
