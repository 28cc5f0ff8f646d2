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
