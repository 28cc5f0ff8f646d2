"""README.md's commands, run as a newcomer runs them (against the TOPSPTI
emulator), each checked for what the README says it does."""
import dataclasses
import json
import re
import subprocess
import time

from conftest import SOURCE, TORCH_PROLOGUE, check_trace, load_trace, need


def test_demo(documented, sandbox):
    """bash examples/demo.sh: a checked demo trace and its tables (the build
    is there: nothing is rebuilt)."""
    res = sandbox.run(documented[0])
    demo = sandbox / "demo.json"
    check_trace(demo)
    assert "open demo.json in https://ui.perfetto.dev or chrome://tracing" in res.stdout
    assert "Kernels" in res.stdout or "kernel" in res.stdout.lower(), res.stdout


def test_tour(documented, sandbox):
    """record, stats, check and backends, in the README's order."""
    record, stats, check, backends = documented
    res = sandbox.run(record)
    trace = sandbox / "train.json"
    assert f"wrote {trace.name}: " in res.stderr or f"wrote {trace}: " in res.stderr, res.stderr
    assert "nothing lost" in res.stderr, res.stderr
    assert [e["name"] for e in load_trace(trace)["traceEvents"] if e.get("cat") == "kernel"] == \
        ["train_step_kernel"] * 4
    res = sandbox.run(stats)
    assert "train_step_kernel" in res.stdout and "4" in res.stdout, res.stdout
    res = sandbox.run(check)
    assert res.returncode == 0
    res = sandbox.run(backends)
    lines = res.stdout.splitlines()
    assert lines[0].split()[:3] == ["BACKEND", "VENDOR", "STATUS"], res.stdout
    assert any(line.startswith("topspti") and " available " in line for line in lines), res.stdout


def test_merge_and_analyze(documented, sandbox):
    """Two ranks' traces merged into one, turned into Parquet, and the kernels
    report over it."""
    merge, analysis = documented
    for rank in (0, 1):  # a job's two ranks, each recorded
        res = subprocess.run(["devtrace", "record", "-o", "job.json", "--", "python3", "train.py"], cwd=sandbox.root,
                             env=dict(sandbox.env, RANK=str(rank)), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and f"job.rank{rank}.json" in res.stderr, res.stderr
    res = sandbox.run(merge)
    assert "merge: wrote job.json: 2 traces of 2 processes" in res.stderr, res.stderr
    merged = check_trace(sandbox / "job.json")
    assert sum(e.get("cat") == "kernel" for e in merged["traceEvents"]) == 8
    res = sandbox.run(analysis)
    assert (sandbox / "job.parquet" / "traces.parquet").exists()
    assert "train_step_kernel" in res.stdout, res.stdout


def test_trigger(documented, sandbox):
    """A program listening under `record --on-demand`: --list shows it, and
    a capture of one second writes its kernels."""
    proc = sandbox.start("devtrace record --on-demand -o unused.json -- python3 train.py",
                         env={"TRAIN_SECONDS": "60"})
    try:
        pid = sandbox.listener(proc, "python3")
        res = sandbox.run(documented[0], {"PID": pid})
        header, *rows = res.stdout.splitlines()[:2]
        assert header.split()[:2] == ["PID", "PROGRAM"], res.stdout
        assert rows and rows[0].split()[0] == str(pid), res.stdout
        assert "wrote window.json: " in res.stderr, res.stderr
        trace = check_trace(sandbox / "window.json")
        assert any(e.get("name") == "train_step_kernel" for e in trace["traceEvents"])
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_flight_recorder(documented, sandbox):
    """A program under `record --flight-recorder`, left running: `trigger
    --dump` writes the ring's window, and it holds the program's kernels."""
    block, = documented
    start, dump = block.text.splitlines()
    assert start.endswith(" &"), start
    proc = sandbox.start(start[:-2], env={"TRAIN_SECONDS": "60"})
    try:
        pid = sandbox.listener(proc, "python3")
        time.sleep(1)  # the program listens from its start: let it launch a few steps' kernels first
        res = sandbox.run(dataclasses.replace(block, text=dump + "\n"), {"PID": pid})
        assert "wrote dump.json: " in res.stderr, res.stderr
        trace = check_trace(sandbox / "dump.json")
        assert any(e.get("name") == "train_step_kernel" for e in trace["traceEvents"])
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_python_profile(documented, sandbox):
    block, = documented
    sandbox.python(block, before=("import ctypes, os\n"
                                  "_emu = ctypes.CDLL(os.environ['DEVTRACE_TOPSPTI_LIBRARY'])\n"
                                  "def step():\n"
                                  "    g = (ctypes.c_int * 3)(1, 1, 1)\n"
                                  "    assert _emu.emu_launch_kernel(0, 1, b'readme_kernel', g, g, 10000) == 0\n"
                                  "    assert _emu.emu_synchronize(-1, -1) == 0\n"))
    trace = check_trace(sandbox / "step.json")
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert [k["name"] for k in kernels] == ["readme_kernel"]
    forward = next(e for e in trace["traceEvents"] if e.get("name") == "forward" and e.get("ph") == "X")
    assert kernels[0]["args"]["External id"] == forward["args"]["External id"]


def test_torch_plugin(documented, sandbox):
    """torch.profiler with the plugin: the kernel the step launched on the
    emulated device is in torch's own trace."""
    need("torch")
    block, = documented
    sandbox.python(block, before=TORCH_PROLOGUE,
                   after="prof.export_chrome_trace('torch.json')\n")
    trace = json.loads((sandbox / "torch.json").read_text())
    assert any(e.get("cat") == "kernel" and e.get("name") == "docs_scale_kernel" for e in trace["traceEvents"])


def test_the_readme_is_a_page_for_newcomers():
    """What devtrace is, the two commands, the tour, the Python lines and a
    table of the docs that names every page there is (and only those);
    the figures live in docs/performance.md."""
    readme = (SOURCE / "README.md").read_text()
    assert len(readme.splitlines()) <= 200, len(readme.splitlines())
    sections = [line[3:] for line in readme.splitlines() if line.startswith("## ")]
    assert sections == ["Two commands", "A tour of the commands", "Python", "Documentation"], sections
    table = readme.split("## Documentation", 1)[1]
    named = set(re.findall(r"^\| (docs/[^ |,]+)", table, re.M)) | set(re.findall(r", (docs/[^ |,]+)", table))
    for page in named:
        assert (SOURCE / page).exists(), page
    pages = {f"docs/{p.name}" for p in (SOURCE / "docs").glob("*.md")} | \
        {f"docs/{p.name}/" for p in (SOURCE / "docs").iterdir() if p.is_dir()}
    assert pages == named, (pages - named, named - pages)
    performance = (SOURCE / "docs" / "performance.md").read_text()
    assert "bench_launch" in performance and "| devtrace's instructions per launch" in performance
    assert "bench_launch" not in readme
