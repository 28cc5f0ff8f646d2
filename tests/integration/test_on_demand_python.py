"""devtrace.listen() and devtrace.stop_listening(): a Python process listens
for `devtrace trigger`, arms nothing and loads no vendor library while idle,
is listed by `devtrace trigger --list`, and removes its socket when it stops;
a capture under way when the program exits is kept, as partial; a window
past the last step number is refused; devtrace.profile(flight_recorder=...)
answers `devtrace trigger --dump` and dumps on its own. The captures
themselves are tested on every emulated backend by the conformance suite
(tests/conformance/on_demand.c) and test_on_demand_e2e.py."""
import os
import subprocess
import sys
import textwrap

from conftest import DEVTRACE, PACKAGE_DIR, TOPSPTI_EMU, check_trace, library_env_var, listed, needs_emulator, run

CHILD = textwrap.dedent("""
    import sys, devtrace
    devtrace.listen(backend=sys.argv[1], capture=["kernel", "runtime"])
    try:
        devtrace.listen()
    except devtrace.DevtraceError as e:
        print("again", e.status, flush=True)
    print("listening", devtrace.listening(), flush=True)
    sys.stdin.readline()
    devtrace.stop_listening()
    devtrace.stop_listening()  # nothing when not listening
    print("listening", devtrace.listening(), flush=True)
""")


