"""The analysis on what real torch.profiler traces hold, each case in a small
trace written here the way Kineto writes it (HTA's public test data has
each: MTIA, PyTorch 1.9's Kineto, ROCm, CUDA's event syncs, torch.compile,
epoch-microsecond timestamps), against HTA 0.5 where it computes the same
thing, and where HTA differs, what it does instead (docs/analysis.md)."""

import json
import math
from fractions import Fraction

import pytest

from conftest import compare_with_hta, convert, hta_analysis, need, report


def x(cat, name, ts, dur, pid, tid, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = {{"ext": "External id"}.get(k, k): v for k, v in args.items()}
    return e


def write(path, events, rank=0):
    path.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 1},
                                "traceEvents": events}))
    return path


def launched(events, runtime_cat, call, work_cat, name, host_ts, work_ts, work_dur, corr, pid=0, tid=7, **args):
    """A launch call and the device work it started (same correlation)."""
    events.append(x(runtime_cat, call, host_ts, 4.25, 100, 100, correlation=corr))
    events.append(x(work_cat, name, work_ts, work_dur, pid, tid, correlation=corr, **args))


# ---- device work devtrace did not see --------------------------------------

def mtia_trace(path):
    """MTIA: device work in mtia_ccp_events (kernels, and DMA named
    dma_request), launched by mtia_runtime's runFunction; no device arg; a
    DMA without a stream."""
    ev = [x("user_annotation", "ProfilerStep#1", 1000.0, 900.0, 100, 100)]
    t = 1010.0
    for i in range(8):
        launched(ev, "mtia_runtime", "runFunction - job_prep_and_submit_for_execution", "mtia_ccp_events",
                 "fc-dtype_Float" if i % 2 == 0 else "relu-dtype_Float", t, t + 5.125 + 0.5 * i, 20.5 + i,
                 10 + i, pid=9, tid=4, stream=1)
        ev.append(x("mtia_ccp_events", "dma_request", t + 40.25, 4.0, 9, 408, stream=102, size=1024))
        t += 50.0 + 7.0 * (i % 3)
    ev.append(x("mtia_ccp_events", "dma_request", 1700.0, 3.0, 9, 801, size=16))
    return write(path, ev)


def old_kineto_trace(path):
    """PyTorch 1.9's Kineto: Kernel, Memcpy, Memset on the device, Runtime
    calls, flows named async_gpu."""
    ev = [x("Operator", "ProfilerStep#3", 1000.0, 600.0, 100, 100)]
    t = 1005.0
    for i in range(6):
        cat, name = [("Kernel", "sgemm_32x32"), ("Memcpy", "Memcpy HtoD (Pageable -> Device)"),
                     ("Kernel", "elementwise_kernel"), ("Memset", "Memset (Device)")][i % 4]
        launched(ev, "Runtime", "cudaLaunchKernel" if cat == "Kernel" else "cudaMemcpyAsync", cat, name,
                 t, t + 12.5, 30.0 + 5 * i, 40 + i, device=0, stream=7)
        ev.append({"ph": "s", "id": 40 + i, "pid": 100, "tid": 100, "ts": t, "cat": "async_gpu", "name": "launch"})
        ev.append({"ph": "f", "id": 40 + i, "pid": 0, "tid": 7, "ts": t + 12.5, "cat": "async_gpu", "name": "launch",
                   "bp": "e"})
        t += 80.0 + 9.0 * i
    return write(path, ev)


def test_mtia_device_work_is_read_and_agrees_with_hta(tmp_path):
    trace = mtia_trace(tmp_path / "mtia.json")
    ds = convert([trace], tmp_path / "ds")
    kernels = report(ds, "kernels").set_index("name")
    assert dict(kernels["count"]) == {"fc-dtype_Float": 4, "relu-dtype_Float": 4, "dma_request": 9}
    assert dict(kernels["class"]) == {"fc-dtype_Float": "computation", "relu-dtype_Float": "computation",
                                      "dma_request": "memory"}
    assert kernels.loc["dma_request", "total_ns"] == 8 * 4000 + 3000
    # no device arg: one device, null, whose span is the work's
    temporal = report(ds, "temporal")
    assert len(temporal) == 1 and temporal.device.isna().all()
    assert temporal.span_ns[0] == 1703000 - 1015125
    launch = report(ds, "launch")
    assert list(launch.kernels) == [8]
    idle = report(ds, "idle")
    assert set(idle.stream) == {1, 102}
    # HTA's view: every number HTA computes (its device events have a stream:
    # the DMA without one is not among them)
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))
    hta_kernels = report(ds, "kernels", hta=True).set_index("name")
    assert hta_kernels.loc["dma_request", "count"] == 8


