"""The devtrace command as a user runs it."""
import csv
import fcntl
import gzip
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import (DEVTRACE, EMU_RUN, SOURCE, TOPSPTI_EMU, VENDORS, WORKLOAD, check_trace, load_trace, need,
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


@pytest.mark.parametrize("name", ["t\tab.json", "t\nnew\nline.json", "back\\slash\\t.json",
                                  "t\tmessage=forged.json"])
def test_record_says_where_a_trace_with_an_awkward_name_went(tmp_path, name):
    """A trace's name with a tab, newline or backslash is said whole, and the
    process that wrote it is counted once."""
    out = tmp_path / name
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0, res.stderr
    check_trace(out)
    assert f"wrote {out}: " in res.stderr, res.stderr
    assert "nothing lost\n" in res.stderr and "forged" not in res.stderr.split("nothing lost")[1], res.stderr
    assert "traced 1 process: 1 trace written\n" in res.stderr, res.stderr


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
    # the shell that execs is one process, whose second program wrote a trace
    assert "traced 2 processes: 2 traces written\n" in res.stderr, res.stderr
    assert len(list(tmp_path.iterdir())) == 2


def test_a_process_that_execs_again_and_again_is_counted_once(tmp_path):
    """A shim (pyenv's) execs several programs in one process: one process,
    listed once."""
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "t.json", "--",
               "sh", "-c", f"exec sh -c 'exec sh -c \"exec {WORKLOAD} 0\"'"])
    assert res.returncode == 0, res.stderr
    assert "traced 1 process: 1 trace written\n" in res.stderr, res.stderr
    res = run([DEVTRACE, "record", "--backend", "null", "-o", tmp_path / "u.json", "--",
               "sh", "-c", "exec sh -c 'exec sh -c \"exec true\"'"])
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "traced" in line]
    assert len(lines) == 1 and lines[0].startswith("devtrace: traced 1 process: 0 traces written; 1 recorded "
                                                   "nothing"), res.stderr
    assert lines[0].endswith(")") and "," not in lines[0].split("(pid ")[1], res.stderr


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
    # (record's claim on the name lies in the folder while it runs)
    res = run([DEVTRACE, "record", "--backend", "null", "-o", d / "t.json", "--",
               "sh", "-c", f"rm -r {d} && exec {WORKLOAD} 0"])
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
    # the record that started first holds the name for its whole run; the
    # other puts its pid in the name, and says so
    assert f"wrote {out}: " in err1
    assert f"wrote {other}: " in err2
    assert f"({out} belongs to another devtrace record with the same output, pid {first.pid})" in err2
    # a later run replaces a trace of an earlier one
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0 and f"wrote {out}: " in res.stderr
    assert len(list(tmp_path.iterdir())) == 2


