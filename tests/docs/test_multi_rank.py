"""docs/multi-rank.md's commands: a torchrun job of four ranks recorded
(a Python program and, with --no-python, a binary), then its ranks merged
and checked."""
from conftest import check_trace, load_trace, need


def test_torchrun_and_merge(documented, sandbox):
    need("torch")
    record, merge = documented
    res = sandbox.run(record, timeout=600)
    ranks = [sandbox / f"job.rank{r}.json" for r in range(4)]
    for r, path in enumerate(ranks):
        assert f"wrote {path.name}: " in res.stderr, res.stderr
        trace = load_trace(path)
        assert trace["distributedInfo"]["rank"] == r and trace["distributedInfo"]["world_size"] == 4
        assert sum(e.get("cat") == "kernel" for e in trace["traceEvents"]) == 4
    # torchrun's own processes record nothing and write nothing
    assert sorted(p.name for p in sandbox.root.glob("job*.json")) == [p.name for p in ranks]
    res = sandbox.run(merge)
    assert "merge: wrote job.merged.json: 4 traces of 4 processes" in res.stderr, res.stderr
    merged = check_trace(sandbox / "job.merged.json")
    labels = {e["args"]["labels"] for e in merged["traceEvents"] if e.get("name") == "process_labels"}
    assert {f"rank {r} GPU 0" for r in range(4)} <= labels, labels