def test_old_kineto_categories_are_read_and_agree_with_hta(tmp_path):
    trace = old_kineto_trace(tmp_path / "old.json")
    ds = convert([trace], tmp_path / "ds")
    kernels = report(ds, "kernels").set_index("name")
    assert dict(kernels["count"]) == {"sgemm_32x32": 2, "elementwise_kernel": 1,
                                      "Memcpy HtoD (Pageable -> Device)": 2, "Memset (Device)": 1}
    assert report(ds, "launch").kernels[0] == 6
    # the flows are Kineto's flows from calls to work
    pq = need("pyarrow.parquet")
    flows = pq.read_table(ds / "flows").to_pylist()
    assert len(flows) == 12
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))
    # HTA pairs cudaLaunchKernel and cudaMemcpyAsync: every call here
    assert len(report(ds, "launch", hta=True)) == 1


# ---- what HTA's view takes as device work ------------------------------------

def test_rocm_runtime_calls_are_not_device_work_in_the_hta_view(tmp_path):
    """ROCm's Kineto writes "stream": "0x0" on hipLaunchKernel and its
    other calls, which HTA does not read as a stream: they are not device
    work in HTA's view, a call over an RCCL kernel is no overlap, and each
    launch pairs with its kernel."""
    ev = []
    for i in range(4):
        ev.append(x("cuda_runtime", "hipLaunchKernel", 1000.0 + 100 * i, 5.5, 100, 100, correlation=70 + i,
                    stream="0x0"))
        ev.append(x("kernel", "Cijk_Ailk_Bljk_SB", 1020.0 + 100 * i, 40.0, 2, 1, correlation=70 + i, device=0,
                    stream=0))
    ev.append(x("kernel", "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 1500.0, 100.0, 2, 2,
                correlation=80, device=0, stream=1))
    # a launch call that lasts over the whole RCCL kernel: by its name computation, were it device work
    ev.append(x("cuda_runtime", "hipExtModuleLaunchKernel", 1490.0, 120.0, 100, 100, correlation=81, stream="0x0"))
    trace = write(tmp_path / "rocm.json", ev)
    ds = convert([trace], tmp_path / "ds")
    for hta in (False, True):
        kernels = report(ds, "kernels", hta=hta)
        assert not kernels.name.str.startswith("hip").any(), hta
        assert report(ds, "overlap", hta=hta).overlap_ratio[0] == 0, hta
        launch = report(ds, "launch", hta=hta)
        assert list(launch.kernels) == [4], hta
    events = __import__("devtrace.analysis", fromlist=["launch_events"]).launch_events(str(ds), hta=True)
    rows = events.to_pylist()
    assert {(r["launch"], r["kernel"]) for r in rows} == {("hipLaunchKernel", "Cijk_Ailk_Bljk_SB")}
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))


def event_sync_trace(path, device=True):
    """CUDA's synchronisations as Kineto writes them: a Stream Sync on the
    stream's row, an Event Sync and a Context Sync on stream -1."""
    dev = {"device": 0} if device else {}
    ev = [x("cuda_runtime", "cudaLaunchKernel", 990.0, 5.0, 100, 100, correlation=1),
          x("kernel", "k_a", 1000.0, 50.0, 0, 7, correlation=1, stream=7, **dev),
          x("cuda_runtime", "cudaLaunchKernel", 1040.0, 5.0, 100, 100, correlation=2),
          x("kernel", "k_b", 1100.0, 60.0, 0, 7, correlation=2, stream=7, **dev),
          x("cuda_runtime", "cudaMemcpyAsync", 1060.0, 5.0, 100, 100, correlation=3),
          x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 1170.0, 20.0, 0, 7, correlation=3, stream=7, **dev),
          x("cuda_runtime", "cudaStreamSynchronize", 1070.0, 130.0, 100, 100, correlation=4),
          x("cuda_sync", "Stream Sync", 1165.0, 30.0, 0, 7, correlation=4, stream=7, **dev),
          x("cuda_runtime", "cudaEventSynchronize", 1200.0, 60.0, 100, 100, correlation=5),
          x("cuda_sync", "Event Sync", 1205.0, 55.0, 0, 7, correlation=5, stream=-1, **dev),
          x("cuda_sync", "Context Sync", 1262.0, 10.0, 0, 7, correlation=6, stream=-1, **dev)]
    return write(path, ev)


def test_stream_minus_one_is_not_device_work(tmp_path):
    trace = event_sync_trace(tmp_path / "sync.json")
    ds = convert([trace], tmp_path / "ds")
    temporal = report(ds, "temporal", hta=True).iloc[0]
    # from k_a's start to the Stream Sync's end, without the syncs on stream -1
    assert temporal.span_ns == 195_000
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))


