"""The devtrace command as a user runs it."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (DEVTRACE, EMU_RUN, SOURCE, TOPSPTI_EMU, VENDORS, WORKLOAD, check_trace, load_trace,
                      needs_emulator, run)


@pytest.mark.parametrize("cmd", [[], ["record"], ["stats"], ["check"], ["backends"]])
def test_every_command_has_help(cmd):
    res = run([DEVTRACE, *cmd, "--help"])
    assert res.returncode == 0
    assert "usage: devtrace" in res.stdout


def test_record_help_lists_its_exit_statuses():
    res = run([DEVTRACE, "record", "--help"])
    for status in ("128+N", "  2 ", "  125 ", "126, 127"):
        assert status in res.stdout, status


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


def test_record_refuses_an_unusable_named_library_before_running_the_program(tmp_path):
    marker = tmp_path / "ran"
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "-o", out, "--", "sh", "-c", f"touch {marker}"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": "/nonexistent/libtopspti.so"})
    assert res.returncode == 2
    assert "DEVTRACE_TOPSPTI_LIBRARY=/nonexistent/libtopspti.so cannot be used" in res.stderr
    assert "the program was not run" in res.stderr
    assert not marker.exists() and not out.exists()


def test_record_refuses_an_unavailable_chosen_backend_before_running_the_program(tmp_path):
    marker = tmp_path / "ran"
    res = run([DEVTRACE, "record", "--backend", "topspti", "-o", tmp_path / "t.json", "--",
               "sh", "-c", f"touch {marker}"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": "", "TOPS_HOME": "/nonexistent"})
    assert res.returncode == 2
    assert "the topspti backend is unavailable" in res.stderr
    assert not marker.exists()


def test_record_returns_the_programs_exit_status(tmp_path):
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "--exit", "3", "0"])
    assert res.returncode == 3, res.stderr
    trace = check_trace(out)
    assert trace["devtrace"]["backend"] == "null"
    assert "nothing lost" in res.stderr
    assert f"wrote {out}" in res.stderr
    assert "traced 1 process: 1 trace written\n" in res.stderr


def test_record_a_missing_program(tmp_path):
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "t.json", "--",
               "/nonexistent/program"])
    assert res.returncode == 127
    assert "cannot run /nonexistent/program" in res.stderr
    assert "no trace was written" not in res.stderr and "traced" not in res.stderr
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "t.json", "--", script])
    assert res.returncode == 126
    assert "Permission denied" in res.stderr and "no trace was written" not in res.stderr


def test_record_rejects_unknown_backend(tmp_path):
    res = run([DEVTRACE, "record", "--backend", "nope", "--", "true"])
    assert res.returncode == 2
    assert "unknown backend nope" in res.stderr


def test_only_processes_that_recorded_something_write_a_trace(tmp_path):
    """Helpers (a shell, true) record nothing and write nothing; the summary
    counts them and says where the one trace went."""
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--",
               "sh", "-c", f"/bin/true; /bin/true; {WORKLOAD} 0; exit 0"])
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and files[0].startswith("t.") and files[0] != "t.json", files
    check_trace(tmp_path / files[0])
    assert f"wrote {tmp_path / files[0]}: " in res.stderr
    assert "traced 4 processes: 1 trace written; 3 recorded nothing" in res.stderr, res.stderr
    # a run that records nothing at all writes nothing, and says so
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "u.json", "--", "true"])
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "u.json").exists()
    assert "traced 1 process: 0 traces written; 1 recorded nothing" in res.stderr


def test_a_program_that_execs_keeps_what_it_recorded(tmp_path):
    """exec replaces the program without exit: what it recorded is written first."""
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--",
               "sh", "-c", f"{WORKLOAD} 0 && exec {WORKLOAD} 0"])
    assert res.returncode == 0, res.stderr
    assert "traced 3 processes: 2 traces written; 1 recorded nothing" in res.stderr, res.stderr
    assert len(list(tmp_path.iterdir())) == 2


def test_rank_names_the_trace(tmp_path):
    out = tmp_path / "t.json.gz"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"], env={"RANK": "3"})
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "t.rank3.json.gz").exists()
    check_trace(tmp_path / "t.rank3.json.gz")


def start_workload(out, sleep_ms, *extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen([str(DEVTRACE), "record", "--backend", "null", "-o", str(out), *extra, "--",
                             str(WORKLOAD), str(sleep_ms)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT])
def test_a_signal_still_leaves_a_valid_trace(tmp_path, sig):
    out = tmp_path / "t.json"
    proc = start_workload(out, 30000)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert f"terminated by signal {int(sig)}" in err
    assert f"wrote {out}" in err
    check_trace(out)


@pytest.mark.parametrize("where", ["missing", "directory", "file"])
def test_an_unwritable_output_stops_record_before_the_program_runs(tmp_path, where):
    marker = tmp_path / "ran"
    out = {"missing": tmp_path / "no" / "such" / "t.json", "directory": tmp_path,
           "file": tmp_path / "plain" / "t.json"}[where]
    (tmp_path / "plain").write_text("")
    res = run([DEVTRACE, "record", "-o", out, "--", "touch", marker])
    assert res.returncode == 2, res.stderr
    assert not marker.exists()
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"devtrace record: cannot write the trace {out}: ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_directory_stops_record(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    res = run([DEVTRACE, "record", "-o", ro / "t.json", "--", "true"])
    assert res.returncode == 2 and "cannot create files in" in res.stderr


def test_a_trace_that_cannot_be_written_at_the_end_is_devtraces_own_failure(tmp_path):
    """The folder disappears while the program runs: exit status 125 with the
    reason, never the program's 0, and no guess about SIGKILL."""
    d = tmp_path / "d"
    d.mkdir()
    res = run([DEVTRACE, "record", "--backend", "null", "-o", d / "t.json", "--",
               "sh", "-c", f"rmdir {d} && exec {WORKLOAD} 0"])
    assert res.returncode == 125, res.stderr
    assert "its trace could not be written: cannot write trace" in res.stderr
    assert "No such file or directory" in res.stderr
    assert "exited with status 0" in res.stderr
    assert "SIGKILL" not in res.stderr and "statically linked" not in res.stderr


