"""devtrace convert / analyze: the Parquet dataset holds what the trace
holds, the reports agree with HTA 0.5 where it computes the same thing
(docs/analysis.md says how they relate where not), DuckDB and a Dask cluster
give the same rows, and collectives count as communication on every vendor."""

import json

import pytest

from conftest import (DEVTRACE, EMU_RUN, FIXTURES, MSPTI_EMU, SOURCE, compare_with_hta, convert, hta_analysis,
                      kineto_trace, load_trace, need, report, run)

REPORTS = ["kernels", "temporal", "overlap", "idle", "steps", "launch"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("synthetic")
    paths = []
    for r in range(4):
        p = d / ("rank%d.json" % r)
        p.write_text(json.dumps(kineto_trace(r, 5, slow=3 if r == 2 else None)))
        paths.append(p)
    others = [3 if r == 2 else None for r in range(4)]
    assert others.count(3) == 1
    return paths, convert(paths, d / "ds")


def test_convert_keeps_every_event_and_its_values(synthetic, tmp_path):
    pq = need("pyarrow.parquet")
    paths, ds = synthetic
    traces = pq.read_table(ds / "traces.parquet").to_pylist()
    assert [(t["rank"], t["rank_from"]) for t in traces] == [(r, "distributedInfo") for r in range(4)]
    for r, p in enumerate(paths):
        src = load_trace(p)["traceEvents"]
        events = pq.read_table(ds / "events" / ("rank=%d" % r)).to_pylist()
        flows = pq.read_table(ds / "flows" / ("rank=%d" % r)).to_pylist()
        assert len(events) + len(flows) == len(src)
        kernels = [e for e in src if e["cat"] == "kernel"]
        rows = [e for e in events if e["kind"] == "kernel"]
        assert [(round(k["ts"] * 1000), round(k["dur"] * 1000), k["name"], k["args"]["stream"],
                 k["args"]["correlation"], k["args"]["grid"], k["args"]["block"]) for k in kernels] == \
            [(e["ts"], e["dur"], e["name"], e["stream"], e["correlation"], [e["grid_x"], e["grid_y"], e["grid_z"]],
              [e["block_x"], e["block_y"], e["block_z"]]) for e in rows]
        assert sorted(f["flow_id"] for f in flows) == sorted(e["id"] for e in src if e["ph"] in ("s", "f"))


def test_small_row_groups_give_the_same_rows(synthetic, tmp_path):
    """Batches of 7 rows (fewer than the kinds, a string dictionary per
    batch, many row groups) hold what the default batches hold."""
    pq = need("pyarrow.parquet")
    paths, ds = synthetic
    res = run([DEVTRACE, "convert", "--rows", "7", *paths, "-o", tmp_path / "small"])
    assert res.returncode == 0, res.stderr
    for table in ("events", "flows"):
        a = pq.read_table(ds / table).to_pylist()
        b = pq.read_table(tmp_path / "small" / table).to_pylist()
        assert a == b and len(a) > 7
    assert pq.ParquetFile(next((tmp_path / "small" / "events" / "rank=0").iterdir())).num_row_groups > 5


def test_convert_refuses_a_broken_trace_and_leaves_nothing(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text(json.dumps(kineto_trace(0, 2))[:-40])
    res = run([DEVTRACE, "convert", "--to", "parquet", bad, "-o", tmp_path / "ds"])
    assert res.returncode == 1
    assert "cut.json" in res.stderr and "Traceback" not in res.stderr
    assert not list((tmp_path / "ds").rglob("*.parquet*"))


def test_two_traces_of_one_rank_are_refused(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps(kineto_trace(1, 2)))
    q = tmp_path / "b.json"
    q.write_text(json.dumps(kineto_trace(1, 2)))
    res = run([DEVTRACE, "convert", p, q, "-o", tmp_path / "ds"])
    assert res.returncode == 1 and "both hold rank 1" in res.stderr


def test_analyze_without_the_package_says_what_to_install(synthetic, tmp_path):
    # a Python that has no devtrace package (none at all, here)
    res = run([DEVTRACE, "analyze", synthetic[1]], env={"DEVTRACE_PYTHON": str(tmp_path / "no-python")})
    assert res.returncode == 2
    assert "pip install 'devtrace[analysis]'" in res.stderr and "no-python" in res.stderr


def test_stragglers_against_the_other_ranks(synthetic):
    steps = report(synthetic[1], "steps")
    assert len(steps) == 4 * 5
    flagged = steps[steps.straggler]
    assert [(r.rank, r.step) for r in flagged.itertuples()] == [(2, 3)]
    row = flagged.iloc[0]
    # the others spent their wait in the all-reduce
    assert row.others_waited_in.startswith("ncclDevKernel_AllReduce")
    assert row.others_wait_ns == 1_500_000
    # ranks 0, 1 and 3 took 10.00, 10.01 and 10.03 ms
    assert row.step_ns == 13_020_000 and row.others_median_ns == 10_010_000
    assert row.excess == pytest.approx(13_020_000 / 10_010_000 - 1)
    kernels = report(synthetic[1], "kernels")
    assert set(kernels[kernels.name.str.startswith("nccl")]["class"]) == {"communication"}


def test_step_times_come_from_profiler_steps(synthetic):
    steps = report(synthetic[1], "steps")
    assert {(r.rank, r.step_ns) for r in steps.itertuples() if (r.rank, r.step) != (2, 3)} == \
        {(r, 10_000_000 + 10_000 * r) for r in range(4)}
    assert sorted(set(steps.step)) == [0, 1, 2, 3, 4]


def test_formats_and_plots(synthetic, tmp_path):
    need("matplotlib")
    ds = synthetic[1]
    res = run([DEVTRACE, "analyze", ds, "--report", "overlap", "--format", "json"])
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["rank"] for r in rows] == [0, 1, 2, 3]
    res = run([DEVTRACE, "analyze", ds, "--report", "temporal", "--format", "csv"])
    assert res.returncode == 0 and res.stdout.splitlines()[0].startswith("rank,device,span_ns")
    res = run([DEVTRACE, "analyze", ds, "--report", "all", "--format", "parquet", "-o", tmp_path / "out",
               "--plot", tmp_path / "png"])
    assert res.returncode == 0, res.stderr
    every = REPORTS + ["critical_path", "critical_steps", "queue", "memory", "bandwidth", "ops", "annotations",
                       "sequences"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(n + ".parquet" for n in every)
    for png in ("steps.png", "kernels.png", "temporal.png"):
        assert (tmp_path / "png" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = run([DEVTRACE, "analyze", ds, "--report", "nosuch"])
    assert res.returncode == 2 and "unknown report" in res.stderr


def test_dask_gives_the_same_rows_as_duckdb(synthetic):
    need("dask.distributed")
    from devtrace.analysis import Dask, report as rep
    ds = str(synthetic[1])
    with Dask(workers=2) as cluster:
        for name in REPORTS:
            for hta in (False, True):
                a = rep(ds, name, hta=hta)
                b = rep(ds, name, engine="dask", dask=cluster, hta=hta)
                assert a.equals(b), name
        # a scheduler given by its address: the cluster's own
        res = run([DEVTRACE, "analyze", ds, "--report", "kernels", "--engine", "dask", "--scheduler",
                   cluster.cluster.scheduler_address, "--format", "csv"], timeout=300)
        assert res.returncode == 0, res.stderr
        assert res.stdout == run([DEVTRACE, "analyze", ds, "--report", "kernels", "--format", "csv"]).stdout
    res = run([DEVTRACE, "analyze", ds, "--report", "steps", "--engine", "dask", "--format", "csv"], timeout=300)
    assert res.returncode == 0, res.stderr
    res2 = run([DEVTRACE, "analyze", ds, "--report", "steps", "--format", "csv"])
    assert res.stdout == res2.stdout


def test_covered_time_is_exact_on_overlapping_nested_and_repeated_work(tmp_path):
    """Device work that overlaps across streams, nests, repeats exactly and
    touches end to start: temporal's busy and per-class times and overlap's
    overlapped time are the lengths of the unions and of their intersection,
    to the nanosecond."""
    # (name, stream, start us, end us): communication [0,100) [50,150)
    # [150,160) touching, computation [80,120) [90,100) nested, [140,200)
    # twice, [300,400), memory [390,410)
    work = [("ncclDevKernel_AllReduce", 20, 0, 100), ("ncclDevKernel_AllReduce", 21, 50, 150),
            ("ncclDevKernel_AllReduce", 20, 150, 160),
            ("gemm", 7, 80, 120), ("relu", 8, 90, 100), ("gemm", 7, 140, 200), ("gemm", 8, 140, 200),
            ("gemm", 7, 300, 400), ("Memcpy HtoD (Pageable -> Device)", 9, 390, 410)]
    ev = []
    for i, (name, stream, s, e) in enumerate(work):
        ev.append({"ph": "X", "cat": "kernel" if not name.startswith("Memcpy") else "gpu_memcpy", "name": name,
                   "pid": 0, "tid": stream, "ts": 1000.0 + s, "dur": float(e - s),
                   "args": {"device": 0, "stream": stream, "correlation": i + 1}})
    t = tmp_path / "w.json"
    t.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": ev}))
    ds = convert([t], tmp_path / "ds")
    temporal = report(ds, "temporal").iloc[0]
    us = 1000
    # union of all: [0,200) and [300,410)
    assert temporal.span_ns == 410 * us and temporal.idle_ns == 100 * us
    assert temporal.communication_ns == 160 * us          # [0,160)
    assert temporal.compute_ns == (40 + 60 + 100) * us     # [80,120) [140,200) [300,400)
    assert temporal.memory_ns == 20 * us
    overlap = report(ds, "overlap").iloc[0]
    assert overlap.communication_ns == 160 * us
    assert overlap.overlapped_ns == (40 + 20) * us          # [80,120) and [140,160)


def test_a_memory_limit_gives_the_same_rows_on_fewer_threads(synthetic):
    """Under --memory-limit DuckDB spills rather than hold more; below its
    125 MB a thread it runs fewer threads (a sort or join could fail rather
    than spill), and the reports are the same rows."""
    need("duckdb")
    from devtrace.analysis import _engine
    import os
    for limit, threads in (("64MB", 1), ("300MB", 2), ("1GiB", 8)):
        con = _engine._connect(limit)
        got = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        con.close()
        assert got == min(threads, os.cpu_count()), (limit, got)
    for name in REPORTS:
        limited = report(synthetic[1], name, memory_limit="64MB")
        assert limited.equals(report(synthetic[1], name)), name
    res = run([DEVTRACE, "analyze", synthetic[1], "--report", "temporal", "--memory-limit", "64MB"])
    assert res.returncode == 0, res.stderr


# ---- HTA 0.5 on the same traces ----

@pytest.mark.parametrize("traces", [
    ["trace_filter-sampled_rank-0.json.gz", "trace_filter-sampled_rank-1.json.gz"],  # A100, NCCL, 2 ranks
    ["amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"],
    ["critical_path-alexnet.json.gz"],
])
def test_real_traces_agree_with_hta(traces, tmp_path):
    paths = [FIXTURES / t for t in traces]
    ds = convert(paths, tmp_path / "ds")
    compare_with_hta(paths, ds, hta_analysis(paths, tmp_path))


def test_synthetic_traces_agree_with_hta(synthetic, tmp_path):
    paths, ds = synthetic
    compare_with_hta(paths, ds, hta_analysis(paths, tmp_path))


# ---- devtrace's own traces: torchrun ranks on the MSPTI emulator ----

@pytest.fixture(scope="module")
def mspti_job(tmp_path_factory):
    need("torch")
    d = tmp_path_factory.mktemp("mspti")
    res = run([DEVTRACE, "record", "-o", d / "job.json", "--",
               "torchrun", "--nproc_per_node=4", "--no-python", "--master_port=0",
               EMU_RUN, "--quiet", SOURCE / "examples" / "allreduce_step.scn"],
              env={"DEVTRACE_MSPTI_LIBRARY": str(MSPTI_EMU)}, timeout=300, cwd=d)
    assert res.returncode == 0, res.stderr
    ranks = [d / ("job.rank%d.json" % r) for r in range(4)]
    assert all(p.exists() for p in ranks), res.stderr
    return ranks


def test_hccl_collectives_count_as_communication(mspti_job, tmp_path):
    ds = convert(mspti_job, tmp_path / "ds")
    kernels = report(ds, "kernels")
    comm = kernels[kernels["class"] == "communication"]
    # the scenario's two all-reduces of 400 us on each rank
    assert sorted(comm["rank"]) == [0, 1, 2, 3]
    assert set(comm.name) == {"hcom_allReduce_"} and set(comm["count"]) == {2}
    # 800 us of the emulated device's clock, on the host's: through each
    # rank's clock fit (its slope, and a nanosecond of rounding a kernel)
    pq = need("pyarrow.parquet")
    slope = {t["rank"]: json.loads(t["clock"])["slope"] for t in pq.read_table(ds / "traces.parquet").to_pylist()}
    assert all(abs(row.total_ns - 800_000 * slope[row.rank]) <= 2 for row in comm.itertuples()), \
        (list(comm.total_ns), slope)
    overlap = report(ds, "overlap")
    assert list(overlap.communication_ns) == list(comm.sort_values("rank").total_ns)
    assert all(0 <= r <= 1 for r in overlap.overlap_ratio)
    # HTA, by its "nccl" names, sees no communication at all: its overlap is
    # NaN and the all-reduces are computation, which docs/analysis.md states
    analysis = hta_analysis(mspti_job, tmp_path)
    assert analysis.get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"].isna().all()
    _, hta_k = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=100)
    hcom = hta_k[hta_k.name == "hcom_allReduce_"]
    assert set(hcom.kernel_type) == {"COMPUTATION"}
    # in HTA's whole microseconds (start up, end down), the same time
    ours = report(ds, "kernels", hta=True)
    ours = ours[ours.name == "hcom_allReduce_"].set_index("rank")
    for row in hcom.itertuples():
        assert ours.loc[row.rank, "total_ns"] == row._2 * 1000


def test_merged_trace_converts_to_its_ranks(mspti_job, tmp_path):
    pq = need("pyarrow.parquet")
    merged = tmp_path / "merged.json"
    res = run([DEVTRACE, "merge", "-o", merged, *mspti_job])
    assert res.returncode == 0, res.stderr
    one = convert([merged], tmp_path / "one")
    each = convert(mspti_job, tmp_path / "each")
    traces = pq.read_table(one / "traces.parquet").to_pylist()
    assert [(t["rank"], t["rank_from"]) for t in traces] == [(r, "merged") for r in range(4)]
    for name in ("kernels", "overlap", "temporal"):
        a, b = report(one, name), report(each, name)
        assert a.drop(columns=[c for c in a.columns if c == "device"]).equals(
            b.drop(columns=[c for c in b.columns if c == "device"])), name


def test_devtrace_traces_of_two_ranks_agree_with_hta(tmp_path):
    """devtrace's own traces (two torchrun ranks on the TOPSPTI emulator),
    in HTA's view: the same numbers as HTA's."""
    need("torch")
    from conftest import BUILD
    res = run([DEVTRACE, "record", "-o", tmp_path / "job.json", "--",
               "torchrun", "--nproc_per_node=2", "--no-python", "--master_port=0",
               EMU_RUN, "--quiet", SOURCE / "examples" / "train_step.scn"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(BUILD / "emu" / "libtopspti.so")}, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    ranks = [tmp_path / ("job.rank%d.json" % r) for r in range(2)]
    ds = convert(ranks, tmp_path / "ds")
    compare_with_hta(ranks, ds, hta_analysis(ranks, tmp_path))


# ---- the step column ----

def test_step_column_gives_each_event_its_enclosing_step(tmp_path):
    """Host events take the ProfilerStep range their start lies in, on their
    rank; device work the step of its launch call (by correlation, else the
    operator with its External id), wherever it ran. The trace lists the
    steps after their contents, and two ranks (as merged) use the same
    correlations."""
    pq = need("pyarrow.parquet")
    moved = 1 << 23  # a merged trace moves rank 1's pids by 2^23

    def x(name, cat, ts, dur, pid=10, tid=10, **args):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
        if args:
            e["args"] = {{"ext": "External id"}.get(k, k): v for k, v in args.items()}
        return e

    ev = [
        x("aten::before", "cpu_op", 500.0, 10.0),                               # before any step: none
        x("aten::mm", "cpu_op", 1500.0, 100.0, ext=76),                         # step 5
        x("cudaLaunchKernel", "cuda_runtime", 1600.0, 5.0, correlation=11),     # step 5
        x("gemm", "kernel", 2100.0, 50.0, pid=0, tid=7, device=0, stream=7, correlation=11),  # launched in 5
        x("aten::add", "cpu_op", 2500.0, 20.0, ext=77),                         # step 6
        x("add_kernel", "kernel", 3100.0, 5.0, pid=0, tid=7, device=0, stream=7, ext=77),    # by External id: 6
        x("orphan", "kernel", 1200.0, 5.0, pid=0, tid=7, device=0, stream=7, correlation=99),  # no launch: none
        {"ph": "i", "cat": "cpu_instant_event", "name": "at_end", "pid": 10, "tid": 10, "ts": 3000.0, "s": "t"},
        x("ProfilerStep#6", "user_annotation", 2000.0, 1000.0),
        x("ProfilerStep#5", "user_annotation", 1000.0, 1000.0),
        # rank 1: its own step 0 over the same times, and correlation 11 launched there
        x("ProfilerStep#0", "user_annotation", 1000.0, 3000.0, pid=moved + 10),
        x("cudaLaunchKernel", "cuda_runtime", 3500.0, 5.0, pid=moved + 10, correlation=11),
        x("gemm", "kernel", 3600.0, 50.0, pid=moved, tid=7, device=0, stream=7, correlation=11),
        x("aten::late", "cpu_op", 4000.0, 5.0, pid=moved + 10),                 # at the step's end: none
    ]
    path = tmp_path / "merged.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    ds = convert([path], tmp_path / "ds")
    steps = {}
    for r in (0, 1):
        for e in pq.read_table(ds / "events" / ("rank=%d" % r)).to_pylist():
            steps[(r, e["name"])] = e["step"]
    assert steps == {
        (0, "aten::before"): None, (0, "aten::mm"): 5, (0, "cudaLaunchKernel"): 5, (0, "gemm"): 5,
        (0, "aten::add"): 6, (0, "add_kernel"): 6, (0, "orphan"): None, (0, "at_end"): None,
        (0, "ProfilerStep#6"): 6, (0, "ProfilerStep#5"): 5,
        (1, "ProfilerStep#0"): 0, (1, "cudaLaunchKernel"): 0, (1, "gemm"): 0, (1, "aten::late"): None,
    }
    meta = json.loads(pq.read_table(ds / "traces.parquet").to_pylist()[0]["metadata"])
    assert (meta["steps"], meta["deviceWorkWithoutLaunch"]) == (3, 1)
    # --no-steps: one pass, no step
    res = run([DEVTRACE, "convert", "--no-steps", path, "-o", tmp_path / "one"])
    assert res.returncode == 0, res.stderr
    assert pq.read_table(tmp_path / "one" / "events").column("step").null_count == len(ev)


# ---- Perfetto input ----

# A scenario per backend: TOPSPTI's kernels have a launch configuration,
# MSPTI's collectives a name and a communicator.
PERFETTO_SCENARIOS = {
    "topspti": (
        "vendor topspti\ndevices 1\nthread \"w\" {\n  repeat 3 {\n"
        "    kernel device=0 stream=1 name=\"k1\" grid=4,3,1 block=2,1,5 dur_us=10\n"
        "    kernel device=0 stream=1 name=\"k2\" grid=4,3,1 block=2,1,5 dur_us=7\n"
        "    memcpy device=0 stream=2 kind=htod bytes=4096 dur_us=5\n"
        "  }\n  sync device=0\n}\n"),
    "mspti": (
        "vendor mspti\ndevices 1\nthread \"w\" {\n  repeat 2 {\n"
        "    kernel device=0 stream=1 name=\"MatMulV2\" dur_us=10\n"
        "    collective device=0 stream=3 name=\"hcom_allReduce_\" group=\"hccl_world_group\" count=1024 "
        "dtype=fp32 dur_us=20\n"
        "  }\n  sync device=0\n}\n"),
}
PERFETTO_COLUMNS = ("kind", "name", "correlation", "device", "stream", "bytes", "grid_x", "grid_y", "grid_z",
                    "block_x", "block_y", "block_z", "collective", "process_group")


@pytest.mark.parametrize("backend", sorted(PERFETTO_SCENARIOS))
def test_perfetto_trace_converts_to_the_rows_of_its_json(backend, tmp_path):
    """One emulated scenario recorded as JSON and as Perfetto: the same
    events with the same values (launch configurations, collectives and
    their process groups included), device durations within the 1 ns that
    each recording's own clock fit may take."""
    pq = need("pyarrow.parquet")
    from conftest import BUILD
    emu = BUILD / "emu" / ("lib%s.so" % backend)
    scenario = tmp_path / "s.scn"
    scenario.write_text(PERFETTO_SCENARIOS[backend])
    rows = {}
    for fmt, path in (("json", tmp_path / "t.json"), ("perfetto", tmp_path / "t.pftrace")):
        res = run([DEVTRACE, "record", "--backend", backend, "--format", fmt, "-o", path, "--",
                   EMU_RUN, "--quiet", "--library", emu, scenario],
                  env={"DEVTRACE_%s_LIBRARY" % backend.upper(): str(emu)})
        assert res.returncode == 0, res.stderr
        ds = convert([path], tmp_path / ("ds-" + fmt))
        meta = json.loads(pq.read_table(ds / "traces.parquet").to_pylist()[0]["metadata"])
        assert (meta["format"], meta["backend"]) == (fmt, backend)
        rows[fmt] = sorted(((tuple(e[c] for c in PERFETTO_COLUMNS),
                             e["dur"] if e["kind"] in ("kernel", "memcpy") else None)
                            for e in pq.read_table(ds / "events").to_pylist()
                            if e["ph"] == "X" and e["kind"] != "trace"),
                           key=lambda r: tuple((v is not None, v) for v in r[0]))
    assert [r[0] for r in rows["perfetto"]] == [r[0] for r in rows["json"]]
    for j, p in zip(rows["json"], rows["perfetto"]):
        assert j[1] is None or abs(j[1] - p[1]) <= 1, (j, p)
    device = [r[0] for r in rows["json"] if r[0][0] == "kernel"]
    if backend == "topspti":
        assert len(rows["json"]) == 3 * 3 * 2 + 2  # a launch call and its work, and the two syncs
        assert {r[6:14] for r in device} == {(4, 3, 1, 2, 1, 5, None, None)}
    else:
        assert sorted((r[1], r[12:14]) for r in device) == \
            [("MatMulV2", (None, None))] * 2 + [("hcom_allReduce_", ("hcom_allReduce_", "hccl_world_group"))] * 2


# ---- torch.profiler traces written with devtrace's Kineto plugin ----

def test_plugin_traces_agree_with_hta(tmp_path):
    """A model step under torch.profiler with devtrace.torch on the TOPSPTI
    emulator (custom ops launching kernels, copies and fills; one thread, so
    one device, where HTA's per-rank temporal breakdown is devtrace's per
    device): in HTA's view, the same numbers as HTA's."""
    need("torch")
    pq = need("pyarrow.parquet")
    import sys
    from conftest import BUILD
    emu = BUILD / "emu" / "libtopspti.so"
    out = tmp_path / "workload"
    res = run([sys.executable, SOURCE / "tests" / "integration" / "torch_workload.py", "--emulator", emu,
               "--backend", "topspti", "--out", out, "--threads", "1"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(emu)}, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    trace = out / "trace.json"
    ds = convert([trace], tmp_path / "ds")
    compare_with_hta([trace], ds, hta_analysis([trace], tmp_path))
    # the plugin's device work, each linked to its launch call
    events = pq.read_table(ds / "events").to_pylist()
    calls = {e["correlation"] for e in events if e["kind"] == "runtime"}
    work = [e for e in events if e["kind"] in ("kernel", "memcpy", "memset")]
    assert work and all(e["correlation"] in calls for e in work)