def test_records_started_together_each_keep_their_trace(tmp_path):
    """Eight records with one -o, over and over: every one keeps its trace,
    however their programs' ends and the others' starts interleave. Each
    program writes its trace early and waits for the others (the name is
    the rank's: RANK=0 for all)."""
    env = dict(os.environ, RANK="0")
    env.pop("LD_PRELOAD", None)
    for round_ in range(50):
        d = tmp_path / str(round_)
        d.mkdir()
        out = d / "t.json"
        procs = [subprocess.Popen([str(DEVTRACE), "record", "--backend", "null", "-o", str(out), "--", "sh", "-c",
                                   f"{WORKLOAD} 0; read x; exit 0"], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
        for p in procs:  # every record runs: none ends before another starts
            assert p.stdout.readline() == "ready\n"
        errs = [p.communicate(input="", timeout=60)[1] for p in procs]
        assert all(p.returncode == 0 for p in procs), errs
        files = sorted(f.name for f in d.iterdir())
        assert len(files) == 8 and "t.rank0.json" in files, (round_, files, errs)
        assert all(f.startswith("t.rank0.") and f.endswith(".json") for f in files), files
        assert sum(f"wrote {d / 't.rank0.json'}: " in e for e in errs) == 1, errs
        assert sum("belongs to another devtrace record with the same output" in e for e in errs) == 7, errs
        for f in files:
            json.loads((d / f).read_text())


def test_a_record_slow_to_start_keeps_the_trace_written_since_it_started(tmp_path):
    """A record whose own code runs late (a loaded machine: here 3 s
    between its process's start and the exec of devtrace) while another record with
    the same -o runs and ends: the trace written after the late record
    started is no leftover of an earlier run; both traces are kept."""
    out = tmp_path / "t.json"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    late = subprocess.Popen(["sh", "-c", 'sleep 3; exec "$@"', "sh", str(DEVTRACE), "record", "--backend", "null",
                             "-o", str(out), "--", str(WORKLOAD), "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert late.poll() is None, "the late record ran before the first one ended"
    _, err = late.communicate(timeout=60)
    assert first.returncode == 0 and f"wrote {out}: " in first.stderr, first.stderr
    assert late.returncode == 0, err
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and "t.json" in files, (files, err)
    other = tmp_path / [f for f in files if f != "t.json"][0]
    assert re.fullmatch(r"t\.\d+\.json", other.name), files
    assert f"wrote {other}: " in err and f"({out} was written by another process during this run)" in err, err
    for f in files:
        check_trace(tmp_path / f)


def test_each_trace_is_named_inside_as_the_file_it_was_written_to(tmp_path):
    """traceName is the path the trace ended at: FILE, or FILE with the pid
    when another record held the name; never the private file it was
    written into before its rename."""
    out = tmp_path / "t.json.gz"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0 and f"wrote {out}: " in res.stderr, res.stderr
    assert load_trace(out)["traceName"] == str(out)
    with open(tmp_path / ".t.json.gz.devtrace-claim", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0, res.stderr
    tagged = [p for p in tmp_path.glob("t.*.json.gz")]
    assert len(tagged) == 1 and f"wrote {tagged[0]}: " in res.stderr, res.stderr
    assert load_trace(tagged[0])["traceName"] == str(tagged[0])


def test_a_claim_left_by_a_record_that_died_holds_nothing(tmp_path):
    """The claim on a name is a lock the kernel drops with its record: a
    claim file left behind does not keep a later record from the name; a
    held one does (the holder's pid is named)."""
    out = tmp_path / "t.json"
    claim = tmp_path / ".t.json.devtrace-claim"
    claim.write_text("999999\n")
    res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0 and f"wrote {out}: " in res.stderr, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"]
    with open(claim, "w") as held:
        held.write("4242\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        res = run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])
    assert res.returncode == 0, res.stderr
    assert f"({out} belongs to another devtrace record with the same output, pid 4242)" in res.stderr
    files = sorted(p.name for p in tmp_path.iterdir() if p.name != claim.name)
    assert len(files) == 2 and "t.json" in files, files


def make_char_device(path, minor):
    """A character device like /dev/null (minor 3) or /dev/full (minor 7)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


def recorded_trace(tmp_path):
    trace = tmp_path / "in.json"
    res = run([DEVTRACE, "record", "--backend", "null", "-o", trace, "--", WORKLOAD, "0"])
    assert res.returncode == 0, res.stderr
    return trace


@pytest.mark.parametrize("command", ["merge", "record"])
def test_a_character_device_output_is_written_in_place(tmp_path, command):
    """A device named as the output stays a device: /dev/null takes the
    trace, /dev/full's ENOSPC is an error."""
    null, full = tmp_path / "null", tmp_path / "full"
    make_char_device(null, 3)
    make_char_device(full, 7)
    trace = recorded_trace(tmp_path)

    def write(out):
        if command == "merge":
            return run([DEVTRACE, "merge", "-o", out, trace])
        return run([DEVTRACE, "record", "--backend", "null", "-o", out, "--", WORKLOAD, "0"])

    res = write(null)
    assert res.returncode == 0, res.stderr
    assert f"wrote {null}" in res.stderr
    res = write(full)
    assert res.returncode == (1 if command == "merge" else 125), res.stderr
    assert "No space left on device" in res.stderr and "another process" not in res.stderr, res.stderr
    for dev in (null, full):
        assert stat.S_ISCHR(os.stat(dev).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "in.json", "null"]


@pytest.mark.parametrize("command", ["merge", "record"])
def test_a_fifo_output_is_written_to_its_reader(tmp_path, command):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    trace = recorded_trace(tmp_path)
    got = {}

    def read():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if command == "merge":
            res = run([DEVTRACE, "merge", "-o", fifo, trace], timeout=30)
        else:
            res = run([DEVTRACE, "record", "--backend", "null", "-o", fifo, "--", WORKLOAD, "0"], timeout=30)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), res.stderr
        assert res.returncode == 0 and f"wrote {fifo}" in res.stderr, res.stderr
        reader.join(timeout=30)
        assert json.loads(got["data"])["traceEvents"]
    finally:
        if reader.is_alive():  # the FIFO was replaced: release the blocked reader
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)) if stat.S_ISFIFO(os.stat(fifo).st_mode) else None


def test_merge_refuses_an_output_that_is_an_input(tmp_path):
    trace = recorded_trace(tmp_path)
    before = trace.read_bytes()
    res = run([DEVTRACE, "merge", "-o", trace, trace, trace])
    assert res.returncode == 2, res.stderr
    assert f"merge: {trace} is also an input: it would be replaced while being read" in res.stderr
    assert trace.read_bytes() == before


def test_merge_reads_a_fifo_and_standard_input_once(tmp_path):
    """An input that gives its bytes once (a FIFO, a pipe as /dev/stdin or
    "-") is copied once for merge's two passes: merged, never a hang or an
    "empty input"."""
    trace = recorded_trace(tmp_path)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    feeder = threading.Thread(target=lambda: fifo.write_bytes(trace.read_bytes()), daemon=True)
    feeder.start()
    out = tmp_path / "from_fifo.json"
    res = run([DEVTRACE, "merge", "-o", out, fifo], timeout=30)
    assert res.returncode == 0 and f"merge: wrote {out}: 1 trace of 1 process" in res.stderr, res.stderr
    check_trace(out)
    for name in ("/dev/stdin", "-"):
        out = tmp_path / "from_stdin.json"
        res = run([DEVTRACE, "merge", "-o", out, name], input=trace.read_text(), timeout=30)
        assert res.returncode == 0 and f"merge: wrote {out}: 1 trace of 1 process" in res.stderr, (name, res.stderr)
        assert load_trace(out)["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from_fifo.json", "from_stdin.json", "in.fifo", "in.json"]
    # what is no trace is refused at its first byte, not copied without end
    res = run([DEVTRACE, "merge", "-o", tmp_path / "zero.json", "/dev/zero"], timeout=30)
    assert res.returncode == 1, res.stderr
    assert "merge: /dev/zero: not a trace: it begins with byte 0x00" in res.stderr


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory):
    """A trace of 300,000 kernels (about 45 MB): merge takes a while to write it."""
    path = tmp_path_factory.mktemp("large") / "large.json"
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [')
        f.write(",".join('{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.0,"dur":1.0,'
                         '"args":{"External id":%d,"correlation":%d}}' % (i % 100, 2 * i, i, i)
                         for i in range(300000)))
        f.write("]}")
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_signal_during_merge_leaves_no_partial_output(tmp_path, large_trace, sig):
    out = tmp_path / "merged.json"
    proc = subprocess.Popen([str(DEVTRACE), "merge", "-o", str(out), str(large_trace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial = tmp_path / f"merged.json.tmp.{proc.pid}"
    while not partial.exists() and proc.poll() is None:
        time.sleep(0.0005)
    assert proc.poll() is None, "merge ended before its output was begun: " + proc.stderr.read()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())


@pytest.mark.parametrize("rank", ["0.5", "true", "{}", "1e30", "9223372036854775808", '"two"', "null"])
def test_merge_warns_of_a_rank_that_is_no_rank_and_refuses_it_when_strict(tmp_path, rank):
    good, bad = recorded_trace(tmp_path), tmp_path / "bad.json"
    trace = load_trace(good)
    text = json.dumps(dict(trace, distributedInfo={"rank": 12345, "world_size": 2}))
    bad.write_text(text.replace('"rank": 12345', '"rank": ' + rank))
    out = tmp_path / "merged.json"
    res = run([DEVTRACE, "merge", "-o", out, bad])
    assert res.returncode == 0, res.stderr
    said = {"{}": "an object"}.get(rank, rank)
    assert (f"merge: warning: {bad} claims rank {said} (distributedInfo): a rank is a whole number, 0 or more; "
            "merged as a trace without a rank") in res.stderr, res.stderr
    out.unlink()
    res = run([DEVTRACE, "merge", "--strict", "-o", out, bad])
    assert res.returncode == 1 and "merge: --strict: 1 warning: nothing written" in res.stderr, res.stderr
    assert not out.exists()


def test_stats_csv_escapes_control_bytes_in_names(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k\x1b[2J\rgone\x01", "pid": 0, "tid": 1, "ts": 1, "dur": 1}]}))
    res = run([DEVTRACE, "stats", "--format", "csv", trace])
    assert res.returncode == 0, res.stderr
    assert not any(c in res.stdout for c in "\x1b\r\x01"), repr(res.stdout)
    assert ",k\\x1b[2J\\x0dgone\\x01\n" in res.stdout, repr(res.stdout)


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


# Real torch.profiler traces (HTA's test data, ../shared/fixtures/torch-traces):
# check's exit status and the count of each kind of finding, as "title: count"
# from each kind's header. Kineto's flows cut on one side and the Stream
# Sync events it draws over a copy on their stream's row are known
# properties of its traces (exit 0).
TORCH_TRACES = SOURCE.parent / "shared" / "fixtures" / "torch-traces"
TORCH_TRACE_FINDINGS = {
    "amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz": (0, {"flows with a finish and no start": 5}),
    "critical_path-alexnet.json.gz": (0, {"flows with a finish and no start": 206,
                                          "flows with a start and no finish": 16,
                                          "synchronisation records that partially overlap work on their row": 8}),
    "cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz": (
        0, {"flows with a finish and no start": 1758, "flows with a start and no finish": 104}),
    "distributed_info_unavailable-distributed_info_not_found.json.gz": (0, {}),
    "nccl_parser_config-nccl_data.json.gz": (0, {"flows with a finish and no start": 4878,
                                                 "flows with a start and no finish": 88}),
    "trace_filter-sampled_rank-0.json.gz": (0, {}),
    "trace_filter-sampled_rank-1.json.gz": (0, {}),
}


def check_findings(stdout):
    """{title: count} from check's kind headers ("invariant N, title: count...")."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"invariant \d, (.*?): (\d+)(, a known property.*)?$", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found


@pytest.mark.parametrize("name", sorted(TORCH_TRACE_FINDINGS))
def test_check_and_stats_on_real_torch_traces(name):
    path = TORCH_TRACES / name
    if not path.exists():
        pytest.fail("%s is missing: CI has ../shared beside the clone" % path)
    rc, expected = TORCH_TRACE_FINDINGS[name]
    res = run([DEVTRACE, "check", path])
    assert res.returncode == rc, res.stdout[-3000:]
    assert check_findings(res.stdout) == expected, res.stdout[-3000:]
    known = sum(n for title, n in expected.items() if title.startswith(("flows with", "synchronisation records")))
    defects = sum(expected.values()) - known
    summary = res.stdout.splitlines()[-1]
    assert summary.startswith("check: FAILED: %d violations" % defects if defects else "check: OK ("), summary
    if known:
        assert summary.endswith("; %d findings that are known properties of torch.profiler's traces, not "
                                "defects" % known), summary
    # a few lines per kind; --verbose prints every finding
    assert len(res.stdout.splitlines()) <= 2 + 7 * len(expected)
    res = run([DEVTRACE, "check", "--verbose", path])
    assert res.returncode == rc
    lines = [ln for ln in res.stdout.splitlines() if re.match(r"invariant \d: ", ln)]
    assert len(lines) == sum(expected.values())
    # stats reads every one: its kernel and collective instances are the trace's kernels
    with gzip.open(path, "rt", encoding="utf-8") as f:
        kernels = sum(1 for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel")
    res = run([DEVTRACE, "stats", path, "--format", "csv", "--report", "kernels,collectives"])
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert sum(int(r[3]) for r in rows if r and r[0] in ("kernels", "collectives") and r[3].isdigit()) == kernels


def perfetto_capture_args(path):
    """The args of the "devtrace capture" slice of a .pftrace, read with
    Perfetto's own protos: {name: value}."""
    Trace = need("perfetto.protos.perfetto.trace.perfetto_trace_pb2").Trace
    trace = Trace()
    trace.ParseFromString(Path(path).read_bytes())
    for p in trace.packet:
        if p.HasField("track_event") and any(n.name == "devtrace capture" for n in p.interned_data.event_names):
            names = {n.iid: n.name for n in p.interned_data.debug_annotation_names}
            return {names[a.name_iid]: getattr(a, a.WhichOneof("value")) for a in p.track_event.debug_annotations}
    return {}


@needs_emulator()
def test_perfetto_traces_carry_the_losses_backend_window_and_clock(tmp_path):
    """record --format perfetto with the faults scenario's losses: the
    .pftrace holds them by reason with their total, the backend, the capture
    window and the clock fit; check and stats read it and say the same."""
    out = tmp_path / "f.pftrace"
    res = run([DEVTRACE, "record", "--backend", "topspti", "--format", "perfetto", "-o", out, "--",
               EMU_RUN, "--quiet", "--library", TOPSPTI_EMU, SOURCE / "examples" / "faults.scn"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr
    lost = re.search(r"LOST 17 records \((.*)\)", res.stderr)
    assert lost, res.stderr
    printed = {k: int(v) for k, v in (item.split(" ") for item in lost.group(1).split(", "))}
    args = perfetto_capture_args(out)
    loss = {k[len("devtrace.loss."):]: v for k, v in args.items() if k.startswith("devtrace.loss.")}
    assert loss["total"] == 17
    assert {k: v for k, v in loss.items() if v and k != "total"} == printed
    assert args["devtrace.backend"] == "topspti"
    assert args["devtrace.captureWindow.startNs"] < args["devtrace.captureWindow.endNs"]
    assert args["devtrace.clock.samples"] >= 2 and args["devtrace.clock.errorBoundNs"] >= 0
    assert abs(args["devtrace.clock.slope"] - 1) < 1e-3
    res = run([DEVTRACE, "check", out])
    assert res.returncode == 0, res.stdout
    res = run([DEVTRACE, "stats", out, "--format", "csv", "--report", "kernels"])
    assert res.returncode == 0, res.stderr
    assert "loss,total,17" in res.stdout


@needs_emulator()
def test_stats_and_check_read_a_pftrace_as_the_json_of_the_same_session(tmp_path):
    """One scenario recorded as JSON and as Perfetto (plain and gzip): stats
    gives the same device work and losses from each, check passes each.
    (Recorded through the command, so that it runs in the sanitizer builds
    too: the emulated device times are exact, the same in every recording.)"""
    scenario = tmp_path / "s.scn"
    scenario.write_text(
        "vendor topspti\ndevices 1\n"
        "fault vendor_dropped count=3\nfault reversed_timestamps count=2\n"
        "thread \"w\" {\n  repeat 12 {\n"
        "    kernel device=0 stream=1 name=\"k1\" grid=4,1,1 block=1,1,1 dur_us=10\n"
        "    kernel device=0 stream=1 name=\"k2\" grid=4,1,1 block=1,1,1 dur_us=7\n"
        "    memcpy device=0 stream=2 kind=htod bytes=4096 dur_us=5\n"
        "  }\n  sync device=0\n}\n")
    paths = [tmp_path / "t.json", tmp_path / "t.pftrace", tmp_path / "t.pftrace.gz"]
    for path, fmt in zip(paths, ("json", "perfetto", "perfetto.gz")):
        res = run([DEVTRACE, "record", "--backend", "topspti", "--format", fmt, "-o", path, "--",
                   EMU_RUN, "--quiet", "--library", TOPSPTI_EMU, scenario],
                  env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
        assert res.returncode == 0, res.stderr
        assert "LOST 5 records (timestamp_reversed 2, vendor_dropped 3)" in res.stderr, res.stderr
    reports = {}
    for path in paths:
        res = run([DEVTRACE, "check", path])
        assert res.returncode == 0, res.stdout
        res = run([DEVTRACE, "stats", path, "--format", "csv"])
        assert res.returncode == 0, res.stderr
        rows = list(csv.reader(io.StringIO(res.stdout)))
        reports[path] = ({(r[0], r[-1]): (int(r[3]), int(r[2])) for r in rows
                          if r and r[0] in ("kernels", "memcpy", "memset")},
                         {tuple(r) for r in rows if r and r[0] == "loss"})
    work, losses = reports[paths[0]]
    assert {k: n for k, (n, _) in work.items()} == {("kernels", "k1"): 11, ("kernels", "k2"): 11,
                                                     ("memcpy", "Memcpy HtoD (Pageable -> Device)"): 12}
    assert ("loss", "total", "5") in losses
    for path in paths[1:]:
        assert reports[path][1] == losses
        # each recording fits its own clock: a device time may map 1 ns apart
        assert {k: n for k, (n, _) in reports[path][0].items()} == {k: n for k, (n, _) in work.items()}
        for k, (n, total) in reports[path][0].items():
            assert abs(total - work[k][1]) <= n, (k, total, work[k])
    assert "check: a Perfetto protobuf trace devtrace wrote" in run([DEVTRACE, "check", paths[1]]).stdout
    # merge takes JSON only, and says so
    res = run([DEVTRACE, "merge", "-o", tmp_path / "m.json", paths[1]])
    assert res.returncode != 0
    assert "Perfetto protobuf trace: only JSON traces are taken here" in res.stderr
    assert "cannot write" not in res.stderr
    assert not (tmp_path / "m.json").exists()


def test_stats_and_check_name_what_they_cannot_read(tmp_path):
    """Other binary formats and other writers' Perfetto traces: a message that
    names the format seen, not "invalid JSON"."""
    Trace = need("perfetto.protos.perfetto.trace.perfetto_trace_pb2").Trace
    t = Trace()
    p = t.packet.add()
    p.track_descriptor.uuid = 5
    p.track_descriptor.thread.pid = 1
    p.track_descriptor.thread.tid = 2
    cases = {
        "other.pftrace": (t.SerializeToString(), "a Perfetto protobuf trace not written by devtrace"),
        "lib.so": (b"\x7fELF\x02\x01\x01\x00" + bytes(64), "not a trace: an ELF executable or library"),
        "lib.so.gz": (gzip.compress(b"\x7fELF\x02\x01\x01\x00" + bytes(64)),
                      "not a trace: gzip of an ELF executable or library"),
        "t.zip": (b"PK\x03\x04" + bytes(40), "not a trace: a zip archive"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        for cmd in ("stats", "check"):
            res = run([DEVTRACE, cmd, path])
            assert res.returncode == 1, (name, cmd)
            assert message in res.stdout + res.stderr, (name, cmd, res.stdout + res.stderr)
            assert "invalid JSON" not in res.stdout + res.stderr


@pytest.mark.parametrize("backend,env,library", VENDORS)
def test_children_forked_without_exec_write_their_own_traces(tmp_path, backend, env, library):
    """Three children forked without exec launch 5 kernels each, one of them
    after forking a grandchild of its own that launches 5: each process
    writes its own trace, the parent's trace is unchanged, and record's
    summary names every process and its trace. Where the vendor cannot
    record in such a child, the child's trace and the summary count its
    launch calls as lost (forked_child), exactly: 5 each on roctracer
    (whose pool has no consumer thread in the child; nothing waits for it),
    1 each on CUPTI (CUDA fails the child's first launch, and the program
    stops there). Nothing hangs."""
    from conftest import SANITIZERS
    if "address" in SANITIZERS:
        # AddressSanitizer's allocator (GCC 12's runtime) takes a lock of its
        # own with no fork handler: a child forked while another thread of
        # the program allocates waits on it forever, in the sanitizer, before
        # devtrace or the emulator can do anything (seen with gdb: the child's
        # threads all in asan's SizeClassAllocator lock). glibc's malloc,
        # which the plain build uses, is fork-safe: the test runs there.
        pytest.skip("a fork in a threaded program can deadlock inside AddressSanitizer's allocator")
    if not library.exists():
        pytest.skip(f"{library.name} is not built")
    scn = tmp_path / "fork.scn"
    scn.write_text((SOURCE / "examples" / "fork.scn").read_text().replace("vendor topspti", f"vendor {backend}"))
    out = tmp_path / "t.json"
    res = run([DEVTRACE, "record", "--backend", backend, "-o", out, "--", EMU_RUN, "--quiet", "--library", library,
               scn], env={env: str(library)}, timeout=60)
    traces = {}
    for path in tmp_path.glob("t*.json"):
        trace = check_trace(path)
        kernels = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"]
        traces[path.name] = (trace, kernels)
        assert f"wrote {path}" in res.stderr, res.stderr
    assert sorted(traces.pop("t.json")[1]) == ["parent_after", "parent_before"]
    assert "traced 5 processes: 5 traces written" in res.stderr, res.stderr
    assert len(traces) == 4
    notes = [trace["devtrace"]["notes"]["fork"] for trace, _ in traces.values()]
    losses = [trace["devtrace"]["loss"] for trace, _ in traces.values()]
    if backend in ("cupti", "roctracer"):
        per_child = 1 if backend == "cupti" else 5
        # CUDA's failure is the program's: record exits with its status
        assert res.returncode == (4 if backend == "cupti" else 0), res.stdout + res.stderr
        assert all(kernels == [] for _, kernels in traces.values())
        assert all(f"{backend} cannot record in such a child" in note for note in notes)
        assert all(loss["forked_child"] == per_child and loss["total"] == per_child for loss in losses), losses
        assert res.stderr.count(f"LOST {per_child} records (forked_child {per_child})") == 4, res.stderr
    else:
        assert res.returncode == 0, res.stdout + res.stderr
        assert sorted(tuple(kernels) for _, kernels in traces.values()) == sorted(
            (name,) * 5 for name in ("child_a", "child_b", "child_c", "grandchild"))
        assert all("forked without exec from process" in note for note in notes)
        assert all(loss["total"] == 0 for loss in losses)


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
