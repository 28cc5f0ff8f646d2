"""devtrace analyze at its edges: small jobs' stragglers, the kernel chart,
a remote scheduler with a relative directory, negative durations, damaged
datasets and bad options (one line, the right exit status), what each
command imports, and Dask's tasks sized by work."""

import json
import os
import re

import pytest

from conftest import DEVTRACE, convert, kineto_trace, need, report, run


def job(tmp_path, ranks, steps, slow_rank, slow_step, delay, jitter=10.0):
    paths = []
    for r in range(ranks):
        t = kineto_trace(r, steps, slow=slow_step if r == slow_rank else None, delay=delay, jitter=jitter)
        t["distributedInfo"]["world_size"] = ranks
        p = tmp_path / ("rank%d.json" % r)
        p.write_text(json.dumps(t))
        paths.append(p)
    return convert(paths, tmp_path / "ds")


@pytest.mark.parametrize("ranks,jitter", [(2, 10.0), (2, 0.0), (3, 0.0), (4, 0.0)])
def test_a_slow_step_is_a_straggler_from_two_ranks(tmp_path, ranks, jitter):
    """A step 4.8 times the others' on one rank: flagged on 2 ranks (where a
    z-score over the ranks of one step is at most 0.6745) and on up to 4
    equal ranks (where their MAD is 0), and no other step is."""
    ds = job(tmp_path, ranks, 5, slow_rank=1, slow_step=2, delay=38_000.0, jitter=jitter)
    steps = report(ds, "steps")
    assert len(steps) == ranks * 5
    assert [(r.rank, r.step) for r in steps[steps.straggler].itertuples()] == [(1, 2)]
    row = steps[steps.straggler].iloc[0]
    assert row.step_ns / row.others_median_ns == pytest.approx(4.8, abs=0.01)
    assert row.others_waited_in.startswith("ncclDevKernel_AllReduce")


def test_equal_steps_have_no_straggler(tmp_path):
    ds = job(tmp_path, 2, 4, slow_rank=None, slow_step=None, delay=0.0, jitter=0.0)
    steps = report(ds, "steps")
    assert not steps.straggler.any() and steps.robust_z.isna().all()


def test_kernel_chart_draws_every_kernel_once_largest_first(tmp_path):
    """15 kernels whose names share their first 60 characters: 15 bars with
    15 labels, in the order of their time."""
    need("matplotlib")
    pd = need("pandas")
    from devtrace.analysis import _plot
    common = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float"
    names = ["%s, op%02d>" % (common, i) for i in range(15)]
    kernels = pd.DataFrame({"name": names, "total_ns": [(i * 7 % 15 + 1) * 1000 for i in range(15)]})
    fig = _plot.kernels_figure(kernels)
    ax = fig.axes[0]
    bars = sorted(ax.patches, key=lambda p: -p.get_y())  # top first
    labels = [t.get_text() for t in sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])]
    assert len(bars) == 15 and len(set(labels)) == 15
    assert [b.get_width() for b in bars] == sorted((b.get_width() for b in bars), reverse=True)
    biggest = names[max(range(15), key=lambda i: kernels.total_ns[i])]
    assert labels[0].startswith(biggest[:40]) and all(len(lb) <= 55 for lb in labels)
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_relative_dir_with_a_remote_scheduler(tmp_path):
    """Workers that do not share the command's directory read the dataset
    by its absolute path."""
    need("dask.distributed")
    from devtrace.analysis import Dask
    (tmp_path / "work").mkdir()
    job(tmp_path / "work", 2, 2, slow_rank=None, slow_step=None, delay=0.0)
    with Dask(workers=1) as cluster:
        res = run([DEVTRACE, "analyze", "ds", "--report", "kernels", "--format", "csv", "--engine", "dask",
                   "--scheduler", cluster.cluster.scheduler_address], cwd=tmp_path / "work", timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout == run([DEVTRACE, "analyze", "ds", "--report", "kernels", "--format", "csv"],
                             cwd=tmp_path / "work").stdout


def test_negative_durations_are_counted_and_left_out(tmp_path):
    ev = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000.0 + 10 * i, "dur": 5.0,
           "args": {"device": 0, "stream": 7}} for i in range(3)]
    ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1010.0, "dur": -1000000.0,
               "args": {"device": 0, "stream": 7}})
    trace = tmp_path / "neg.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    res = run([DEVTRACE, "convert", trace, "-o", tmp_path / "ds"])
    assert res.returncode == 0, res.stderr
    assert "neg.json: 1 event with a negative duration (the first: traceEvents[3])" in res.stderr
    res = run([DEVTRACE, "analyze", tmp_path / "ds", "--report", "kernels,temporal", "--format", "json"])
    assert res.returncode == 0, res.stderr
    assert re.search(r"note: .*neg.json \(rank 0\): 1 event with a negative duration \(the first: "
                     r"traceEvents\[3\]\), left out of the reports", res.stderr), res.stderr
    out = json.loads(res.stdout)
    assert [(k["count"], k["total_ns"]) for k in out["kernels"]] == [(3, 15000)]
    assert out["temporal"][0]["span_ns"] == 25000
    res = run([DEVTRACE, "analyze", tmp_path / "ds", "--strict"])
    assert res.returncode == 1 and res.stdout == ""
    assert "refused (--strict)" in res.stderr and len(res.stderr.splitlines()) == 1


