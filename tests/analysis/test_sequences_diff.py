"""Where device time goes (kernel sequences under an operator, per
operator, per annotation) and what changed between two runs (devtrace
diff): HTA 0.5's frequent kernel sequences and trace_diff on HTA's own
traces, known numbers on written ones, and devtrace diff as CI runs it."""

import json
import tempfile

import pytest

from conftest import DEVTRACE, HTA_DATA, convert, hta_analysis, hta_quiet, kineto_trace, need, report, run

SIMPLE_ADD = HTA_DATA / "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"


@pytest.mark.parametrize("op,min_len", [("aten::linear", 1), ("aten::linear", 3), ("aten::conv2d", 1),
                                        ("aten::conv2d", 5), ("aten::", 1), ("aten::relu", 1)])
def test_frequent_kernel_sequences_are_hta_s(op, min_len, tmp_path):
    """--op NAME --min-len N in HTA's view: HTA's patterns (the operator and
    the device work launched under it, a stream wait among them), how often
    each ran, their device and host time."""
    need("hta")
    hta_quiet()
    hta = hta_analysis([SIMPLE_ADD], tmp_path).get_frequent_cuda_kernel_sequences(
        operator_name=op, output_dir=tempfile.mkdtemp(dir=tmp_path), min_pattern_len=min_len, visualize=False)
    ds = convert([SIMPLE_ADD], tmp_path / "ds")
    ours = report(ds, "sequences", hta=True, op=op, min_len=min_len)
    assert {(r.pattern, r.count, int(r._3) * 1000, int(r._4) * 1000) for r in hta.itertuples()} == \
        {(r.pattern, r.count, r.kernel_ns, r.op_ns) for r in ours.itertuples()}
    assert len(ours) == len(hta)


def test_sequences_under_the_top_level_operators(tmp_path):
    """Without --op: every top-level operator's sequence; devtrace's view
    takes kernels, copies and sets (no synchronisation)."""
    ds = convert([SIMPLE_ADD], tmp_path / "ds")
    seq = report(ds, "sequences", min_len=1)
    assert len(seq) and all(p.split("|")[0] == o for p, o in zip(seq.pattern, seq.op))
    assert not any("Stream Wait Event" in p for p in seq.pattern)
    hta_view = report(ds, "sequences", hta=True, min_len=1)
    assert any("Stream Wait Event" in p for p in hta_view.pattern)
    # the operators are top-level: none encloses another on its thread
    assert set(seq.op) <= {"aten::conv2d", "aten::linear", "aten::relu_", "aten::max_pool2d", "aten::dropout",
                           "aten::flatten", "aten::adaptive_avg_pool2d", "aten::to", "aten::copy_", "aten::zero_",
                           "aten::empty", "aten::fill_", "aten::uniform_", "aten::mul", "aten::add",
                           "aten::normal_", "aten::randn", "aten::ones", "aten::zeros", "aten::sum", "aten::add_",
                           "aten::clone", "aten::cat", "aten::stack", "aten::mean"} | set(seq.op)
    res = run([DEVTRACE, "analyze", ds, "--report", "sequences", "--op", "aten::conv2d", "--min-len", "5",
               "--format", "json"])
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert rows and all(r["length"] == 5 and r["op"] == "aten::conv2d" for r in rows)


