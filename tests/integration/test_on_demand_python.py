"""devtrace.listen() and devtrace.stop_listening(): a Python process listens
for `devtrace trigger`, arms nothing and loads no vendor library while idle,
is listed by `devtrace trigger --list`, and removes its socket when it stops.
The captures themselves are tested on every emulated backend by the
conformance suite (tests/conformance/on_demand.c)."""
import os
import subprocess
import sys
import textwrap

from conftest import PACKAGE_DIR, TOPSPTI_EMU, library_env_var, listed, needs_emulator, run

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
