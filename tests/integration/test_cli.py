"""The devtrace command as a user runs it."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (DEVTRACE, EMU_RUN, SOURCE, TOPSPTI_EMU, VENDORS, check_trace, load_trace,
                      needs_emulator, run)


@pytest.mark.parametrize("cmd", [[], ["record"], ["stats"], ["check"], ["backends"]])
def test_every_command_has_help(cmd):
    res = run([DEVTRACE, *cmd, "--help"])
    assert res.returncode == 0
    assert "usage: devtrace" in res.stdout


def test_unknown_command_is_a_usage_error():
    res = run([DEVTRACE, "frobnicate"])
    assert res.returncode == 2
    assert "unknown command frobnicate" in res.stderr


def test_backends_lists_every_backend_with_a_reason():
    res = run([DEVTRACE, "backends"], env={"DEVTRACE_TOPSPTI_LIBRARY": "/nonexistent/libtopspti.so",
                                          "TOPS_HOME": "/nonexistent"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    names = [line.split()[0] for line in lines[1:] if line and not line.startswith(" ")]
    assert names == [name for name, _, _ in VENDORS] + ["null"]
    topspti = res.stdout[res.stdout.index("\ntopspti") + 1:]
    assert "unavailable" in topspti.splitlines()[0]
    assert "/nonexistent/libtopspti.so" in topspti


def test_record_returns_the_programs_exit_status(tmp_path):
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", "sh", "-c", "exit 3"])
    assert res.returncode == 3, res.stderr
    trace = check_trace(out)
    assert trace["devtrace"]["backend"] == "null"
    assert "nothing lost" in res.stderr
    assert str(out) in res.stderr


def test_record_a_missing_program(tmp_path):
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "t.json", "--",
               "/nonexistent/program"])
    assert res.returncode == 127
    assert "cannot run /nonexistent/program" in res.stderr


def test_record_rejects_unknown_backend(tmp_path):
    res = run([DEVTRACE, "record", "--backend", "nope", "--", "true"])
    assert res.returncode == 2
    assert "unknown backend nope" in res.stderr


def test_each_process_writes_its_own_trace(tmp_path):
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--",
               "sh", "-c", "/bin/true; /bin/true; exit 0"])
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert "t.json" in files
    children = [f for f in files if f != "t.json"]
    assert len(children) == 2, files
    for f in files:
        check_trace(tmp_path / f)


def test_rank_names_the_trace(tmp_path):
    out = tmp_path / "t.json.gz"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", "true"], env={"RANK": "3"})
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "t.rank3.json.gz").exists()
    check_trace(tmp_path / "t.rank3.json.gz")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_still_leaves_a_valid_trace(tmp_path, sig):
    out = tmp_path / "t.json"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen([str(DEVTRACE), "record", "--backend", "null", "-o", str(out), "--",
                             "sleep", "30"], env=env, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert f"terminated by signal {int(sig)}" in err
    assert "wrote" in err
    check_trace(out)


@pytest.mark.parametrize("content", [b"", b"{", b"[1,2,3]", b"\x1f\x8b\x08\x00garbage",
                                     b'{"traceEvents": [{"ph": "X"', b"\xff\xfe\x00"])
def test_corrupt_traces_get_a_clear_error(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for cmd in ("stats", "check"):
        res = run([DEVTRACE, cmd, bad])
        assert res.returncode not in (0,) and res.returncode > 0, (cmd, res.returncode)
        assert res.stderr.strip() or res.stdout.strip()


def test_missing_trace_file():
    for cmd in ("stats", "check"):
        res = run([DEVTRACE, cmd, "/nonexistent/trace.json"])
        assert res.returncode > 0
        assert "/nonexistent/trace.json" in res.stderr


@needs_emulator()
def test_demo_scenario_records_a_valid_trace(tmp_path):
    out = tmp_path / "demo.json"
    res = run([DEVTRACE, "record", "-o", out, "--", EMU_RUN, SOURCE / "examples" / "train_step.scn"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stdout + res.stderr
    trace = check_trace(out)
    dt = trace["devtrace"]
    assert dt["backend"] == "topspti"
    cats = {e.get("cat") for e in trace["traceEvents"]}
    for c in ("kernel", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "user_annotation",
              "gpu_user_annotation", "ac2g", "Trace"):
        assert c in cats, c
    for key in ("schemaVersion", "deviceProperties", "displayTimeUnit", "baseTimeNanoseconds"):
        assert key in trace
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels and all(not e["name"].startswith("_Z") for e in kernels)
    assert all("External id" in e["args"] for e in kernels)
    stats = run([DEVTRACE, "stats", out])
    assert stats.returncode == 0, stats.stderr
    for k in kernels[:3]:
        assert k["name"][:30] in stats.stdout
    csv = run([DEVTRACE, "stats", "--format", "csv", out])
    assert csv.returncode == 0
    assert "Instances" in csv.stdout


@needs_emulator()
@pytest.mark.parametrize("backend,env,library", VENDORS)
@pytest.mark.parametrize("scenario", ["train_step", "faults"])
def test_example_scenarios_give_valid_traces(tmp_path, backend, library, env, scenario):
    """Every example, on every emulated backend: check, json and jq accept it,
    plain and gzip."""
    if not library.exists():
        pytest.skip(f"{library.name} is not built")
    scn = tmp_path / f"{scenario}.scn"
    scn.write_text((SOURCE / "examples" / f"{scenario}.scn").read_text()
                   .replace("vendor topspti", f"vendor {backend}"))
    for fmt, name in (("json", "t.json"), ("json.gz", "t.json.gz")):
        out = tmp_path / name
        res = run([DEVTRACE, "record", "--backend", backend, "--format", fmt, "-o", out, "--",
                   EMU_RUN, "--quiet", "--library", library, scn],
                  env={env: str(library)})
        assert res.returncode == 0, res.stdout + res.stderr
        trace = check_trace(out)
        assert trace["devtrace"]["backend"] == backend
        counts = trace["devtrace"]["counts"]
        assert counts["kernel"] > 0 and counts["flows"] > 0
        lost = trace["devtrace"]["loss"]["total"]
        if scenario == "faults":
            assert lost > 0 and "LOST" in res.stderr
        else:
            assert lost == 0 and "nothing lost" in res.stderr


@needs_emulator()
def test_a_ranges_device_time_includes_operations_inside_it(tmp_path):
    """Device work launched by an operation inside a user range carries the
    operation's External id, and still counts for the range."""
    scn = tmp_path / "nested.scn"
    scn.write_text("""vendor topspti
thread "main" {
  range "step" {
    op 7 {
      kernel device=0 stream=1 name="inner_kernel" grid=1,1,1 block=32,1,1 dur_us=40
      kernel device=0 stream=1 name="inner_kernel" grid=1,1,1 block=32,1,1 dur_us=60
    }
    kernel device=0 stream=1 name="direct_kernel" grid=1,1,1 block=32,1,1 dur_us=25
  }
  sync device=0
}
""")
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "topspti", "-o", out, "--", EMU_RUN, "--quiet", scn],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr
    trace = check_trace(out)
    events = trace["traceEvents"]
    step = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "step"]
    assert len(step) == 1
    range_id = step[0]["args"]["External id"]
    inner = [e for e in events if e.get("cat") == "kernel" and e["name"] == "inner_kernel"]
    assert [k["args"]["External id"] for k in inner] == [7, 7]
    assert trace["devtrace"]["externalParents"] == {"7": range_id}
    spans = [e for e in events if e.get("cat") == "gpu_user_annotation" and e["name"] == "step"]
    assert len(spans) == 1
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert spans[0]["ts"] <= min(k["ts"] for k in kernels)
    device_ns = sum(round(k["dur"] * 1000) for k in kernels)
    assert abs(device_ns - 125000) <= 3  # durations pass through the clock fit
    csv = run([DEVTRACE, "stats", "--format", "csv", "--report", "ranges", out])
    assert csv.returncode == 0, csv.stderr
    header, *rows = [line for line in csv.stdout.splitlines() if line.startswith(("Report", "ranges"))]
    cols = header.split(",")
    row = next(r for r in rows if r.endswith(",step"))
    assert int(row.split(",")[cols.index("Device Time (ns)")]) == device_ns