def test_work_without_a_device_arg_is_in_temporal(tmp_path):
    """temporal is per device; work whose device the trace does not say is
    a device of its own (null), in both views, as kernels has it."""
    trace = event_sync_trace(tmp_path / "nodevice.json", device=False)
    ds = convert([trace], tmp_path / "ds")
    for hta in (False, True):
        temporal = report(ds, "temporal", hta=hta)
        kernels = report(ds, "kernels", hta=hta)
        assert len(temporal) == 1 and temporal.device.isna().all(), hta
        assert temporal.compute_ns[0] == kernels[kernels["class"] == "computation"].total_ns.sum(), hta
    t = report(ds, "temporal").iloc[0]
    assert (t.span_ns, t.compute_ns, t.memory_ns, t.idle_ns) == (190_000, 110_000, 20_000, 60_000)
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))


def test_hta_view_kernels_leave_syncs_out_and_launch_pairs_work_only(tmp_path):
    """HTA's kernel breakdown has computation, communication and memory;
    its "other" (syncs) is in the temporal breakdown only. A sync call is no
    launch of device work."""
    trace = event_sync_trace(tmp_path / "sync.json")
    ds = convert([trace], tmp_path / "ds")
    kernels = report(ds, "kernels", hta=True)
    assert set(kernels["class"]) == {"computation", "memory"}
    assert sorted(kernels.name) == ["Memcpy DtoH (Device -> Pinned)", "k_a", "k_b"]
    assert kernels.share.sum() == pytest.approx(1)
    from devtrace.analysis import launch_events
    for hta in (False, True):
        rows = launch_events(str(ds), hta=hta).to_pylist()
        assert sorted(r["launch"] for r in rows) == ["cudaLaunchKernel", "cudaLaunchKernel", "cudaMemcpyAsync"]
    analysis = hta_analysis([trace], tmp_path)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    assert sorted(hta_k.name) == sorted(kernels.name)
    compare_with_hta([trace], ds, analysis)


# ---- where HTA differs, and devtrace is right ---------------------------------

def test_epoch_microseconds_hta_loses_the_nanoseconds(tmp_path):
    """HTA reads ts and dur as float64 microseconds: at epoch times (1.7e15
    us) a double holds a quarter of a microsecond, and HTA's rounding of
    each start up and end down to a whole microsecond then takes a start of
    N.05 as N and an end of N.95 as N+1. devtrace rounds the exact
    nanoseconds. HTA's numbers are those of the float64 rounding, event by
    event; devtrace's those of the exact one."""
    base = 1712195495519000
    ev, spans = [], []
    for i in range(10):
        s = "%d.%03d" % (base + 100 * i, (50, 950, 420)[i % 3])
        d = "%d.%03d" % (37 + i, (900, 50, 580)[i % 3])
        ev.append(x("cuda_runtime", "cudaLaunchKernel", float(s) - 20, 3.0, 100, 100, correlation=i + 1))
        ev.append(x("kernel", "k%d" % (i % 2), float(s), float(d), 0, 7, correlation=i + 1, device=0, stream=7))
        spans.append((s, d))
    trace = tmp_path / "ns.json"
    # the times as decimal text, with every nanosecond
    text = json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": ev})
    for (s, d), e in zip(spans, [e for e in ev if e["cat"] == "kernel"]):
        text = text.replace('"ts": %r, "dur": %r' % (e["ts"], e["dur"]), '"ts": %s, "dur": %s' % (s, d))
    trace.write_text(text)

    def rounded(exact):
        total = 0
        for s, d in spans:
            if exact:
                start, end = Fraction(s), Fraction(s) + Fraction(d)
            else:
                start, end = float(s), float(s) + float(d)
            total += math.floor(end) - math.ceil(start)
        return total

    exact_us, float_us = rounded(True), rounded(False)
    assert exact_us != float_us
    ds = convert([trace], tmp_path / "ds")
    ours = report(ds, "kernels", hta=True)
    assert ours.total_ns.sum() == exact_us * 1000
    analysis = hta_analysis([trace], tmp_path)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=100)
    assert hta_k["sum (us)"].sum() == float_us