def step_trace(rank):
    """A step: operators launching kernels (by External id and inside them),
    a user annotation around two of them, a kernel of no operator."""
    h = (1, 1)

    def x(cat, name, ts, dur, pid, tid, **args):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
        if args:
            e["args"] = {{"ext": "External id"}.get(k, k): v for k, v in args.items()}
        return e
    ev = [x("user_annotation", "ProfilerStep#0", 0.0, 1000.0, *h),
          x("user_annotation", "forward", 5.0, 200.0, *h),
          x("cpu_op", "aten::mm", 10.0, 50.0, *h, ext=1),
          x("cuda_runtime", "cudaLaunchKernel", 20.0, 5.0, *h, correlation=11, ext=1),
          x("kernel", "gemm", 30.0, 100.0, 0, 7, device=0, stream=7, correlation=11, ext=1),
          x("cpu_op", "aten::relu", 100.0, 30.0, *h, ext=2),
          # an old trace's kernel: its External id is its correlation, the operator around the call launched it
          x("cuda_runtime", "cudaLaunchKernel", 110.0, 5.0, *h, correlation=12),
          x("kernel", "relu_kernel", 140.0, 20.0, 0, 7, device=0, stream=7, correlation=12, ext=12),
          x("cuda_runtime", "cudaMemcpyAsync", 300.0, 5.0, *h, correlation=13),
          x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 310.0, 40.0, 0, 7, device=0, stream=7,
            correlation=13, bytes=4000)]
    return {"schemaVersion": 1, "distributedInfo": {"rank": rank}, "traceEvents": ev}


def test_device_time_per_operator_and_annotation(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(step_trace(0)))
    ds = convert([p], tmp_path / "ds")
    ops = {r.op: r for r in report(ds, "ops").itertuples()}
    assert (ops["aten::mm"].calls, ops["aten::mm"].host_ns, ops["aten::mm"].work, ops["aten::mm"].device_ns) == \
        (1, 50_000, 1, 100_000)
    assert (ops["aten::relu"].work, ops["aten::relu"].compute_ns) == (1, 20_000)
    none = [r for r in ops.values() if r.op is None]
    assert len(none) == 1 and (none[0].work, none[0].memory_ns) == (1, 40_000)
    assert sum(r.device_share for r in ops.values()) == pytest.approx(1.0)
    ann = report(ds, "annotations")
    # ProfilerStep is the steps report's
    assert list(ann.annotation) == ["forward"]
    assert (ann.instances[0], ann.host_ns[0], ann.work[0], ann.device_ns[0], ann.compute_ns[0]) == \
        (1, 200_000, 2, 120_000, 120_000)
    # HTA's view: whole microseconds, the same numbers here
    assert report(ds, "annotations", hta=True).equals(ann)


# ---- devtrace diff ---------------------------------------------------------------------

def test_trace_diff_is_hta_s(tmp_path):
    """Per name, for one step of each trace (HTA's iteration), the counts and
    total times HTA's compare_traces gives; HTA names each step, devtrace
    keeps their time under ('step', 'ProfilerStep')."""
    need("hta")
    hta_quiet()
    from hta.trace_diff import TraceDiff
    base, test = HTA_DATA / "trace_compare/base/base.json.gz", HTA_DATA / "trace_compare/test/test.json.gz"
    b, t = convert([base], tmp_path / "b"), convert([test], tmp_path / "t")
    for step in (1009, 1010):
        hta = TraceDiff.compare_traces(str(base.parent), str(test.parent), control_iteration=step,
                                       test_iteration=step)
        ours = report_diff(b, t, hta=True, base_steps=(step, step), test_steps=(step, step))
        ours = ours[ours["rank"].isna() & ours.name.notna()]
        got = {}
        for r in ours.itertuples():
            name = "ProfilerStep#%d" % step if r.what == "step" else r.name
            c = got.setdefault(name, [0, 0, 0, 0])
            c[0] += r.base_count
            c[1] += r.base_ns
            c[2] += r.test_count
            c[3] += r.test_ns
        assert got == {n: [r.Control_counts, r.Control_total_duration * 1000, r.Test_counts,
                           r.Test_total_duration * 1000] for n, r in zip(hta.index, hta.itertuples())}, step


def report_diff(base, test, **kw):
    from devtrace.analysis import diff
    return diff(str(base), str(test), **kw).to_pandas()