@needs_emulator()
def test_a_listening_python_process_is_idle_listed_and_cleans_up(tmp_path):
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime_dir), PYTHONPATH=str(PACKAGE_DIR))
    env[library_env_var("topspti")] = str(TOPSPTI_EMU)
    env.pop("LD_PRELOAD", None)
    child = subprocess.Popen([sys.executable, "-c", CHILD, "topspti"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "again DT_ERR_STATE\n"
        assert child.stdout.readline() == "listening True\n"
        sock = runtime_dir / "devtrace" / f"{child.pid}.sock"
        assert sock.exists()
        fields = listed(runtime_dir, child.pid)
        assert fields is not None, "the listener is not listed"
        # PID PROGRAM RANK WORLD BACKEND STATE [JOB]
        assert fields[4:6] == ["topspti", "idle"], fields
        # idle: the vendor's library is not even loaded
        maps = (open(f"/proc/{child.pid}/maps").read())
        assert TOPSPTI_EMU.name not in maps
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "listening False\n"
        assert child.wait(timeout=60) == 0
        assert not sock.exists()
        assert listed(runtime_dir, child.pid) is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_listener_that_exits_leaves_no_socket(tmp_path):
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir(mode=0o700)
    res = run([sys.executable, "-c", "import devtrace, os; devtrace.listen(); print(os.getpid())"],
              env={"XDG_RUNTIME_DIR": str(runtime_dir), "PYTHONPATH": str(PACKAGE_DIR)})
    assert res.returncode == 0, res.stderr
    pid = res.stdout.strip()
    assert not (runtime_dir / "devtrace" / f"{pid}.sock").exists()
    assert list((runtime_dir / "devtrace").iterdir()) == []


# ---------------------------------------------------------------------------
# Captures and dumps of Python programs, end to end
# ---------------------------------------------------------------------------
LOOP = textwrap.dedent("""
    import ctypes, os, sys, time
    import devtrace
    emu = ctypes.CDLL(os.environ["DEVTRACE_TOPSPTI_LIBRARY"])
    grid = (ctypes.c_int * 3)(1, 1, 1)

    def step(n):
        assert emu.emu_launch_kernel(0, 1, b"step%d" % n, grid, grid, ctypes.c_uint64(200000)) == 0
        assert emu.emu_synchronize(-1, -1) == 0

    mode = sys.argv[1]
    if mode == "listen":  # steps for 1.5 s, then exits: a capture under way is cut short
        devtrace.listen(backend="topspti")
        print("ready", flush=True)
        end = time.monotonic() + 1.5
        n = 0
        while time.monotonic() < end:
            n += 1
            devtrace.step()
            step(n)
            time.sleep(0.01)
    elif mode == "near_2_64":  # steps numbered by ProfilerStep# ranges, up to the last there is
        devtrace.listen(backend="topspti")
        print("ready", flush=True)
        n = 18446744073709551600
        while True:
            with devtrace.range("ProfilerStep#%d" % n):
                step(n % 1000)
            n = n + 1 if n < 18446744073709551615 else 18446744073709551600
            time.sleep(0.005)
    elif mode == "flight":  # a flight recorder of the program's own
        p = devtrace.profile(backend="topspti", flight_recorder=4 << 20)
        p.start()
        print("listening", devtrace.listening(), flush=True)
        for n in range(1, 200):
            step(n)
        p.dump(sys.argv[2])
        print("dumped", flush=True)
        for n in range(200, 400):
            step(n)
        print("ready", flush=True)
        sys.stdin.readline()
        p.stop()
        print("listening", devtrace.listening(), flush=True)
""")


def loop(tmp_path, *args):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(PACKAGE_DIR),
               DEVTRACE_TOPSPTI_LIBRARY=str(TOPSPTI_EMU))
    env.pop("LD_PRELOAD", None)
    child = subprocess.Popen([sys.executable, "-c", LOOP, *map(str, args)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return child, runtime


def trigger(runtime, *args):
    return run([DEVTRACE, "trigger", *map(str, args)], env={"XDG_RUNTIME_DIR": str(runtime)}, timeout=120)


@needs_emulator()
def test_a_python_listener_keeps_a_capture_cut_short_at_its_exit(tmp_path):
    child, runtime = loop(tmp_path, "listen")
    try:
        assert child.stdout.readline() == "ready\n"
        res = trigger(runtime, child.pid, "--dump", "-o", tmp_path / "d.json")
        assert res.returncode == 5 and "this process has no flight recorder" in res.stderr, res.stderr
        out = tmp_path / "cut.json"
        res = trigger(runtime, child.pid, "--duration", "60", "-o", out)
        assert res.returncode == 1, res.stderr
        assert f"devtrace: process {child.pid} (topspti): wrote {out}: " in res.stderr
        assert "partial: this process is exiting during the window: the trace holds what came until then" \
            in res.stderr, res.stderr
        trace = check_trace(out)
        assert len([e for e in trace["traceEvents"] if e.get("cat") == "kernel"]) >= 10
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@needs_emulator()
def test_a_steps_window_past_the_last_step_number_is_refused(tmp_path):
    """ProfilerStep# numbers run up to 2^64-1: a window that would end past
    it cannot be honoured (the end step would wrap)."""
    child, runtime = loop(tmp_path, "near_2_64")
    try:
        assert child.stdout.readline() == "ready\n"
        res = trigger(runtime, child.pid, "--steps", "100", "--step-multiple", "1", "-o", tmp_path / "w.json")
        assert res.returncode == 7, res.stderr
        assert "would end past step 18446744073709551615, the last there is; no trace written" in res.stderr
        assert not (tmp_path / "w.json").exists()
        # within the numbering: captured
        res = trigger(runtime, child.pid, "--steps", "2", "-o", tmp_path / "ok.json")
        assert res.returncode == 0, res.stderr
    finally:
        child.kill()
        child.wait()


@needs_emulator()
def test_a_python_flight_recorder_answers_trigger_dump_and_dumps_on_its_own(tmp_path):
    own = tmp_path / "own.json"
    child, runtime = loop(tmp_path, "flight", own)
    try:
        assert child.stdout.readline() == "listening True\n"
        assert child.stdout.readline() == "dumped\n"
        assert child.stdout.readline() == "ready\n"
        names = {e["name"] for e in check_trace(own)["traceEvents"] if e.get("cat") == "kernel"}
        assert names == {"step%d" % n for n in range(1, 200)}
        out = tmp_path / "asked.json"
        res = trigger(runtime, child.pid, "--dump", "-o", out)
        assert res.returncode == 0, res.stderr
        names = {e["name"] for e in check_trace(out)["traceEvents"] if e.get("cat") == "kernel"}
        assert names == {"step%d" % n for n in range(200, 400)}  # from where the program's own dump ended
        res = trigger(runtime, child.pid, "--steps", "1", "-o", tmp_path / "no.json")
        assert res.returncode == 4 and "records with a flight recorder" in res.stderr, res.stderr
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "listening False\n"
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
