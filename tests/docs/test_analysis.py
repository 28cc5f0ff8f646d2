"""docs/analysis.md's commands and Python lines, over the traces of a job
of two ranks recorded on the TOPSPTI emulator."""
import json
import subprocess

from conftest import need


def record(sandbox, output, rank=None):
    """A trace of train.py, as `devtrace record -o output` names it (with
    the rank a launcher sets)."""
    env = dict(sandbox.env, **({"RANK": str(rank)} if rank is not None else {}))
    res = subprocess.run(["devtrace", "record", "-o", output, "--", "python3", "train.py"], cwd=sandbox.root,
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_commands(documented, sandbox):
    need("pyarrow")
    need("duckdb")
    need("dask.distributed")
    block, = documented
    for rank in (0, 1):
        record(sandbox, "job.json", rank)  # job.rank0.json, job.rank1.json
    res = sandbox.run(block, timeout=600)
    assert sorted(p.name for p in (sandbox / "job.parquet" / "events").iterdir()) == ["rank=0", "rank=1"]
    out = res.stdout
    # the kernels table, then `all` as JSON (one object per report), then the
    # steps report's charts, then the temporal breakdown on Dask
    assert "train_step_kernel" in out, out
    start = out.index("{")
    reports, end = json.JSONDecoder().raw_decode(out[start:])
    assert {"kernels", "temporal", "overlap", "idle", "steps", "launch"} <= set(reports), list(reports)
    assert any(row.get("name") == "train_step_kernel" for row in reports["kernels"]), reports["kernels"]
    assert list((sandbox / "charts").iterdir()), "--plot charts/ wrote nothing"
    assert "rank" in out[start + end:], out[start + end:]


def test_python(documented, sandbox):
    need("pyarrow")
    need("duckdb")
    block, = documented
    for name in ("rank0.json.gz", "rank1.json.gz"):
        record(sandbox, name)
    res = sandbox.python(block, after="print(da.report('job.parquet', 'kernels').to_pandas().to_string())\n")
    assert "train_step_kernel" in res.stdout, res.stdout
    assert (sandbox / "job.parquet" / "traces.parquet").exists()


def test_more_reports(documented, sandbox):
    """The critical path, queue, memory and the other reports, the traces
    written back and the page, over two ranks' traces."""
    need("pyarrow")
    need("duckdb")
    block, = documented
    for rank in (0, 1):
        record(sandbox, "job.json", rank)
    res = subprocess.run(["devtrace", "convert", "job.rank0.json", "job.rank1.json", "-o", "job.parquet"],
                         cwd=sandbox.root, env=sandbox.env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    res = sandbox.run(block, timeout=600)
    # critical_steps: a row per rank (their whole traces: train.py has no steps), one of them setting the time
    assert "sets_step" in res.stdout and "train_step_kernel" in res.stdout, res.stdout
    assert sorted(p.name for p in (sandbox / "marked").iterdir()) == ["job.rank0.json", "job.rank1.json"]
    marked = json.loads((sandbox / "marked" / "job.rank0.json").read_text())["traceEvents"]
    assert any(e.get("ph") == "C" and e["name"].startswith("Queue length") for e in marked)
    assert any(e.get("args", {}).get("critical") == 1 for e in marked)
    page = (sandbox / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Plotly" in page


def test_diff(documented, sandbox):
    """devtrace diff against a baseline: the same traces converted twice
    changed nothing (exit 0); a run with twice the steps is slower past 5%
    (exit 1)."""
    need("duckdb")
    block, = documented
    for rank in (0, 1):
        record(sandbox, "job.json", rank)
    for out in ("base.parquet", "job.parquet"):
        res = subprocess.run(["devtrace", "convert", "job.rank0.json", "job.rank1.json", "-o", out],
                             cwd=sandbox.root, env=sandbox.env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
    res = sandbox.run(block)
    assert "kernel" in res.stdout and "train_step_kernel" not in res.stdout  # nothing past the threshold
    # rank 0 again, running twice the steps
    res = subprocess.run(["devtrace", "record", "-o", "more.json", "--", "python3", "train.py", "--steps", "8"],
                         cwd=sandbox.root, env=sandbox.env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    res = subprocess.run(["devtrace", "convert", "more.json", "-o", "job.parquet.more"], cwd=sandbox.root,
                         env=sandbox.env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    (sandbox / "job.parquet").rename(sandbox / "job.parquet.old")
    (sandbox / "job.parquet.more").rename(sandbox / "job.parquet")
    res = sandbox.run(block, check=False)
    assert res.returncode == 1 and "train_step_kernel" in res.stderr + res.stdout, res.stderr