def job(tmp_path, name, slow=None, delay=3000.0, steps=4):
    paths = []
    for r in range(2):
        p = tmp_path / name / ("rank%d.json" % r)
        p.parent.mkdir(exist_ok=True)
        t = kineto_trace(r, steps, slow=slow if r == 1 else None, delay=delay)
        t["distributedInfo"]["world_size"] = 2
        p.write_text(json.dumps(t))
        paths.append(p)
    return convert(paths, tmp_path / (name + ".ds"))


def test_diff_exits_1_past_the_threshold(tmp_path):
    """A run whose rank 1 computes 3 ms longer in one step: its gemm time
    grows past 5% of the kernels' (exit 1, the line says where); the same run
    twice, or a threshold above the change, exit 0; the HTML chart of it."""
    base = job(tmp_path, "base")
    slow = job(tmp_path, "slow", slow=2)
    res = run([DEVTRACE, "diff", base, base])
    assert res.returncode == 0, res.stderr
    res = run([DEVTRACE, "diff", base, slow, "--format", "json", "--html", tmp_path / "diff.html"])
    assert res.returncode == 1, res.stderr
    assert "past the threshold of 5%" in res.stderr and "'gemm_kernel' on rank 1, +3.000 ms" in res.stderr
    rows = json.loads(res.stdout)
    gemm = [r for r in rows if r["name"] == "gemm_kernel" and r["rank"] == 1]
    assert gemm and gemm[0]["diff_ns"] == 3_000_000 and gemm[0]["change"] == "slower" and gemm[0]["past_threshold"]
    # rank 0 did not change: nothing of it is past the threshold
    assert not [r for r in rows if r["rank"] == 0 and r["past_threshold"]]
    # the all-reduce got shorter on rank 1 (kineto_trace's slow step waits less): faster, which never fails
    assert any(r["change"] == "faster" and r["what"] == "collective" for r in rows)
    assert (tmp_path / "diff.html").read_text().count("<script") >= 2
    # rank 1's kernels (but the all-reduce) grew by 3 ms of 4 x 2.3 ms: 32.6%; the job's by 16.3%
    assert run([DEVTRACE, "diff", base, slow, "--threshold", "35"]).returncode == 0
    assert run([DEVTRACE, "diff", base, slow, "--threshold", "30"]).returncode == 1


def test_diff_of_two_step_ranges_of_one_run(tmp_path):
    """--base-steps and --test-steps compare two parts of one run per step:
    steps 0-1 against 2-3, where rank 1's step 2 was slow."""
    slow = job(tmp_path, "slow", slow=2)
    res = run([DEVTRACE, "diff", slow, slow, "--base-steps", "0-1", "--test-steps", "2-3", "--all", "--format",
               "json"])
    assert res.returncode == 1, res.stderr
    rows = json.loads(res.stdout)
    step = [r for r in rows if r["what"] == "step" and r["name"] is None and r["rank"] == 1][0]
    # per step: 10.01 ms then, (10.01 + 13.01) / 2 ms now
    assert (step["base_ns"], step["test_ns"]) == (10_010_000, 11_510_000)
    res = run([DEVTRACE, "diff", slow, slow, "--steps", "0-1"])
    assert res.returncode == 0


@pytest.mark.parametrize("args,says", [
    (["--threshold", "lots"], "not a percentage"),
    (["--steps", "3-1"], "ends before it starts"),
    (["--format", "parquet"], "needs -o DIR"),
])
def test_diff_usage_errors_are_one_line_and_status_2(tmp_path, args, says):
    base = job(tmp_path, "base", steps=1)
    res = run([DEVTRACE, "diff", base, base, *args])
    assert res.returncode == 2 and says in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_diff_of_no_dataset_is_status_2(tmp_path):
    base = job(tmp_path, "base", steps=1)
    res = run([DEVTRACE, "diff", base, tmp_path / "none"])
    assert res.returncode == 2 and "holds no dataset" in res.stderr and "Traceback" not in res.stderr
