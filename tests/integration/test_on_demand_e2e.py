"""On-demand capture and the flight recorder as users drive them, end to end:
real traced processes on the emulated vendors (the runner of scenarios, or
a program linked with libdevtrace that listens), `devtrace record` and
`devtrace trigger` as a shell runs them; no fake listener.

Each case runs on every emulated vendor where what it checks depends on the
vendor (the ring, the dump, the capture's window), else on TOPSPTI's.
devtrace.listen(), devtrace.profile(flight_recorder=...) and
devtrace.torch.listen() are in test_on_demand_python.py and
test_torch_on_demand.py (a Python process cannot load a sanitized
libdevtrace; this file runs in sanitizer builds too)."""
import array
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BUILD, DEVTRACE, EMU_RUN, SANITIZERS, check_trace, emulators, library_env_var, needs_emulator, \
    preload_of, run
from conftest import VENDORS as ALL_VENDORS

pytestmark = needs_emulator()

LISTEN_WORKLOAD = BUILD / "tests" / "integration" / "dt_listen_workload"
# the emulated vendors of this build; a sanitized build's emulators cannot be
# loaded into Python to ask their personality: each vendor's own, then
VENDORS = emulators() if not SANITIZERS else {
    name: lib for name, _, lib in ALL_VENDORS if lib.exists() and lib.parent == BUILD / "emu"}
# what decides a process's rank and job: none comes from the test's own environment
JOB_AND_RANK = ("SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "RANK",
                "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE",
                "DEVTRACE_ON_DEMAND", "DEVTRACE_FLIGHT_RECORDER", "DEVTRACE_BACKEND", "XDG_RUNTIME_DIR")
WROTE = re.compile(r"^devtrace: process (\d+) \(([^)]*)\): wrote (\S+): (\d+) events; (.*)$", re.M)


def steps_scenario(vendor, repeat, sleep_us=5000, kernel="k"):
    return f"""vendor {vendor}
devices 1
thread "train" {{
  repeat {repeat} {{
    step
    range "step" {{
      kernel device=0 stream=1 name="{kernel}" grid=1,1,1 block=32,1,1 dur_us=200
    }}
    sleep_us {sleep_us}
  }}
}}
"""


