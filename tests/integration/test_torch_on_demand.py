"""devtrace.torch.listen(): a trigger captures N optimizer steps of a running
training loop through torch.profiler, with devtrace's plugin feeding it the
emulated device's kernels, started and stopped at step boundaries; the
trace goes to the descriptor the client passed. Single process, and two
ranks under torchrun (gloo, CPU) that must capture the same steps.

The requests come from `devtrace trigger PID|--job --steps N|--duration S`,
which opens the output and passes its descriptor."""
import array
import gzip
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DEVTRACE, TOPSPTI_EMU, need, needs_emulator, run

pytestmark = needs_emulator()

WORKLOAD = Path(__file__).resolve().parent / "torch_listen_workload.py"
STEP = re.compile(r"^ProfilerStep#(\d+)$")

WROTE = re.compile(r"^devtrace: process (\d+) \(([^)]*)\): wrote (.+): (\d+) events; (.*)$", re.M)


def wrote(res):
    """{path: (events, what was lost)} from trigger's lines."""
    return {m.group(3): (int(m.group(4)), m.group(5)) for m in WROTE.finditer(res.stderr)}


# ---- the training loop ----------------------------------------------------
class Loop:
    """torch_listen_workload.py, running (one process, or torchrun's ranks)."""

    def __init__(self, tmp_path, nproc=0, extra=(), control=None):
        need("torch")
        self.dir = tmp_path / "loop"
        self.control = control or tmp_path / "run"  # XDG_RUNTIME_DIR: the sockets go to run/devtrace
        self.control.mkdir(mode=0o700, exist_ok=True)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.control), DEVTRACE_TOPSPTI_LIBRARY=str(TOPSPTI_EMU))
        env.pop("LD_PRELOAD", None)
        cmd = [WORKLOAD, "--emulator", TOPSPTI_EMU, "--backend", "topspti", "--dir", self.dir, *extra]
        if nproc:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
                   "--master_port", str(_free_port()), *cmd]
        else:
            cmd = [sys.executable, *cmd]
        self.nproc = max(nproc, 1)
        self.proc = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.pids = [self._ready(rank) for rank in range(self.nproc)]

    def _ready(self, rank):
        path = self.dir / ("ready.%d" % rank)
        end = time.monotonic() + 240
        while not path.exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.proc.kill()
                pytest.fail("the training loop did not start listening:\n" + self.proc.communicate()[0][-4000:])
            time.sleep(0.1)
        return int(path.read_text())

    def trigger(self, *args, target=None):
        """devtrace trigger PID ARGS (or TARGET ARGS), over this loop's sockets."""
        return run([DEVTRACE, "trigger", *(target or [str(self.pids[0])]), *args],
                   env={"XDG_RUNTIME_DIR": str(self.control)}, timeout=180)

    def finish(self):
        (self.dir / "stop").write_text("")
        output = self.proc.communicate(timeout=120)[0]
        assert self.proc.returncode == 0, output[-4000:]
        return [json.loads((self.dir / ("result.%d.json" % r)).read_text()) for r in range(self.nproc)], output

    def kill(self):
        """The loop and its ranks (torchrun's workers outlive a killed agent)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.communicate()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def loop(tmp_path):
    made = []

    def start(**kw):
        made.append(Loop(tmp_path, **kw))
        return made[-1]

    yield start
    for lp in made:
        lp.kill()


def profiler_steps(trace):
    """{n: span} of the ProfilerStep#n spans torch wrote."""
    steps = {}
    for e in trace["traceEvents"]:
        m = STEP.match(str(e.get("name", "")))
        if m and e.get("ph") == "X" and e.get("cat") == "user_annotation":
            assert int(m.group(1)) not in steps, "ProfilerStep#%s twice" % m.group(1)
            steps[int(m.group(1))] = e
    return steps