def test_a_crash_after_a_trace_was_written_is_no_lost_trace(tmp_path):
    out = tmp_path / "t.json"
    # SIGILL: a crash that AddressSanitizer (in the sanitizer builds) leaves alone
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--",
               "sh", "-c", f"{WORKLOAD} 0; kill -ILL $$"])
    assert res.returncode == 128 + signal.SIGILL, res.stderr
    assert "terminated by signal 4" in res.stderr and "1 trace written" in res.stderr
    assert "SIGKILL" not in res.stderr and "statically linked" not in res.stderr


def test_a_statically_linked_program_is_named_as_the_likely_cause(tmp_path):
    prog = tmp_path / "static"
    cc = subprocess.run(["cc", "-static", "-x", "c", "-", "-o", str(prog)], input="int main(void){return 0;}",
                        capture_output=True, text=True)
    if cc.returncode != 0:
        pytest.skip("no static C library: " + cc.stderr)
    res = run([DEVTRACE, "record", "-o", tmp_path / "t.json", "--", prog])
    assert res.returncode == 125, res.stderr
    assert "did not load the injection library (is it statically linked, or setuid?)" in res.stderr


def test_records_writing_one_path_do_not_replace_each_others_traces(tmp_path):
    out = tmp_path / "t.json"
    first = start_workload(out, 400)
    second = start_workload(out, 100)
    _, err2 = second.communicate(timeout=30)
    _, err1 = first.communicate(timeout=30)
    assert first.returncode == 0 and second.returncode == 0, err1 + err2
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and "t.json" in files, files
    other = tmp_path / [f for f in files if f != "t.json"][0]
    for f in (out, other):
        check_trace(f)
    assert f"wrote {out}: " in err2
    # the one that finished second keeps the other's trace, and says so
    assert f"wrote {other}: " in err1 and f"({out} was written by another process during this run)" in err1
    # a later run replaces a trace of an earlier one
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0 and f"wrote {out}: " in res.stderr
    assert len(list(tmp_path.iterdir())) == 2


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