class Node:
    """A machine: its own control directory (a private XDG_RUNTIME_DIR, short
    enough for a socket's path), and the processes started on it."""

    def __init__(self, name="node"):
        self.dir = Path(tempfile.mkdtemp(prefix="dt" + name[:4], dir="/tmp"))
        self.runtime = self.dir / "run"
        self.runtime.mkdir(mode=0o700)
        self.procs = []

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in JOB_AND_RANK and k != "LD_PRELOAD"}
        env["XDG_RUNTIME_DIR"] = str(self.runtime)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def sockets(self):
        d = self.runtime / "devtrace"
        return {int(p.name.split(".")[0]) for p in d.glob("*.sock")} if d.exists() else set()

    def start(self, cmd, **env):
        """A process of this node, and its pid once it listens."""
        before = self.sockets()
        p = subprocess.Popen([str(c) for c in cmd], env=self.env(**env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(p)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            new = self.sockets() - before
            if new:
                return p, new.pop()
            time.sleep(0.02)
        out, err = p.communicate(timeout=30)
        pytest.fail(f"the program never listened: {out}{err}")

    def record(self, vendor, record_args, repeat=300, sleep_us=5000, **env):
        """`devtrace record RECORD_ARGS -- devtrace-emu-run` of a steps
        scenario on the vendor's emulator."""
        scn = self.dir / f"{vendor}.{len(self.procs)}.scn"
        scn.write_text(steps_scenario(vendor, repeat, sleep_us))
        env.setdefault(library_env_var(vendor), VENDORS[vendor])
        out = self.dir / f"rec{len(self.procs)}.json"
        return self.start([DEVTRACE, "record", *record_args, "-o", out, "--", EMU_RUN, "--quiet", scn], **env)

    def trigger(self, *args, timeout=120, **env):
        return subprocess.run([str(DEVTRACE), "trigger", *map(str, args)], env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout)

    def listing(self):
        res = self.trigger("--list")
        return [line.split() for line in res.stdout.splitlines()[1:] if line.split()]

    def kill(self, p):
        """p and what it started (its session: record's program)."""
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()

    def close(self):
        for p in self.procs:
            self.kill(p)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def node():
    n = Node()
    yield n
    n.close()


def wrote(res):
    """{path: (pid, who, events, what was lost)} from trigger's lines."""
    return {m.group(3): (int(m.group(1)), m.group(2), int(m.group(4)), m.group(5)) for m in WROTE.finditer(res.stderr)}


def kernels(trace, name=None):
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and (name is None or e["name"] == name)]


def finish(p, timeout=120):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, err


# ---------------------------------------------------------------------------
# A flight recorder answers `devtrace trigger --dump`
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_flight_recorder_of_record_answers_trigger_dump(node, vendor, tmp_path):
    rec, pid = node.record(vendor, ["--flight-recorder=4M"], repeat=300)
    assert [f[4:6] for f in node.listing() if f[0] == str(pid)] == [[vendor, "idle"]]
    out = tmp_path / "dump.json"
    res = node.trigger(pid, "--dump", "-o", out)
    assert res.returncode == 0, res.stderr
    assert wrote(res)[str(out)][:2] == (pid, vendor), res.stderr
    trace = check_trace(out)
    assert len(kernels(trace, "k")) >= 1
    assert re.fullmatch(r"asked by devtrace trigger \(process \d+\)", trace["devtrace"]["notes"]["flight_recorder.dump"])
    # a capture is refused while the flight recorder records: busy, its reason said
    res = node.trigger(pid, "--steps", "1", "-o", tmp_path / "capture.json")
    assert res.returncode == 4, res.stderr
    assert "this process records with a flight recorder: `devtrace trigger --dump` writes its window" in res.stderr
    assert not (tmp_path / "capture.json").exists()
    status, err = finish(rec)
    assert status == 0, err
    assert re.search(rf"process {pid}: dump written: asked by devtrace trigger \(process \d+\), to its output\n",
                     err), err
    assert "traced 1 process: 0 traces written; 1 dump written (1 asked by devtrace trigger)\n" in err, err


@pytest.mark.skipif(bool(SANITIZERS), reason="a sanitized injection library needs its runtime preloaded first, "
                    "which `devtrace record` does (the test above)")
def test_the_injection_librarys_flight_recorder_listens_without_record(node, tmp_path):
    """DEVTRACE_FLIGHT_RECORDER with the injection library in LD_PRELOAD, as a
    launcher sets it up without `devtrace record`."""
    scn = node.dir / "t.scn"
    scn.write_text(steps_scenario("topspti", 300))
    p, pid = node.start([EMU_RUN, "--quiet", scn], LD_PRELOAD=BUILD / "libdevtrace_inject.so",
                        DEVTRACE_FLIGHT_RECORDER="4M", DEVTRACE_OUTPUT=node.dir / "t.json",
                        DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"])
    out = tmp_path / "d.json.gz"
    res = node.trigger(pid, "--dump", "-o", out)
    assert res.returncode == 0, res.stderr
    assert len(kernels(check_trace(out), "k")) >= 1
    assert finish(p)[0] == 0
    assert not (node.dir / "t.json").exists()  # a program that ends well writes no trace of its own


# ---------------------------------------------------------------------------
# Busy is busy
# ---------------------------------------------------------------------------
FILL = """vendor topspti
devices 1
thread "fill" {
  repeat %d {
    kernel device=0 stream=1 name="fill_kernel" grid=1,1,1 block=32,1,1 dur_ns=100
  }
  sync
  sleep_us 30000000
}
"""


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def wait_idle(pid, timeout=120):
    """Until the process has used no CPU for half a second (its ring full,
    it sleeps)."""
    deadline = time.monotonic() + timeout
    last, same = cpu_ticks(pid), 0
    while same < 5:
        assert time.monotonic() < deadline, "the program never went idle"
        time.sleep(0.1)
        now = cpu_ticks(pid)
        same = same + 1 if now == last else 0
        last = now


def full_ring(node, out, size, launches):
    """`devtrace record --flight-recorder=SIZE --dump-on-signal=USR2` of a
    runner that fills its ring (a dump of 64M takes a while, the more so in
    gzip), then sleeps."""
    scn = node.dir / "fill.scn"
    scn.write_text(FILL % launches)
    rec, pid = node.start([DEVTRACE, "record", f"--flight-recorder={size}", "--dump-on-signal=USR2", "--dump-cooldown=0",
                           "-o", out, "--", EMU_RUN, "--quiet", scn], DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"])
    wait_idle(pid)
    return rec, pid


def test_a_trigger_dump_while_a_signals_dump_is_written_is_busy(node, tmp_path):
    rec, pid = full_ring(node, tmp_path / "fr.json.gz", "64M", 1500000)
    dump1 = tmp_path / "fr.dump1.json.gz"
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 60
    while not dump1.exists():  # made as the dump begins; it is written for most of a second
        assert time.monotonic() < deadline
        time.sleep(0.002)
    res = node.trigger(pid, "--dump", "-o", tmp_path / "second.json")
    assert res.returncode == 4, res.stderr
    assert f"devtrace trigger: process {pid}: busy: a capture or dump is already running there: another dump of " \
           "the flight recorder is being written (a dump trigger's, or another devtrace trigger --dump): it holds " \
           "the window" in res.stderr, res.stderr
    assert not (tmp_path / "second.json").exists()
    rec.send_signal(signal.SIGINT)  # forwarded: the program ends by it, and dumps again
    status, err = finish(rec)
    assert status == 128 + signal.SIGINT, err
    assert f"process {pid}: dump written: {dump1} (dump 1: signal SIGUSR2)\n" in err, err
    assert run([DEVTRACE, "check", dump1]).returncode == 0


def test_a_signals_dump_while_a_trigger_dump_is_written_is_not_made_and_said(node, tmp_path):
    rec, pid = full_ring(node, tmp_path / "fr.json", "16M", 400000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    trig = subprocess.Popen([str(DEVTRACE), "trigger", str(pid), "--dump", "-o", str(fifo)], env=node.env(),
                            stderr=subprocess.PIPE, text=True)
    got = bytearray()
    deadline = time.monotonic() + 60
    while len(got) < 4096:  # the dump writes, and waits for its reader: it holds the window
        assert time.monotonic() < deadline
        try:
            got += os.read(reader, 4096 - len(got))
        except BlockingIOError:
            time.sleep(0.01)
    os.kill(pid, signal.SIGUSR2)
    time.sleep(1)
    assert not (tmp_path / "fr.dump1.json").exists()
    os.set_blocking(reader, True)
    with open(tmp_path / "asked.json", "wb") as f:
        f.write(got)
        while True:
            chunk = os.read(reader, 1 << 20)
            if not chunk:
                break
            f.write(chunk)
    os.close(reader)
    assert trig.wait(timeout=60) == 0, trig.stderr.read()
    assert len(kernels(check_trace(tmp_path / "asked.json"), "fill_kernel")) > 10000
    rec.send_signal(signal.SIGINT)
    _, err = finish(rec)
    assert "flight recorder: dump 1 (signal SIGUSR2) was not made: another dump was being written, which holds " \
           "its window" in err, err


# ---------------------------------------------------------------------------
# Jobs that are not one job
# ---------------------------------------------------------------------------
def test_two_torchrun_jobs_are_two_jobs_and_never_merged(node, tmp_path):
    """Plain torchrun sets TORCHELASTIC_RUN_ID=none for every job: a job is
    told apart by its master's address and port."""
    a = [node.record("topspti", ["--on-demand"], repeat=600, TORCHELASTIC_RUN_ID="none", MASTER_ADDR="127.0.0.1",
                     MASTER_PORT=29511, RANK=r, WORLD_SIZE=2)[1] for r in range(2)]
    b = node.record("topspti", ["--on-demand"], repeat=600, TORCHELASTIC_RUN_ID="none", MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=29522, RANK=0, WORLD_SIZE=1)[1]
    jobs = {int(f[0]): f[6] for f in node.listing()}
    assert jobs == {a[0]: "master:127.0.0.1:29511", a[1]: "master:127.0.0.1:29511", b: "master:127.0.0.1:29522"}
    # which job is not guessed
    res = node.trigger("--job", "--steps", "2", "-o", tmp_path / "j.json")
    assert res.returncode == 2, res.stderr
    assert "name one with --job JOB" in res.stderr and list(tmp_path.glob("j*")) == []
    # "none" names no job
    assert node.trigger("--job", "none", "--steps", "1", "-o", tmp_path / "n.json").returncode == 3
    res = node.trigger("--job", "master:127.0.0.1:29511", "--steps", "2", "--timeout", "20", "-o", tmp_path / "j.json")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.glob("j*")) == ["j.rank0.json", "j.rank1.json"]
    assert f"devtrace merge -o MERGED {tmp_path}/j.rank0.json {tmp_path}/j.rank1.json\n" in res.stderr
    # every listener: each job merged on its own, never the two together
    res = node.trigger("--all", "--steps", "1", "--timeout", "20", "-o", tmp_path / "all.json")
    assert res.returncode == 0, res.stderr
    merges = re.findall(r"devtrace merge -o MERGED (.*)\n", res.stderr)
    assert merges == [f"{tmp_path}/all.rank0.json {tmp_path}/all.rank1.json"], res.stderr


def test_the_steps_of_one_slurm_job_are_jobs_of_their_own(node, tmp_path):
    for step in (0, 1):
        node.record("topspti", ["--on-demand"], repeat=600, SLURM_JOB_ID=4242, SLURM_STEP_ID=step, SLURM_PROCID=0)
    assert sorted(f[6] for f in node.listing()) == ["slurm:4242.0", "slurm:4242.1"]
    res = node.trigger("--job", "4242", "--steps", "1", "-o", tmp_path / "s.json")
    assert res.returncode == 2, res.stderr
    assert "--job 4242 names several jobs (slurm:4242.0, slurm:4242.1, ...)" in res.stderr
    # this shell in the job (srun --overlap): the job, whatever the step, is still two
    res = node.trigger("--job", "--steps", "1", "-o", tmp_path / "s.json", SLURM_JOB_ID=4242, SLURM_STEP_ID=7)
    assert res.returncode == 2, res.stderr
    res = node.trigger("--job", "4242.1", "--steps", "1", "--timeout", "20", "-o", tmp_path / "s.json")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.glob("s*")) == ["s.rank0.json"]


# ---------------------------------------------------------------------------
# A capture when the program ends
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_capture_cut_short_by_the_programs_end_is_kept_as_partial(node, vendor, tmp_path):
    rec, pid = node.record(vendor, ["--on-demand"], repeat=200)  # about 1 s
    out = tmp_path / "cut.json"
    res = node.trigger(pid, "--steps", "100000", "-o", out)
    assert res.returncode == 1, res.stderr
    pid_, who, events, said = wrote(res)[str(out)]
    assert who == vendor and said.startswith("partial: this process is e"), said
    assert "during the window: the trace holds what came until then; " in said
    trace = check_trace(out)
    # the events recorded: every complete event but the capture window and the annotations the writer derives
    assert events == sum(1 for e in trace["traceEvents"] if e.get("ph") == "X" and e["cat"] not in ("gpu_user_annotation", "Trace"))
    assert len(kernels(trace, "k")) >= 5
    status, err = finish(rec)
    assert status == 0, err
    assert "1 process listened for 'devtrace trigger'; 1 capture written to its outputs" in err, err


def test_steps_that_stop_coming_give_a_partial_trace_and_a_window_never_begun_none(node, tmp_path):
    rec, pid = node.record("topspti", ["--on-demand"], repeat=600)
    out = tmp_path / "late.json"
    res = node.trigger(pid, "--steps", "100000", "--timeout", "0.5", "-o", out)
    assert res.returncode == 1, res.stderr
    assert wrote(res)[str(out)][3].startswith(
        "partial: the window's last step did not begin before the timeout: the trace holds what came until then; ")
    assert len(kernels(check_trace(out), "k")) >= 10
    node.kill(rec)
    # a program that ends before its window's first step: no trace, said
    rec, pid = node.record("topspti", ["--on-demand"], repeat=1, sleep_us=800000)
    res = node.trigger(pid, "--steps", "1", "--step-multiple", "1000", "-o", tmp_path / "none.json")
    assert res.returncode == 10, res.stderr
    assert "the process wrote no trace: this process is e" in res.stderr
    assert "before the window's first step: no trace written" in res.stderr
    assert not (tmp_path / "none.json").exists()


# a sanitized build cannot ask an emulator in Python whether it wants to be
# preloaded (MSPTI's): TOPSPTI's alone there
@pytest.mark.parametrize("vendor", sorted(VENDORS) if not SANITIZERS else ["topspti"])
def test_a_c_program_that_listens_keeps_a_capture_cut_short_at_its_exit(node, vendor, tmp_path):
    env = {library_env_var(vendor): VENDORS[vendor]}
    if not SANITIZERS and preload_of(VENDORS[vendor]):
        env["LD_PRELOAD"] = VENDORS[vendor]
    p, pid = node.start([LISTEN_WORKLOAD, "--emulator", VENDORS[vendor], "--listen", "--seconds", "1.5",
                         "--exit", "3"], DEVTRACE_BACKEND=vendor, **env)
    out = tmp_path / "c.json"
    res = node.trigger(pid, "--duration", "60", "-o", out)
    assert res.returncode == 1, res.stderr
    assert wrote(res)[str(out)][3].startswith("partial: this process is exiting during the window: the trace holds "
                                              "what came until then; ")
    trace = check_trace(out)
    assert len(kernels(trace)) >= 10
    window = trace["devtrace"]["captureWindow"]
    assert window["endNs"] - window["startNs"] < 10e9
    assert p.wait(timeout=60) == 3


def test_a_c_program_that_stops_listening_keeps_the_capture_under_way(node, tmp_path):
    p, pid = node.start([LISTEN_WORKLOAD, "--emulator", VENDORS["topspti"], "--listen", "--seconds", "3",
                         "--stop-at", "1"], DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"])
    out = tmp_path / "stopped.json"
    res = node.trigger(pid, "--duration", "60", "-o", out)
    assert res.returncode == 1, res.stderr
    assert wrote(res)[str(out)][3].startswith("partial: this process stopped listening during the window: the trace "
                                              "holds what came until then; ")
    assert len(kernels(check_trace(out))) >= 10
    assert p.wait(timeout=60) == 0
    assert node.sockets() == set()


# ---------------------------------------------------------------------------
# Numbers at their limits
# ---------------------------------------------------------------------------
def raw_capture(node, pid, payload, out):
    """A CAPTURE of payload, as another client than devtrace trigger might
    send it: the reply's payload."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(node.runtime / "devtrace" / f"{pid}.sock"))
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
    s.close()
    return reply[8:].decode()


def test_numbers_past_their_limits_are_refused_with_the_limit(node, tmp_path):
    rec, pid = node.record("topspti", ["--on-demand"], repeat=600)
    res = node.trigger(pid, "--steps", "18446744073709551615", "-o", tmp_path / "s.json")
    assert res.returncode == 2, res.stderr
    assert "--steps takes a whole number from 1 to 1000000000, not 18446744073709551615" in res.stderr
    res = node.trigger(pid, "--duration", "1e8", "-o", tmp_path / "s.json")
    assert res.returncode == 2 and "at most 10000000" in res.stderr, res.stderr
    for payload, why in [(b"duration_ns=18446744073709551615\n", "duration_ns=18446744073709551615 is over the "
                                                                  "limit of 10000000000000000 ns (10000000 s)"),
                         (b"steps=18446744073709551615\n", "steps=18446744073709551615 is over the limit of "
                                                           "1000000000"),
                         (b"steps=1\ntimeout_ns=18446744073709551615\n", "timeout_ns=18446744073709551615 is over")]:
        reply = raw_capture(node, pid, payload, tmp_path / "raw.json")
        assert reply.startswith("code=bad_request\ntext=" + why), reply
        assert (tmp_path / "raw.json").stat().st_size == 0
    # the listener goes on: a capture of 2 steps holds 2 steps
    res = node.trigger(pid, "--steps", "2", "--timeout", "20", "-o", tmp_path / "ok.json")
    assert res.returncode == 0, res.stderr
    assert len(kernels(check_trace(tmp_path / "ok.json"), "k")) == 2


# ---------------------------------------------------------------------------
# DEVTRACE_ON_DEMAND=1 under record; listening refused
# ---------------------------------------------------------------------------
def test_on_demand_from_the_environment_under_record(node, tmp_path):
    rec, pid = node.record("topspti", [], repeat=300, DEVTRACE_ON_DEMAND=1)
    res = node.trigger(pid, "--steps", "2", "--timeout", "20", "-o", tmp_path / "e.json")
    assert res.returncode == 0, res.stderr
    status, err = finish(rec)
    assert status == 0, err
    assert "did not load the injection library" not in err and "lost" not in err, err
    assert "devtrace: on demand: nothing was recorded from start; 1 process listened for 'devtrace trigger'; " \
           "1 capture written to its outputs\n" in err, err


def test_record_on_demand_that_cannot_listen_says_so_and_keeps_the_programs_status(node, tmp_path):
    (node.runtime / "devtrace").mkdir(mode=0o755)
    os.chmod(node.runtime / "devtrace", 0o755)
    scn = node.dir / "t.scn"
    scn.write_text(steps_scenario("topspti", 20))
    res = subprocess.run([str(DEVTRACE), "record", "--on-demand", "-o", str(tmp_path / "t.json"), "--", "sh", "-c",
                          f"'{EMU_RUN}' --quiet '{scn}'; exit 3"],
                         env=node.env(DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"]), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 3, res.stderr
    assert re.search(r"process \d+: not listening for devtrace trigger: the control directory \S+ has mode 0755, "
                     r"not 0700: refused\n", res.stderr), res.stderr
    assert "could not (said above)" in res.stderr and "exit status 125" not in res.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv, to run a user "
                    "whose /tmp directory another user made")
def test_a_control_directory_another_user_made_is_refused_and_said(tmp_path):
    """Without XDG_RUNTIME_DIR and /run/user/<uid>, the sockets go to
    /tmp/devtrace-<uid>, which any local user can make first."""
    uid = 65534
    planted = Path(f"/tmp/devtrace-{uid}")
    closed = next((p for p in DEVTRACE.resolve().parents if not os.stat(p).st_mode & 0o001), None)
    if closed:
        pytest.skip(f"uid {uid} cannot reach the build: {closed} is not searchable by other users")
    if planted.exists() or Path(f"/run/user/{uid}").exists():
        pytest.skip(f"{planted} or /run/user/{uid} exists already")
    planted.mkdir(mode=0o700)  # root's, where uid 65534's should be
    try:
        env = {k: v for k, v in os.environ.items() if k not in JOB_AND_RANK and k != "LD_PRELOAD"}
        res = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", str(DEVTRACE),
                              "record", "--on-demand", "-o", "/dev/null", "--", "sh", "-c", "exit 4"],
                             env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 4, res.stderr
        assert (f"not listening for devtrace trigger: the control directory {planted} belongs to uid 0, not to uid "
                f"{uid}: refused (another user made it first; set XDG_RUNTIME_DIR to a directory of yours, such as "
                f"/run/user/<uid>)") in res.stderr, res.stderr
        res = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", str(DEVTRACE),
                              "trigger", "--list"], env=env, capture_output=True, text=True, timeout=60)
        assert res.returncode == 1 and "another user made it first" in res.stderr, res.stderr
    finally:
        planted.rmdir()


# ---------------------------------------------------------------------------
# The end summary, dump notes, the backend in use, small rings
# ---------------------------------------------------------------------------
def test_each_dump_notes_what_asked_for_it_and_nothing_of_the_others(node, tmp_path):
    out = tmp_path / "n.json"
    scn = node.dir / "n.scn"
    scn.write_text(steps_scenario("topspti", 400))
    rec, pid = node.start([DEVTRACE, "record", "--flight-recorder=4M", "--dump-on-signal=USR2", "--dump-cooldown=0",
                           "-o", out, "--", EMU_RUN, "--quiet", scn], DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"])
    for n in (1, 2):
        os.kill(pid, signal.SIGUSR2)
        dump = tmp_path / f"n.dump{n}.json"
        deadline = time.monotonic() + 30
        while not dump.exists() or dump.stat().st_size == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.3)
    res = node.trigger(pid, "--dump", "-o", tmp_path / "asked.json")
    assert res.returncode == 0, res.stderr
    status, err = finish(rec)
    assert status == 0, err
    notes = [{k: v for k, v in check_trace(p)["devtrace"]["notes"].items() if k.startswith("flight_recorder.dump")}
             for p in (tmp_path / "n.dump1.json", tmp_path / "n.dump2.json", tmp_path / "asked.json")]
    assert [sorted(n) for n in notes] == [["flight_recorder.dump1"], ["flight_recorder.dump2"],
                                          ["flight_recorder.dump"]], notes
    assert notes[1]["flight_recorder.dump2"] == "signal SIGUSR2; dumps skipped: 0 (cooldown), 0 (cap) before it"
    assert "3 dumps written (1 asked by devtrace trigger)" in err, err


def test_the_list_and_the_line_name_the_backend_in_use(node, tmp_path):
    rec, pid = node.record("topspti", ["--on-demand"], repeat=600)
    assert [f[4] for f in node.listing() if f[0] == str(pid)] == ["auto"]  # nothing armed yet: auto
    # on demand there is no flight recorder to dump
    res = node.trigger(pid, "--dump", "-o", tmp_path / "d.json")
    assert res.returncode == 5, res.stderr
    assert f"devtrace trigger: process {pid}: cannot arm the vendor now: this process has no flight recorder" \
        in res.stderr
    res = node.trigger(pid, "--steps", "1", "-o", tmp_path / "b.json")
    assert res.returncode == 0, res.stderr
    assert wrote(res)[str(tmp_path / "b.json")][1] == "topspti"
    assert [f[4] for f in node.listing() if f[0] == str(pid)] == ["topspti"]


def test_captures_record_whole_windows_whatever_the_environment_says_of_a_flight_recorder(node, tmp_path):
    """DEVTRACE_FLIGHT_RECORDER in the environment of a dt_control_listen(NULL)
    program made every capture a ring's last window."""
    p, pid = node.start([LISTEN_WORKLOAD, "--emulator", VENDORS["topspti"], "--listen", "--seconds", "30",
                         "--period-ms", "2", "--launches", "50"], DEVTRACE_FLIGHT_RECORDER="16K",
                        DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"])
    out = tmp_path / "w.json"
    res = node.trigger(pid, "--steps", "100", "--timeout", "20", "-o", out)
    assert res.returncode == 0, res.stderr
    trace = check_trace(out)
    assert trace["devtrace"]["loss"].get("ring_evicted", 0) == 0
    assert "flight_recorder" not in trace["devtrace"]["notes"]
    assert len(kernels(trace)) == 100 * 50  # every step's every kernel


def test_a_small_ring_has_small_buffers_and_a_tiny_one_is_refused(node, tmp_path):
    rec, pid = node.record("topspti", ["--flight-recorder=1M"], repeat=300)
    res = node.trigger(pid, "--dump", "-o", tmp_path / "s.json")
    assert res.returncode == 0, res.stderr
    note = check_trace(tmp_path / "s.json")["devtrace"]["notes"]["flight_recorder"]
    assert note.startswith("a ring of 4 buffers of 262144 bytes (and 2 in reserve);"), note
    node.kill(rec)
    res = run([DEVTRACE, "record", "--flight-recorder=8K", "--", "true"])
    assert res.returncode == 2, res.stderr
    assert "--flight-recorder takes at least 16K" in res.stderr, res.stderr


def test_idle_connections_hide_no_listener(node, tmp_path):
    rec, pid = node.record("topspti", ["--on-demand"], repeat=600)
    idle = []
    for _ in range(18):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(node.runtime / "devtrace" / f"{pid}.sock"))
        idle.append(s)
    t0 = time.monotonic()
    assert [f[0] for f in node.listing()] == [str(pid)]
    res = node.trigger(pid, "--steps", "1", "-o", tmp_path / "i.json")
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 < 10
    for s in idle:
        s.close()


def test_a_clean_end_decodes_nothing_of_the_ring(node, tmp_path):
    scn = node.dir / "c.scn"
    scn.write_text(steps_scenario("topspti", 60, 1000))
    res = run([DEVTRACE, "record", "--flight-recorder=4M", "-o", tmp_path / "c.json", "--", EMU_RUN, "--quiet", scn],
              env=node.env(DEVTRACE_TOPSPTI_LIBRARY=VENDORS["topspti"], DEVTRACE_LOG=1))
    assert res.returncode == 0, res.stderr
    assert re.search(r"flight recorder: the ring's \d+ buffers given back undecoded \(nobody writes its window\)",
                     res.stderr), res.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------
# Many machines
# ---------------------------------------------------------------------------
NODE_SCRIPT = r"""
set -u
hostname "$NODE" 2>/dev/null || true
for local in 0 1; do
  rank=$((NODE_INDEX * 2 + local))
  env $(printf '%s ' $RANK_ENV | sed "s/@RANK@/$rank/g; s/@LOCAL@/$local/g") \
    "$DEVTRACE" record --on-demand -o "$NODE_DIR/unused.json" -- \
    "$WORKLOAD" --emulator "$EMULATOR" --lockstep "$SHARED/go" --period-ms 100 --seconds 4 \
    >"$NODE_DIR/rec$local.out" 2>&1 &
done
until [ "$("$DEVTRACE" trigger --list 2>/dev/null | grep -c ' idle ')" = 2 ]; do sleep 0.02; done
touch "$SHARED/$NODE.listening"
# the job's launcher (srun, pdsh) runs one trigger per machine, at about the same time
while [ ! -e "$SHARED/trigger" ]; do sleep 0.01; done
env $TRIGGER_ENV "$DEVTRACE" trigger --job --steps 3 -o "$SHARED/t.json" >"$SHARED/$NODE.out" 2>"$SHARED/$NODE.err" &
trig=$!
# both ranks of this machine armed and waiting for their steps
until [ "$("$DEVTRACE" trigger --list 2>/dev/null | grep -c ' armed ')" = 2 ]; do sleep 0.02; done
touch "$SHARED/$NODE.armed"
wait $trig
echo $? >"$SHARED/$NODE.rc"
wait
"""

LAUNCHERS = {
    # srun: the ranks and the trigger are steps of one Slurm job (the trigger
    # a step of its own, `srun --overlap --ntasks-per-node=1`)
    "srun": ("SLURM_JOB_ID=9000 SLURM_STEP_ID=0 SLURM_PROCID=@RANK@ SLURM_LOCALID=@LOCAL@ SLURM_NTASKS=4",
             "SLURM_JOB_ID=9000 SLURM_STEP_ID=1"),
    # torchrun on each machine, the trigger started by pdsh outside the job
    "torchrun+pdsh": ("TORCHELASTIC_RUN_ID=none MASTER_ADDR=node0 MASTER_PORT=29400 RANK=@RANK@ LOCAL_RANK=@LOCAL@ "
                      "WORLD_SIZE=4", ""),
}


def namespaces():
    """Whether each simulated machine can have its own hostname and process
    ids (a UTS and a PID namespace, with its own /proc): root and unshare."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--uts", "--pid", "--fork", "--mount-proc", "true"]).returncode == 0


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_many_machines_capture_the_same_steps_and_their_traces_merge(tmp_path, launcher):
    """Two machines of two ranks each, simulated on this one: each machine
    has its own control directory (XDG_RUNTIME_DIR) and, where it can (root),
    its own hostname and process ids, so that pids repeat from machine to
    machine as they do on a cluster; the output folder is shared (a shared
    filesystem). The ranks step together, as collectives make them: no rank
    steps until the test says from which step and when (every machine's
    clock is this one's). On each machine a trigger is started, as srun or
    pdsh start one per machine, with `--job --steps 3`: each rank begins
    at the next step that is a multiple of 3 once the request reached it,
    here the same step on every machine because every request arrived
    before the steps resumed at 7 (docs/on-demand.md says what happens when
    requests straddle a multiple). The traces land named by their global
    rank, beside each other, and merge and convert as one job's."""
    rank_env, trigger_env = LAUNCHERS[launcher]
    shared = Path(tempfile.mkdtemp(prefix="dtmm", dir="/tmp"))
    isolated = namespaces()
    nodes = []
    try:
        for i in range(2):
            node_dir = shared / f"n{i}"
            (node_dir / "run").mkdir(parents=True, mode=0o700)
            env = {k: v for k, v in os.environ.items() if k not in JOB_AND_RANK and k != "LD_PRELOAD"}
            env.update(NODE=f"node{i}", NODE_INDEX=str(i), NODE_DIR=str(node_dir), SHARED=str(shared),
                       XDG_RUNTIME_DIR=str(node_dir / "run"), DEVTRACE=str(DEVTRACE), WORKLOAD=str(LISTEN_WORKLOAD),
                       EMULATOR=str(VENDORS["topspti"]), DEVTRACE_TOPSPTI_LIBRARY=str(VENDORS["topspti"]),
                       RANK_ENV=rank_env, TRIGGER_ENV=trigger_env)
            cmd = ["bash", "-c", NODE_SCRIPT]
            if isolated:
                cmd = ["unshare", "--uts", "--pid", "--fork", "--mount-proc", *cmd]
            nodes.append(subprocess.Popen(cmd, env=env, start_new_session=True))
        deadline = time.monotonic() + 60
        while not all((shared / f"node{i}.listening").exists() for i in range(2)):
            assert time.monotonic() < deadline, [p.poll() for p in nodes]
            time.sleep(0.05)
        (shared / "trigger").touch()
        while not all((shared / f"node{i}.armed").exists() for i in range(2)):
            assert time.monotonic() < deadline, [p.poll() for p in nodes]
            time.sleep(0.05)
        go = shared / "go.tmp"
        go.write_text("7 %d\n" % (time.time_ns() + 300_000_000))  # step 7 in 0.3 s, one every 100 ms
        go.rename(shared / "go")
        for p in nodes:
            assert p.wait(timeout=120) == 0
        for i in range(2):
            assert (shared / f"node{i}.rc").read_text().strip() == "0", (shared / f"node{i}.err").read_text()
            err = (shared / f"node{i}.err").read_text()
            ranks = (2 * i, 2 * i + 1)
            assert f"devtrace merge -o MERGED {shared}/t.rank{ranks[0]}.json {shared}/t.rank{ranks[1]}.json\n" in err
            # the ranks of the other machines are said to be elsewhere, and how to merge them all
            assert f"2 of job " in err and "'s 4 ranks listen on this machine; once a trigger on each of its " \
                   f"machines has written to one folder: devtrace merge -o MERGED {shared}/t.rank*.json\n" in err, err
        traces = sorted(shared.glob("t.rank*.json"))
        assert [p.name for p in traces] == ["t.rank0.json", "t.rank1.json", "t.rank2.json", "t.rank3.json"]
        hosts = set()
        for path in traces:
            trace = check_trace(path)
            steps = sorted(e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
            assert steps == ["ProfilerStep#10", "ProfilerStep#11", "ProfilerStep#9"], (path, steps)
            assert sorted(e["name"] for e in kernels(trace)) == ["step10", "step11", "step9"]
            hosts.add(trace["distributedInfo"]["host"] if "distributedInfo" in trace else "")
        if isolated:
            assert hosts == {"node0", "node1"}, hosts
        merged = shared / "merged.json"
        res = run([DEVTRACE, "merge", "-o", merged, *traces])
        assert res.returncode == 0, res.stderr
        trace = check_trace(merged)
        assert len([e for e in kernels(trace)]) == 12
        if not SANITIZERS:  # a Python process cannot load a sanitized libdevtrace
            res = run([DEVTRACE, "convert", "--to", "parquet", *traces, "-o", shared / "dataset"], timeout=300)
            assert res.returncode == 0, res.stdout + res.stderr
            assert list((shared / "dataset").rglob("*.parquet"))
    finally:
        for p in nodes:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        shutil.rmtree(shared, ignore_errors=True)