def kernels(trace):
    return sorted(e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel")


def load(path):
    if str(path).endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_capture(res, path, steps):
    """trigger wrote `path`, said how many events and that nothing was
    lost; the trace holds exactly `steps` consecutive steps, torch's ops in
    them, and the device's kernels of those steps and of no other."""
    assert res.returncode == 0, res.stdout + res.stderr
    trace = load(path)
    events, lost = wrote(res)[str(path)]
    assert events == sum(1 for e in trace["traceEvents"] if e.get("ph") != "M")
    assert lost == "nothing lost"
    got = profiler_steps(trace)
    first = min(got)
    assert sorted(got) == list(range(first, first + steps))
    ops = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    assert {"aten::linear", "devtrace_listen::emu_step", "aten::sum"} <= ops, sorted(ops)
    # each step holds its optimizer step whole: the step boundary is after
    # torch's Optimizer.step scope, never inside it
    opt_steps = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"] == "Optimizer.step#SGD.step"]
    assert len(opt_steps) == steps
    for e in opt_steps:
        assert sum(1 for s in got.values() if s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]) == 1
    # the kernel of step n is launched in step n: torch's steps and the device agree
    assert kernels(trace) == sorted("emu_step%d" % n for n in got)
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            n = int(e["name"][len("emu_step"):])
            assert got[n]["ts"] <= e["ts"], "a step's kernel begins before its step"
    assert trace["devtrace"]["backend"] == "topspti" and trace["devtrace"]["loss"]["total"] == 0
    return sorted(got)