@needs_emulator()
def test_scenario_memory_allocations(tmp_path):
    """malloc/free statements: on MSPTI (whose memory records `devtrace record`
    makes possible by preloading libmspti.so) exactly one [memory] instant
    per allocation and free, totals per device, the stats memory report; a
    `free` with nothing to free is a scenario error."""
    (library,) = [lib for name, _, lib in VENDORS if name == "mspti"]
    if not library.exists():
        pytest.skip(f"{library.name} is not built")
    scn = tmp_path / "memory.scn"
    scn.write_text("""vendor mspti
devices 2
malloc device=0 bytes=4096
repeat 3 {
  malloc device=0 bytes=1048576
  kernel device=0 stream=1 name="k" dur_us=5
  free
}
malloc device=1 bytes=512 pinned
free
free
""")
    out = tmp_path / "m.json"
    res = run([DEVTRACE, "record", "--backend", "mspti", "-o", out, "--", EMU_RUN, "--quiet", "--library", library,
               scn], env={"DEVTRACE_MSPTI_LIBRARY": str(library)})
    assert res.returncode == 0, res.stdout + res.stderr
    trace = check_trace(out)
    assert trace["devtrace"]["counts"]["memory"] == 10
    mem = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
    assert len(mem) == 10
    dev0 = sorted((e for e in mem if e["args"]["Device Id"] == 0), key=lambda e: e["ts"])
    assert [e["args"]["Total Allocated"] for e in dev0] == [4096, 1052672, 4096, 1052672, 4096, 1052672, 4096, 0]
    stats = run([DEVTRACE, "stats", "--format", "csv", "--report", "memory", out])
    assert stats.returncode == 0, stats.stderr
    assert "memory,privateuse1:0,4,4,3149824,3149824,1052672,0" in stats.stdout.splitlines()
    assert "memory,cpu,1,1,512,512,512,0" in stats.stdout.splitlines()

    bad = tmp_path / "bad.scn"
    bad.write_text("vendor mspti\nfree\n")
    res = run([EMU_RUN, "--quiet", "--library", library, bad])
    assert res.returncode != 0 and "no allocation of this thread to free" in res.stderr, res.stderr


@needs_emulator()
@pytest.mark.parametrize("queued", [False, True])
def test_record_kernel_queued(tmp_path, queued):
    """record --kernel-queued gives every kernel its queued time (CUPTI's
    latency timestamps, on the CUPTI emulator); without it the trace's
    "queued" is 0 (unknown), as it is off by default."""
    library = next((lib for name, _, lib in VENDORS if name == "cupti"), None)
    if library is None or not library.exists():
        pytest.skip("the CUPTI emulator is not built")
    scn = tmp_path / "k.scn"
    scn.write_text("""vendor cupti
thread "main" {
  kernel device=0 stream=1 name="k" grid=1,1,1 block=32,1,1 dur_us=40
  kernel device=0 stream=1 name="k" grid=1,1,1 block=32,1,1 dur_us=40
  kernel device=0 stream=2 name="k" grid=1,1,1 block=32,1,1 dur_us=40
  sync device=0
}
""")
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", "cupti", *(["--kernel-queued"] if queued else []), "-o", out, "--",
               EMU_RUN, "--quiet", "--library", library, scn], env={"DEVTRACE_CUPTI_LIBRARY": str(library)})
    assert res.returncode == 0, res.stdout + res.stderr
    trace = check_trace(out)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) == 3
    for k in kernels:
        if queued:
            # absolute ns, before the kernel starts (the same clock)
            start_ns = round(k["ts"] * 1000) + trace["baseTimeNanoseconds"]
            assert start_ns - 10**9 < k["args"]["queued"] <= start_ns, k
        else:
            assert k["args"]["queued"] == 0, k
