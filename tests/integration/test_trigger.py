"""devtrace trigger as a user runs it: against a fake listener (the control
channel's listening side with canned answers, fake_listener.c) for every
outcome, the output's handling and the choice of targets."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BUILD, DEVTRACE, EMU_RUN, TOPSPTI_EMU, check_trace, needs_emulator

FAKE = BUILD / "tests" / "integration" / "dt_fake_listener"
CANNED = re.compile(r'^\{"traceEvents": \[\], "fake": \{"pid": (\d+), "request": "(\w+)"\}\}\n$')
# what decides a process's rank and job: none comes from the test's own environment
JOB_AND_RANK = ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK",
                "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
                "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE")


class Listeners:
    """Fake listeners in a control directory of this test's own (a short
    XDG_RUNTIME_DIR: a socket's path must fit sun_path)."""

    def __init__(self):
        self.runtime = Path(tempfile.mkdtemp(prefix="dtt", dir="/tmp"))
        self.procs = []

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in JOB_AND_RANK and k != "LD_PRELOAD"}
        env["XDG_RUNTIME_DIR"] = str(self.runtime)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def start(self, mode="ok", **env):
        log = self.runtime / f"requests.{len(self.procs)}"
        log.touch()
        p = subprocess.Popen([str(FAKE), "--mode", mode, "--log", str(log)], env=self.env(**env),
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        assert line.startswith("listening "), line
        p.sock = Path(line.split(" ", 1)[1].strip())
        p.log = log
        self.procs.append(p)
        return p

    def requests(self, p):
        return [dict(kv.split("=", 1) for kv in line.split()) for line in p.log.read_text().splitlines()]

    def trigger(self, *args, cwd=None, timeout=60, **env):
        return subprocess.run([str(DEVTRACE), "trigger", *map(str, args)], env=self.env(**env), cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)


@pytest.fixture
def listeners():
    ls = Listeners()
    yield ls
    ls.close()


def leftovers(folder):
    """Temporary files a trigger left beside its outputs."""
    return sorted(p.name for p in Path(folder).iterdir() if ".tmp." in p.name)


def canned(path):
    m = CANNED.match(Path(path).read_text())
    assert m, Path(path).read_text()
    return int(m.group(1)), m.group(2)


def test_help_lists_every_exit_status():
    res = subprocess.run([str(DEVTRACE), "trigger", "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    table = res.stdout.split("Exit status")[1]
    for status, word in [(0, "every trace was written"), (1, "partial"), (2, "usage"), (3, "no such listener"), (4, "busy"), (5, "cannot arm"),
                         (6, "timeout"), (7, "bad request"), (8, "version"), (9, "untrusted"), (10, "I/O")]:
        assert re.search(rf"^  {status} +{word}", table, re.M), (status, table)


def test_a_capture_writes_the_trace_and_says_where_and_what_was_lost(listeners, tmp_path):
    p = listeners.start(RANK=2)
    out = tmp_path / "out.json"
    res = listeners.trigger(p.pid, "--duration", "0.25", "--timeout", "5", "-o", out)
    assert res.returncode == 0, res.stderr
    assert canned(out) == (p.pid, "capture")
    assert f"devtrace: process {p.pid} (rank 2, fake): wrote {out}: 42 events; LOST 3 records (dropped 3)" \
        in res.stderr
    assert listeners.requests(p) == [{"type": "capture", "duration_ns": "250000000", "steps": "0",
                                      "step_multiple": "0", "timeout_ns": "5000000000", "format": "json"}]
    assert leftovers(tmp_path) == []
    assert oct(out.stat().st_mode & 0o777) == oct(0o644 & ~current_umask())


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_steps_and_the_format_travel_with_the_request(listeners, tmp_path):
    p = listeners.start()
    res = listeners.trigger(p.pid, "--steps", "3", "--step-multiple", "10", "-o", tmp_path / "t.pftrace.gz")
    assert res.returncode == 0, res.stderr
    assert listeners.requests(p) == [{"type": "capture", "duration_ns": "0", "steps": "3", "step_multiple": "10",
                                      "timeout_ns": "60000000000", "format": "perfetto.gz"}]
    res = listeners.trigger(p.pid, "--steps", "3", "--format", "json.gz", "-o", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert listeners.requests(p)[1]["format"] == "json.gz"
    assert listeners.requests(p)[1]["step_multiple"] == "0"  # one process: the next step boundary
    assert (tmp_path / "t.gz").exists()  # as record names it


def test_the_default_name_carries_the_rank_or_the_pid(listeners, tmp_path):
    ranked, unranked = listeners.start(RANK=5), listeners.start()
    assert listeners.trigger(ranked.pid, "--duration", "0.01", cwd=tmp_path).returncode == 0
    assert listeners.trigger(unranked.pid, "--duration", "0.01", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["devtrace.rank5.json",
                                                                  f"devtrace.{unranked.pid}.json"])
    assert canned(tmp_path / "devtrace.rank5.json")[0] == ranked.pid


@pytest.mark.parametrize("mode, status, message", [
    ("busy", 4, "busy: a capture or dump is already running there: the fake says busy"),
    ("cannot_arm", 5, "cannot arm the vendor now: the fake says cannot_arm"),
    ("timeout", 6, "timed out: the fake says timeout"),
    ("hang", 6, "timed out: no reply within 2.4 s"),
    ("nowrite", 10, "no trace: the process wrote no trace: the fake writes nothing"),
    ("crash", 10, "no trace: the connection broke before the reply: the process exited or crashed"),
])
def test_each_failure_has_its_exit_status_and_message_and_leaves_no_file(listeners, tmp_path, mode, status,
                                                                         message):
    p = listeners.start(mode, RANK=1)
    out = tmp_path / "out.json"
    res = listeners.trigger(p.pid, "--duration", "0.2", "--timeout", "0.2", "-o", out)
    assert res.returncode == status, res.stderr
    assert f"devtrace trigger: process {p.pid} (rank 1): {message}" in res.stderr
    assert len(listeners.requests(p)) == 1
    assert sorted(x.name for x in tmp_path.iterdir()) == []  # neither the trace nor a temporary file
    if mode == "crash":
        assert p.wait(timeout=10) == 70


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_trigger_leaves_no_file(listeners, tmp_path, sig):
    p = listeners.start("hang")
    out = tmp_path / "out.json"
    trig = subprocess.Popen([str(DEVTRACE), "trigger", str(p.pid), "-o", str(out)], env=listeners.env(),
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not listeners.requests(p) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert leftovers(tmp_path) != []  # the temporary file, passed with the request
    trig.send_signal(sig)
    trig.wait(timeout=30)
    assert trig.returncode == -sig
    assert list(tmp_path.iterdir()) == []


def test_a_failed_capture_keeps_an_earlier_trace_of_that_name(listeners, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("earlier")
    p = listeners.start("crash")
    assert listeners.trigger(p.pid, "-o", out).returncode == 10
    assert out.read_text() == "earlier"
    assert leftovers(tmp_path) == []


def test_no_such_listener(listeners, tmp_path):
    listeners.start()  # another process listens: it is not the one asked
    res = listeners.trigger(os.getpid(), "-o", tmp_path / "x.json")
    assert res.returncode == 3, res.stderr
    assert f"process {os.getpid()}: no such listener: no process {os.getpid()} listens for devtrace requests" \
        in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_stale_socket_is_no_listener_and_is_removed(listeners, tmp_path):
    p = listeners.start()
    p.kill()  # SIGKILL: the socket stays behind
    p.wait()
    assert p.sock.exists()
    res = listeners.trigger(p.pid, "-o", tmp_path / "x.json")
    assert res.returncode == 3, res.stderr
    assert "no such listener" in res.stderr
    assert not p.sock.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["missing/x.json", "a_folder"])
def test_an_output_that_cannot_be_written_asks_nothing(listeners, tmp_path, where):
    (tmp_path / "a_folder").mkdir()
    p = listeners.start()
    res = listeners.trigger(p.pid, "-o", tmp_path / where)
    assert res.returncode == 2, res.stderr
    assert f"devtrace trigger: cannot write the trace {tmp_path / where}" in res.stderr
    assert listeners.requests(p) == []
    assert leftovers(tmp_path) == []


def test_dump_sends_dump_with_the_same_output_handling(listeners, tmp_path):
    p = listeners.start(RANK=0)
    res = listeners.trigger(p.pid, "--dump", "-o", tmp_path / "fr.json.gz")
    assert res.returncode == 0, res.stderr
    assert listeners.requests(p) == [{"type": "dump", "duration_ns": "0", "steps": "0", "step_multiple": "0",
                                      "timeout_ns": "0", "format": "json.gz"}]
    assert canned(tmp_path / "fr.json.gz") == (p.pid, "dump")
    bad = listeners.start("busy")
    assert listeners.trigger(bad.pid, "--dump", "-o", tmp_path / "no.json").returncode == 4
    assert not (tmp_path / "no.json").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("args, message", [
    ([], "name one target"), (["1", "2"], "unexpected argument 2"), (["--all", "--job"], "name one target"),
    (["1", "--duration", "1", "--steps", "2"], "--duration and --steps exclude each other"),
    (["1", "--step-multiple", "4"], "--step-multiple goes with --steps"),
    (["1", "--dump", "--steps", "2"], "--dump writes the flight recorder's window"),
    (["1", "--duration", "0"], "--duration takes a number of seconds above 0 and at most 10000000, not 0"),
    (["1", "--duration", "x"], "--duration takes a number of seconds above 0 and at most 10000000, not x"),
    (["1", "--timeout", "1e8"], "--timeout takes a number of seconds above 0 and at most 10000000, not 1e8"),
    (["1", "--steps", "-3"], "--steps takes a whole number from 1 to 1000000000, not -3"),
    (["1", "--steps", "1000000001"], "--steps takes a whole number from 1 to 1000000000, not 1000000001"),
    (["1", "--steps", "2", "--step-multiple", "0"], "--step-multiple takes a whole number from 1 to 1000000000, not 0"),
    (["1", "--format", "xml"], "--format must be json, json.gz, perfetto or perfetto.gz, not xml"),
    (["1", "-o"], "-o needs a value"), (["--list", "--all"], "--list takes no other option")])
def test_usage_errors(listeners, args, message):
    res = listeners.trigger(*args)
    assert res.returncode == 2, res.stderr
    assert f"devtrace trigger: {message}" in res.stderr


def test_all_asks_every_listener_and_names_the_traces_by_rank(listeners, tmp_path):
    a = listeners.start(RANK=0, SLURM_JOB_ID=100)
    b = listeners.start(RANK=1, SLURM_JOB_ID=100)
    c = listeners.start()  # no rank: named by its pid
    d = listeners.start(RANK=0, SLURM_JOB_ID=200)
    res = listeners.trigger("--all", "--duration", "0.1", "-o", tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    assert canned(tmp_path / "t.rank0.json")[0] == a.pid
    assert canned(tmp_path / "t.rank1.json")[0] == b.pid
    assert canned(tmp_path / f"t.{c.pid}.json")[0] == c.pid
    assert canned(tmp_path / f"t.rank0.{d.pid}.json")[0] == d.pid
    assert len(list(tmp_path.iterdir())) == 4
    assert "4 of 4 processes wrote a trace" in res.stderr
    # one merge per job: the traces of two jobs are never merged together
    assert re.findall(r"devtrace merge -o MERGED (.*)\n", res.stderr) == [
        f"{tmp_path}/t.rank0.json {tmp_path}/t.rank1.json"], res.stderr


def test_the_worst_outcome_is_the_exit_status(listeners, tmp_path):
    listeners.start(RANK=0)
    listeners.start("busy", RANK=1)
    listeners.start("cannot_arm", RANK=2)
    res = listeners.trigger("--all", "--duration", "0.1", "-o", tmp_path / "t.json")
    assert res.returncode == 5, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.rank0.json"]
    assert "1 of 3 processes wrote a trace" in res.stderr
    assert "(rank 1): busy" in res.stderr and "(rank 2): cannot arm" in res.stderr


def test_two_listeners_of_one_rank_get_two_names(listeners, tmp_path):
    a, b = listeners.start(RANK=0, SLURM_JOB_ID=1), listeners.start(RANK=0, SLURM_JOB_ID=2)
    res = listeners.trigger("--all", "--duration", "0.1", "-o", tmp_path / "t.json")
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2 and "t.rank0.json" in names
    second = next(n for n in names if n != "t.rank0.json")
    assert {canned(tmp_path / "t.rank0.json")[0], canned(tmp_path / second)[0]} == {a.pid, b.pid}
    assert second in (f"t.rank0.{a.pid}.json", f"t.rank0.{b.pid}.json")


def test_job_picks_the_listeners_of_one_job_and_aligns_their_steps(listeners, tmp_path):
    a = listeners.start(RANK=0, SLURM_JOB_ID=100)
    b = listeners.start(RANK=1, SLURM_JOB_ID=100)
    other = listeners.start(RANK=0, SLURM_JOB_ID=200)
    res = listeners.trigger("--job", "100", "--steps", "4", "-o", tmp_path / "j.json")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.rank0.json", "j.rank1.json"]
    assert canned(tmp_path / "j.rank0.json")[0] == a.pid and canned(tmp_path / "j.rank1.json")[0] == b.pid
    for p in (a, b):
        assert [(r["steps"], r["step_multiple"]) for r in listeners.requests(p)] == [("4", "4")]
    assert listeners.requests(other) == []
    # the full name as --list shows it; this shell's own job
    assert listeners.trigger("--job=slurm:200", "--dump", "-o", tmp_path / "o.json").returncode == 0
    assert listeners.trigger("--job", "--dump", "-o", tmp_path / "s.json", SLURM_JOB_ID=200).returncode == 0
    assert [r["type"] for r in listeners.requests(other)] == ["dump", "dump"]
    assert listeners.requests(a) == listeners.requests(b) and len(listeners.requests(a)) == 1
    # no job of its own and listeners of two jobs: which one is not guessed
    res = listeners.trigger("--job", "--dump", "-o", tmp_path / "n.json")
    assert res.returncode == 2, res.stderr
    assert "name one with --job JOB" in res.stderr
    # a job nobody is in
    res = listeners.trigger("--job", "300", "--dump", "-o", tmp_path / "n.json")
    assert res.returncode == 3, res.stderr
    assert "no process of this user listens in job 300" in res.stderr


def test_job_without_a_name_takes_the_one_job_listening(listeners, tmp_path):
    a = listeners.start(RANK=0, SLURM_JOB_ID=100)
    listeners.start()  # in no job: never part of one
    res = listeners.trigger("--job", "--duration", "0.1", "-o", tmp_path / "j.json")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.rank0.json"]
    assert canned(tmp_path / "j.rank0.json")[0] == a.pid


def test_all_with_no_listener(listeners, tmp_path):
    res = listeners.trigger("--all", "-o", tmp_path / "x.json")
    assert res.returncode == 3, res.stderr
    assert "no such listener" in res.stderr


# ---------------------------------------------------------------------------
# End to end: `devtrace record --on-demand` of the emulator's runner
# ---------------------------------------------------------------------------
LONG_SCENARIO = """vendor topspti
devices 1
thread "train" {
  repeat %d {
    step
    range "step" {
      kernel device=0 stream=1 name="k" grid=1,1,1 block=32,1,1 dur_us=200
    }
    sleep_us 5000
  }
}
"""


def record_on_demand(listeners, tmp_path, name, repeat=600, **env):
    """`devtrace record --on-demand` of a runner that begins a step (dt_step),
    then launches a kernel in a range, every 5 ms for about repeat x 5 ms;
    returns the record and the runner's pid once
    the runner listens."""
    scenario = tmp_path / f"{name}.scn"
    scenario.write_text(LONG_SCENARIO % repeat)
    before = set((listeners.runtime / "devtrace").glob("*.sock"))
    rec = subprocess.Popen([str(DEVTRACE), "record", "--on-demand", "-o", str(tmp_path / f"{name}.unused.json"),
                            "--", str(EMU_RUN), str(scenario)],
                           env=listeners.env(DEVTRACE_TOPSPTI_LIBRARY=TOPSPTI_EMU, **env),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listeners.procs.append(rec)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and rec.poll() is None:
        new = set((listeners.runtime / "devtrace").glob("*.sock")) - before
        if new:
            return rec, int(new.pop().name.split(".")[0])
        time.sleep(0.02)
    out, err = rec.communicate(timeout=30)
    pytest.fail(f"the runner never listened: {out}{err}")


def events_outside_the_window(trace):
    window = trace["devtrace"]["captureWindow"]
    base = trace["baseTimeNanoseconds"]
    outside, inside = [], 0
    for e in trace["traceEvents"]:
        if e.get("ph") != "X":
            continue
        start = base + round(float(e["ts"]) * 1000)
        end = start + round(float(e.get("dur", 0)) * 1000)
        if start < window["startNs"] or end > window["endNs"]:
            outside.append(e)
        else:
            inside += 1
    return outside, inside


@needs_emulator()
def test_end_to_end_a_duration_window_of_a_running_program(listeners, tmp_path):
    rec, pid = record_on_demand(listeners, tmp_path, "one")
    out = tmp_path / "x.json"
    res = listeners.trigger(pid, "--duration", "0.5", "-o", out)
    assert res.returncode == 0, res.stderr
    assert re.search(rf"^devtrace: process {pid} \(topspti\): wrote {re.escape(str(out))}: \d+ events; "
                     r"(nothing lost|LOST \d+ records \(outside_window \d+\))$", res.stderr, re.M), res.stderr
    trace = check_trace(out)
    window = trace["devtrace"]["captureWindow"]
    assert window["endNs"] - window["startNs"] == 500_000_000
    outside, inside = events_outside_the_window(trace)
    assert outside == []
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) >= 20  # one every 5.2 ms for 0.5 s, on a loaded machine too
    assert leftovers(tmp_path) == []
    _, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err


@needs_emulator()
def test_end_to_end_a_steps_window(listeners, tmp_path):
    rec, pid = record_on_demand(listeners, tmp_path, "steps")
    out = tmp_path / "s.json"
    res = listeners.trigger(pid, "--steps", "3", "--timeout", "20", "-o", out)
    assert res.returncode == 0, res.stderr
    trace = check_trace(out)
    outside, _ = events_outside_the_window(trace)
    assert outside == []
    # each step is one range around one kernel, well inside the step
    assert len([e for e in trace["traceEvents"] if e.get("cat") == "kernel"]) == 3
    assert len([e for e in trace["traceEvents"] if e.get("cat") == "user_annotation"]) == 3
    rec.communicate(timeout=60)
    assert rec.returncode == 0


@needs_emulator()
def test_end_to_end_steps_that_do_not_come_in_time(listeners, tmp_path):
    rec, pid = record_on_demand(listeners, tmp_path, "late", repeat=300)
    out = tmp_path / "late.json"
    # the window began: what came until the timeout is kept, as partial
    res = listeners.trigger(pid, "--steps", "100000", "--timeout", "0.5", "-o", out)
    assert res.returncode == 1, res.stderr
    assert f"devtrace: process {pid} (topspti): wrote {out}: " in res.stderr
    assert "partial: the window's last step did not begin before the timeout: the trace holds what came until " \
           "then" in res.stderr
    assert len([e for e in check_trace(out)["traceEvents"] if e.get("cat") == "kernel"]) >= 10
    rec.communicate(timeout=60)


@needs_emulator()
def test_end_to_end_two_ranks_of_a_job_then_merge(listeners, tmp_path):
    job = f"e2e{os.getpid()}"
    for rank in (0, 1):
        record_on_demand(listeners, tmp_path, f"r{rank}", SLURM_JOB_ID=job, RANK=rank, WORLD_SIZE=2)
    # the ranks start at a step that is a multiple of 2 and capture 2 steps
    res = listeners.trigger("--job", job, "--steps", "2", "--timeout", "20", "-o", tmp_path / "m.json")
    assert res.returncode == 0, res.stderr
    outs = [tmp_path / "m.rank0.json", tmp_path / "m.rank1.json"]
    assert "2 of 2 processes wrote a trace" in res.stderr
    assert f"devtrace merge -o MERGED {outs[0]} {outs[1]}" in res.stderr
    for o in outs:
        trace = check_trace(o)
        outside, _ = events_outside_the_window(trace)
        assert outside == []
        assert len([e for e in trace["traceEvents"] if e.get("cat") == "kernel"]) == 2
    merged = tmp_path / "merged.json"
    res = subprocess.run([str(DEVTRACE), "merge", "-o", str(merged), *map(str, outs)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    trace = check_trace(merged)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"}
    assert any("rank 0" in n for n in names) and any("rank 1" in n for n in names), names
    for rec in listeners.procs:
        rec.communicate(timeout=60)
        assert rec.returncode == 0