def test_a_trigger_captures_n_steps_through_torch_profiler(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.json"
    first = check_capture(lp.trigger("--steps", "3", "-o", out), out, 3)
    # the program goes on, and listens for the next request
    out2 = tmp_path / "out2.json.gz"
    second = check_capture(lp.trigger("--steps", "2", "-o", out2), out2, 2)
    assert second[0] > first[-1]
    results, _ = lp.finish()
    assert results[0]["captures"] == 2


def test_the_capture_begins_at_a_step_multiple(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.json"
    got = check_capture(lp.trigger("--steps", "2", "--step-multiple", "7", "-o", out), out, 2)
    assert got[0] % 7 == 0
    lp.finish()


def test_a_duration_ends_at_the_first_boundary_after_it(loop, tmp_path):
    lp = loop(extra=["--step-sleep", "0.02"])
    out = tmp_path / "out.json"
    res = lp.trigger("--duration", "0.4", "-o", out)
    steps = profiler_steps(load(out))
    n = sorted(steps)
    assert len(n) >= 2
    check_capture(res, out, len(n))
    first, last = steps[n[0]], steps[n[-1]]
    # steps are whole: the window ends with the step during which 400 ms passed
    assert last["ts"] + last["dur"] - first["ts"] >= 400_000 - 1000
    assert last["ts"] - first["ts"] < 400_000 + 1000
    lp.finish()


def raw_capture(control, pid, payload, out):
    """A CAPTURE of payload as another client might send it: the reply's payload."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(control / "devtrace" / f"{pid}.sock"))
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    s.sendmsg([b"DT\x01\x02" + struct.pack("<I", len(payload)) + payload],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)
    reply = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        reply += chunk
    return reply[8:].decode()


def test_what_the_loop_cannot_honour_is_refused_and_the_loop_goes_on(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.pftrace"
    res = lp.trigger("--steps", "2", "-o", out)
    assert res.returncode == 7, res.stderr  # bad request
    assert "torch.profiler writes Chrome JSON" in res.stderr
    assert not out.exists()
    # numbers past their limits, the limit named
    assert raw_capture(lp.control, lp.pids[0], b"duration_ns=18446744073709551615\n", tmp_path / "raw.json") == \
        "code=bad_request\ntext=duration_ns=18446744073709551615 is over the limit of 10000000000000000 ns (10000000 s)"
    res = lp.trigger("--steps", "18446744073709551615", "-o", tmp_path / "big.json")
    assert res.returncode == 2 and "--steps takes a whole number from 1 to 1000000000" in res.stderr, res.stderr
    # --list names the backend the loop's captures use, after one
    out2 = tmp_path / "out.json"
    res = lp.trigger("--steps", "1", "-o", out2)
    check_capture(res, out2, 1)
    assert wrote(res)[str(out2)] and re.search(rf"^devtrace: process {lp.pids[0]} \(topspti\): wrote ", res.stderr,
                                                   re.M), res.stderr
    listing = run([DEVTRACE, "trigger", "--list"], env={"XDG_RUNTIME_DIR": str(lp.control)})
    assert [line.split()[4] for line in listing.stdout.splitlines()[1:]] == ["topspti"], listing.stdout
    lp.finish()


def test_a_trigger_while_the_program_profiles_itself_is_busy(loop, tmp_path):
    """The program runs torch.profiler over its first 40 steps: a trigger
    then is answered busy, the training loop raises nothing, and a trigger
    after that captures."""
    lp = loop(extra=["--profile-first", "40"])
    out = tmp_path / "out.json"
    res = lp.trigger("--steps", "2", "-o", out)
    assert res.returncode == 4, res.stderr  # busy
    assert "torch.profiler is already running" in res.stderr
    assert not out.exists()
    end = time.monotonic() + 60
    while not (lp.dir / "own_done").exists():  # the program's own run ended
        assert time.monotonic() < end
        time.sleep(0.05)
    got = check_capture(lp.trigger("--steps", "2", "-o", out), out, 2)
    assert got[0] > 40
    results, output = lp.finish()
    assert "Traceback" not in output


def test_two_ranks_under_torchrun_capture_the_same_steps(loop, tmp_path):
    """devtrace trigger --job --steps 2: both ranks begin at the same step
    (a multiple of 2) and capture the same two. The ranks are held between
    two steps while the requests reach them, so that both take theirs at
    the same boundary: a request that reached one rank a step before the
    other would begin a multiple later there (docs/on-demand.md)."""
    lp = loop(nproc=2, extra=["--step-sleep", "0.1"])
    (lp.dir / "hold").write_text("")
    end = time.monotonic() + 120
    while not all((lp.dir / ("held.%d" % r)).exists() for r in range(2)):
        assert time.monotonic() < end and lp.proc.poll() is None
        time.sleep(0.05)
    held = int((lp.dir / "held.0").read_text())
    out = tmp_path / "t.json"
    trigger = subprocess.Popen([str(DEVTRACE), "trigger", "--job", "--steps", "2", "-o", str(out)],
                               env=dict(os.environ, XDG_RUNTIME_DIR=str(lp.control)), stderr=subprocess.PIPE,
                               text=True)
    time.sleep(3)  # both requests wait in their mailboxes
    (lp.dir / "hold").unlink()
    stderr = trigger.communicate(timeout=120)[1]
    res = subprocess.CompletedProcess(trigger.args, trigger.returncode, "", stderr)
    got = [check_capture(res, tmp_path / ("t.rank%d.json" % r), 2) for r in range(2)]
    # taken at the end of step held + 1; the first multiple of 2 after it
    first = held + 2 + (held % 2)
    assert got[0] == got[1] == [first, first + 1]
    results, _ = lp.finish()
    assert results[0]["steps"] == results[1]["steps"]


def test_two_torchrun_jobs_are_two_jobs(loop, tmp_path):
    """Plain torchrun sets TORCHELASTIC_RUN_ID=none for every job: two jobs
    running at once on one machine (2 ranks and 1) are told apart by their
    master's port, `--job` without JOB names neither, and each is captured
    alone."""
    two = loop(nproc=2)
    one = Loop(tmp_path / "other", nproc=1, control=two.control)
    try:
        listing = run([DEVTRACE, "trigger", "--list"], env={"XDG_RUNTIME_DIR": str(two.control)})
        jobs = {int(line.split()[0]): line.split()[6] for line in listing.stdout.splitlines()[1:]}
        assert set(jobs) == set(two.pids + one.pids), listing.stdout
        job, other = jobs[two.pids[0]], jobs[one.pids[0]]
        assert jobs[two.pids[1]] == job and job != other, listing.stdout
        assert re.fullmatch(r"master:\S+:\d+", job) and re.fullmatch(r"master:\S+:\d+", other), listing.stdout
        out = tmp_path / "t.json"
        res = two.trigger("--steps", "1", "-o", out, target=["--job"])
        assert res.returncode == 2 and "name one with --job JOB" in res.stderr, res.stderr
        res = two.trigger("--steps", "1", "-o", out, target=["--job", job])
        assert res.returncode == 0, res.stderr
        assert sorted(p.name for p in tmp_path.glob("t.*")) == ["t.rank0.json", "t.rank1.json"]
        assert f"devtrace merge -o MERGED {tmp_path}/t.rank0.json {tmp_path}/t.rank1.json" in res.stderr
        one.finish()
    finally:
        one.kill()
    two.finish()


def test_steps_that_outlast_the_timeout_write_what_was_captured(loop, tmp_path):
    """--steps 1000 with --timeout 1: the capture ends at the first boundary
    after the timeout; its steps are kept, and the line says it is partial
    and why (exit status 1)."""
    lp = loop()
    out = tmp_path / "out.json"
    res = lp.trigger("--steps", "1000", "--timeout", "1", "-o", out)
    n = sorted(profiler_steps(load(out)))
    assert 2 <= len(n) < 1000
    assert res.returncode == 1, res.stderr
    events, lost = wrote(res)[str(out)]
    assert lost == "partial: the capture timed out after %d of 1000 steps; nothing lost" % len(n), lost
    lp.finish()


def test_the_program_ending_mid_capture_writes_the_steps_so_far(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.json"
    trigger = subprocess.Popen([str(DEVTRACE), "trigger", str(lp.pids[0]), "--steps", "1000", "-o", str(out)],
                               env=dict(os.environ, XDG_RUNTIME_DIR=str(lp.control)), stderr=subprocess.PIPE,
                               text=True)
    time.sleep(1.5)
    lp.finish()  # the loop ends; stop_listening() at its end finishes the capture
    stderr = trigger.communicate(timeout=60)[1]
    assert trigger.returncode == 1, stderr  # partial: kept
    n = sorted(profiler_steps(load(out)))
    assert 1 <= len(n) < 1000 and n == list(range(n[0], n[0] + len(n)))
    # the last step is the one under way when the loop ended
    assert "partial: listening stopped during step %d, after %d whole steps; nothing lost" % (n[-1], len(n) - 1) \
        in stderr


API_SCRIPT = r"""
import json, os, sys, tempfile
import torch
import devtrace, devtrace.torch
from devtrace.torch import _listen

out = {}
try:
    devtrace.torch.listen(backend=None, schedule=None)
except TypeError as e:
    out["schedule"] = str(e)
gen, disc = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
opt_d = torch.optim.Adam(disc.parameters(), lr=0.1)
devtrace.torch.listen(backend=None)
try:
    devtrace.torch.listen(backend=None)
except devtrace.DevtraceError as e:
    out["twice"] = e.status
out["listening"] = devtrace.listening()
for i in range(5):  # two optimizers step once each per iteration
    for m, o in ((disc, opt_d), (gen, opt_g)):
        m(torch.ones(2)).sum().backward()
        o.step()
out["steps"] = _listen.listener().count
out["wrapped"] = ["step" in vars(opt_d), "step" in vars(opt_g)]
devtrace.torch.stop_listening()
out["unwrapped"] = "step" in vars(opt_d)
out["after"] = devtrace.listening()
print(json.dumps(out))
"""


def test_listen_counts_one_optimizer_and_undoes_itself(tmp_path):
    """With two optimizers the first that steps counts the steps (once per
    iteration); stop_listening() restores its step and stops listening;
    listening twice and a schedule of one's own are refused."""
    need("torch")
    control = tmp_path / "run"
    control.mkdir(mode=0o700)
    res = run([sys.executable, "-c", API_SCRIPT], env={"XDG_RUNTIME_DIR": str(control)}, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert "schedule is the listener's own" in out["schedule"]
    assert out["twice"] == "DT_ERR_STATE"
    assert out["listening"] is True and out["after"] is False
    assert out["steps"] == 5
    assert out["wrapped"] == [True, False] and out["unwrapped"] is False