def damaged(ds, how):
    f = next((ds / "events" / "rank=0").iterdir())
    if how == "truncated":
        data = f.read_bytes()
        f.write_bytes(data[:len(data) // 2])
    elif how == "garbage":
        f.write_bytes(os.urandom(3000))
    elif how == "schema":
        pa = need("pyarrow")
        pq = need("pyarrow.parquet")
        pq.write_table(pa.table({"a": [1, 2]}), f)
    return f


@pytest.mark.parametrize("how", ["truncated", "garbage", "schema"])
def test_a_damaged_dataset_is_one_line_naming_the_file(tmp_path, how):
    ds = job(tmp_path, 1, 2, slow_rank=None, slow_step=None, delay=0.0)
    f = damaged(ds, how)
    # Dask's workers say the same through the client (once: a cluster's start-up is seconds)
    for engine in ("duckdb", "dask") if how == "truncated" else ("duckdb",):
        res = run([DEVTRACE, "analyze", ds, "--report", "kernels", "--engine", engine], timeout=300)
        assert res.returncode == 1, (engine, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("devtrace analyze: "), (engine, res.stderr)
        assert str(f) in lines[0], (engine, res.stderr)


@pytest.mark.parametrize("args,says", [
    (["--memory-limit", "lots"], "argument --memory-limit: 'lots' is not a size (e.g. 512MB, 2GB)"),
    (["--report", "nosuch"], "unknown report 'nosuch'"),
    (["--format", "parquet"], "--format parquet needs -o DIR"),
    (["--engine", "spark"], "argument --engine: invalid choice: 'spark'"),
])
def test_usage_errors_are_one_line_and_status_2(tmp_path, args, says):
    ds = job(tmp_path, 1, 1, slow_rank=None, slow_step=None, delay=0.0)
    res = run([DEVTRACE, "analyze", ds, *args])
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and lines[0].startswith("devtrace analyze: "), res.stderr


def test_no_dataset_is_one_line(tmp_path):
    res = run([DEVTRACE, "analyze", tmp_path / "none"])
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1
    assert "holds no dataset" in res.stderr


def imports(res):
    return {m.group(1).split(".")[0] for m in re.finditer(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", res.stderr)}


def test_each_command_imports_what_it_uses(tmp_path):
    """analyze over DuckDB imports neither pyarrow nor pandas nor devtrace's
    recording API; convert imports pyarrow and not pandas nor DuckDB (the
    modules Python reports importing, PYTHONPROFILEIMPORTTIME)."""
    ds = job(tmp_path, 1, 2, slow_rank=None, slow_step=None, delay=0.0)
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    res = run([DEVTRACE, "analyze", ds, "--report", "all"], env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    mods = imports(res)
    assert "duckdb" in mods and not mods & {"pyarrow", "pandas", "numpy"}, sorted(mods)
    assert not any(m.startswith("devtrace._") or m == "devtrace.events" for m in re.findall(
        r"\| \s*(devtrace\.[\w.]+)", res.stderr)), res.stderr[-2000:]
    res = run([DEVTRACE, "convert", tmp_path / "rank0.json", "-o", tmp_path / "again"], env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    mods = imports(res)
    assert "pyarrow" in mods and not mods & {"pandas", "duckdb"}, sorted(mods)


# ---- Dask: tasks sized by work -----------------------------------------------

def test_tasks_are_sized_by_work_not_ranks():
    from devtrace.analysis import _engine
    m = 1_000_000
    # 512 ranks of 20k events on 2 workers: four tasks, each a run of ranks
    tasks = _engine.plan_tasks({r: 20_000 for r in range(512)}, 2)
    assert len(tasks) == 4 and sorted(r for t in tasks for r in t) == list(range(512))
    assert all(t == list(range(t[0], t[-1] + 1)) for t in tasks)
    # a little work: one task, whatever the workers
    assert _engine.plan_tasks({r: 1000 for r in range(8)}, 4) == [list(range(8))]
    # a huge rank takes a task of its own, the small ones beside it share
    tasks = _engine.plan_tasks({0: m, 1: 900 * m, 2: m, 3: m}, 2)
    assert [1] in tasks and sorted(r for t in tasks for r in t) == [0, 1, 2, 3]
    # more workers, more tasks: every worker has work
    sizes = {r: 100_000 for r in range(256)}
    assert len(_engine.plan_tasks(sizes, 8)) == 16 > len(_engine.plan_tasks(sizes, 2)) == 4


def test_dask_runs_a_task_per_share_of_the_work(tmp_path, monkeypatch):
    """16 ranks of a small job are one task on Dask (a DuckDB per task, not
    per rank); cut into shares of a few ranks each (as a large job is), the
    tasks' rows combine into DuckDB's rows."""
    need("dask.distributed")
    from devtrace.analysis import Dask, _engine
    ds = job(tmp_path, 16, 2, slow_rank=3, slow_step=1, delay=5000.0)
    planned = []
    real = _engine.plan_tasks

    def spy(sizes, workers, least=None):
        planned.append(real(sizes, workers, least))
        return planned[-1]
    monkeypatch.setattr(_engine, "plan_tasks", spy)
    names = ["kernels", "temporal", "overlap", "idle", "steps", "launch"]
    with Dask(workers=2) as cluster:
        duck = _engine.run_reports(str(ds), names, arrow=True)
        dask = _engine.run_reports(str(ds), names, engine="dask", dask=cluster, arrow=True)
        assert all(dask[n].equals(duck[n]) for n in names)
        assert planned == [[list(range(16))]]
        monkeypatch.setattr(_engine, "MIN_TASK_ROWS", 1)
        dask = _engine.run_reports(str(ds), names, engine="dask", dask=cluster, arrow=True)
        assert all(dask[n].equals(duck[n]) for n in names)
    assert planned[1] == [list(range(r, r + 4)) for r in (0, 4, 8, 12)]
