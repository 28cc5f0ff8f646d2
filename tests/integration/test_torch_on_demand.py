"""devtrace.torch.listen(): a trigger captures N optimizer steps of a running
training loop through torch.profiler, with devtrace's plugin feeding it the
emulated device's kernels, started and stopped at step boundaries; the
trace goes to the descriptor the client passed. Single process, and two
ranks under torchrun (gloo, CPU) that must capture the same steps.

The requests are sent as `devtrace trigger` sends them (the control
protocol of src/protocol/control.h: a CAPTURE message with the output's
descriptor passed by SCM_RIGHTS), by a minimal client here."""
import gzip
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import TOPSPTI_EMU, need, needs_emulator

pytestmark = needs_emulator()

WORKLOAD = Path(__file__).resolve().parent / "torch_listen_workload.py"
STEP = re.compile(r"^ProfilerStep#(\d+)$")

# ---- a minimal client of the control protocol -----------------------------
CAPTURE, OK, ERR = 2, 4, 5


def _message(kind, keys):
    payload = "".join("%s=%s\n" % kv for kv in keys.items()).encode()
    return b"DT" + bytes([1, kind]) + struct.pack("<I", len(payload)) + payload


def _read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the listener closed the connection")
        data += chunk
    return data


def capture(control_dir, pid, out, timeout=60, **keys):
    """Sends CAPTURE with `keys` and out's descriptor; the reply as
    {"type": "OK"|"ERR", key: value}."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(Path(control_dir) / ("%d.sock" % pid)))
            socket.send_fds(s, [_message(CAPTURE, keys)], [fd])
            head = _read_exact(s, 8)
            assert head[:3] == b"DT\x01", head
            payload = _read_exact(s, struct.unpack("<I", head[4:])[0]).decode()
    finally:
        os.close(fd)
    reply = {"type": {OK: "OK", ERR: "ERR"}[head[3]]}
    text = payload.find("text=")
    if text >= 0 and (text == 0 or payload[text - 1] == "\n"):
        reply["text"] = payload[text + 5:]
        payload = payload[:text]
    for line in payload.splitlines():
        k, _, v = line.partition("=")
        reply[k] = v
    return reply


# ---- the training loop ----------------------------------------------------
class Loop:
    """torch_listen_workload.py, running (one process, or torchrun's ranks)."""

    def __init__(self, tmp_path, nproc=0, extra=()):
        need("torch")
        self.dir = tmp_path / "loop"
        self.control = tmp_path / "run"  # XDG_RUNTIME_DIR: the sockets go to run/devtrace
        self.control.mkdir(mode=0o700)
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
                                     stderr=subprocess.STDOUT, text=True)
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

    @property
    def sockets(self):
        return self.control / "devtrace"

    def capture(self, out, rank=0, **keys):
        return capture(self.sockets, self.pids[rank], out, **keys)

    def finish(self):
        (self.dir / "stop").write_text("")
        output = self.proc.communicate(timeout=120)[0]
        assert self.proc.returncode == 0, output[-4000:]
        return [json.loads((self.dir / ("result.%d.json" % r)).read_text()) for r in range(self.nproc)], output

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
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


def check_capture(trace, reply, steps):
    """The trace holds exactly `steps` consecutive steps, torch's ops in
    them, and the device's kernels of those steps and of no other."""
    assert reply["type"] == "OK", reply
    assert reply["written"] == "1"
    assert int(reply["records"]) == sum(1 for e in trace["traceEvents"] if e.get("ph") != "M")
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
    reply = lp.capture(out, steps=3)
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    check_capture(trace, reply, 3)
    # the program goes on, and listens for the next request
    out2 = tmp_path / "out2.json"
    reply2 = lp.capture(out2, steps=2, format="json.gz")
    with gzip.open(out2, "rt", encoding="utf-8") as f:
        trace2 = json.load(f)
    steps2 = check_capture(trace2, reply2, 2)
    assert steps2[0] > max(profiler_steps(trace))
    results, _ = lp.finish()
    assert results[0]["captures"] == 2


def test_the_capture_begins_at_a_step_multiple(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.json"
    reply = lp.capture(out, steps=2, step_multiple=7)
    with open(out, encoding="utf-8") as f:
        got = check_capture(json.load(f), reply, 2)
    assert got[0] % 7 == 0
    lp.finish()


def test_a_duration_ends_at_the_first_boundary_after_it(loop, tmp_path):
    lp = loop(extra=["--step-sleep", "0.02"])
    out = tmp_path / "out.json"
    reply = lp.capture(out, duration_ns=400_000_000)
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    steps = profiler_steps(trace)
    n = sorted(steps)
    assert n == list(range(n[0], n[0] + len(n))) and len(n) >= 2
    check_capture(trace, reply, len(n))
    first, last = steps[n[0]], steps[n[-1]]
    # steps are whole: the window ends with the step during which 400 ms passed
    assert last["ts"] + last["dur"] - first["ts"] >= 400_000 - 1000
    assert last["ts"] - first["ts"] < 400_000 + 1000
    lp.finish()


def test_a_format_torch_does_not_write_is_refused_and_the_loop_goes_on(loop, tmp_path):
    lp = loop()
    out = tmp_path / "out.perfetto"
    reply = lp.capture(out, steps=2, format="perfetto")
    assert reply["type"] == "ERR" and reply["code"] == "bad_request", reply
    assert "torch.profiler writes Chrome JSON" in reply["text"]
    assert out.stat().st_size == 0
    out2 = tmp_path / "out.json"
    reply = lp.capture(out2, steps=1)
    with open(out2, encoding="utf-8") as f:
        check_capture(json.load(f), reply, 1)
    lp.finish()


def test_a_trigger_while_the_program_profiles_itself_is_busy(loop, tmp_path):
    """The program runs torch.profiler over its first 40 steps: a trigger
    then is answered busy, the training loop raises nothing, and a trigger
    after that captures."""
    lp = loop(extra=["--profile-first", "40"])
    out = tmp_path / "out.json"
    reply = lp.capture(out, steps=2)
    assert reply["type"] == "ERR" and reply["code"] == "busy", reply
    assert "torch.profiler is already running" in reply["text"]
    end = time.monotonic() + 60
    while not (lp.dir / "own_done").exists():  # the program's own run ended
        assert time.monotonic() < end
        time.sleep(0.05)
    reply = lp.capture(out, steps=2)
    with open(out, encoding="utf-8") as f:
        got = check_capture(json.load(f), reply, 2)
    assert got[0] > 40
    results, output = lp.finish()
    assert "Traceback" not in output


def test_two_ranks_under_torchrun_capture_the_same_steps(loop, tmp_path):
    lp = loop(nproc=2, extra=["--step-sleep", "0.1"])
    replies, outs = [None, None], [tmp_path / "rank0.json", tmp_path / "rank1.json"]

    def send(rank):
        replies[rank] = lp.capture(outs[rank], rank=rank, steps=2, step_multiple=4)

    threads = [threading.Thread(target=send, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = []
    for rank in range(2):
        with open(outs[rank], encoding="utf-8") as f:
            got.append(check_capture(json.load(f), replies[rank], 2))
    assert got[0] == got[1] and got[0][0] % 4 == 0
    results, _ = lp.finish()
    assert results[0]["steps"] == results[1]["steps"]