def test_a_cpu_op_with_a_stream_is_no_kernel(tmp_path):
    """torch.compile's CPU operators can carry a stream arg: HTA counts them
    as GPU kernels (a 94 us one in HTA's triton example); devtrace does not."""
    ev = [x("cuda_runtime", "cudaLaunchKernel", 1000.0, 5.0, 100, 100, correlation=1),
          x("kernel", "triton_poi_fused_add_0", 1010.0, 4.0, 0, 7, correlation=1, device=0, stream=7),
          x("cpu_op", "triton_poi_fused_add_0", 990.0, 94.0, 100, 101, stream=7, grid=[1, 1, 1])]
    trace = write(tmp_path / "triton.json", ev)
    ds = convert([trace], tmp_path / "ds")
    ours = report(ds, "kernels", hta=True)
    assert list(ours["count"]) == [1] and list(ours.total_ns) == [4000]
    analysis = hta_analysis([trace], tmp_path)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False)
    assert list(hta_k["sum (us)"]) == [98.0]  # the kernel's 4 us and the operator's 94
    assert analysis.get_temporal_breakdown(visualize=False)["kernel_time(us)"][0] == 94
    assert report(ds, "temporal", hta=True).span_ns[0] == 4000


def test_the_last_step_is_the_host_s(tmp_path):
    """HTA drops work launched from the last ProfilerStep's start, taking the
    latest ProfilerStep of any category: a device-side one (Kineto's
    gpu_user_annotation, which starts later) moves HTA's cut. devtrace's is
    the host step's start."""
    ev = [x("user_annotation", "ProfilerStep#1", 1000.0, 1000.0, 100, 100),
          x("user_annotation", "ProfilerStep#2", 2000.0, 1000.0, 100, 100),
          x("gpu_user_annotation", "ProfilerStep#2", 2500.0, 1000.0, 0, 7)]
    for i, host in enumerate((1100.0, 2100.0, 2600.0)):
        launched(ev, "cuda_runtime", "cudaLaunchKernel", "kernel", "k", host, host + 400.0, 50.0, i + 1,
                 device=0, stream=7)
    trace = write(tmp_path / "steps.json", ev)
    ds = convert([trace], tmp_path / "ds")
    assert list(report(ds, "kernels")["count"]) == [3]
    assert list(report(ds, "kernels", hta=True)["count"]) == [1]  # launched before 2000
    analysis = hta_analysis([trace], tmp_path)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False)
    assert list(hta_k["name"]) == ["k"] and list(hta_k["sum (us)"]) == [100.0]  # before 2500: two


def test_work_inside_one_microsecond_covers_nothing(tmp_path):
    """On HTA's axis (start rounded up, end down) work that lies inside one
    microsecond has a negative length; HTA's merge of intervals counts a
    lone one as -1 us of busy time (32 of them in HTA's MTIA inference
    trace), devtrace as covering nothing."""
    ev = []
    for i in range(5):
        launched(ev, "cuda_runtime", "cudaLaunchKernel", "kernel", "gemm", 1000.0 + 100 * i, 1010.0 + 100 * i, 20.0,
                 i + 1, device=0, stream=7)
        # 0.4 us inside [1040.2, 1040.6]: on HTA's axis [1041, 1040]
        launched(ev, "cuda_runtime", "cudaLaunchKernel", "kernel", "event_record", 1001.0 + 100 * i,
                 1040.2 + 100 * i, 0.4, 10 + i, device=0, stream=7)
    trace = write(tmp_path / "tiny.json", ev)
    ds = convert([trace], tmp_path / "ds")
    ours = report(ds, "temporal", hta=True).iloc[0]
    assert ours.compute_ns == 5 * 20_000
    kernels = report(ds, "kernels", hta=True).set_index("name")
    assert kernels.loc["event_record", "total_ns"] == -5000  # as HTA's own kernel breakdown has it
    analysis = hta_analysis([trace], tmp_path)
    hta_t = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    assert int(hta_t["compute_time(us)"]) == 5 * 20 - 5
    assert int(hta_t["idle_time(us)"]) * 1000 == ours.idle_ns + 5000


def test_the_last_step_rule_is_per_rank(tmp_path):
    """HTA applies its last-step rule when the job's traces name two
    ProfilerSteps or more, counting the names over every rank: a rank that
    holds one step then loses the work launched in it. devtrace applies it
    per rank, to a rank with two steps or more."""
    paths = []
    for rank, steps in ((0, (1, 2)), (1, (2,))):
        ev = [x("user_annotation", "ProfilerStep#%d" % n, 1000.0 * n, 1000.0, 100, 100) for n in steps]
        for i, n in enumerate(steps):
            launched(ev, "cuda_runtime", "cudaLaunchKernel", "kernel", "k", 1000.0 * n + 100, 1000.0 * n + 200, 50.0,
                     i + 1, device=0, stream=7)
        paths.append(write(tmp_path / ("rank%d.json" % rank), ev, rank=rank))
    ds = convert(paths, tmp_path / "ds")
    ours = report(ds, "kernels", hta=True).set_index("rank")
    assert (ours.loc[0, "count"], ours.loc[1, "count"]) == (1, 1)
    analysis = hta_analysis(paths, tmp_path)
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False)
    assert list(hta_k["rank"]) == [0]  # rank 1's one kernel is gone
