"""Signals racing a traced program's exit: every run leaves a valid trace.

A signal makes the program's sleep return early, so the program races to its
exit while devtrace writes the trace on another thread; or it lands while
the program is already exiting and writing. Whoever comes second waits."""
import os
import random
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DEVTRACE, TOPSPTI_EMU, WORKLOAD, check_trace, needs_emulator

SLEEP_MS = 300
RUNS = 50


def record_and_signal(out, sig, handle, delay, to_group):
    """Runs the workload under record, sends sig `delay` seconds after the
    workload said it was ready, and returns (returncode, stderr, sent)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["DEVTRACE_TOPSPTI_LIBRARY"] = str(TOPSPTI_EMU)
    cmd = [str(DEVTRACE), "record", "--backend", "topspti", "-o", str(out), "--", str(WORKLOAD),
           "--emulator", str(TOPSPTI_EMU)] + (["--handle"] if handle else []) + [str(SLEEP_MS)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(delay)
        sent = proc.poll() is None
        if sent:
            # the group, as a terminal's Ctrl-C does (devtrace forwards it
            # too, so the program gets it twice), or devtrace alone
            if to_group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err, sent


@needs_emulator()
def test_a_signal_at_any_moment_leaves_a_valid_trace(tmp_path):
    assert WORKLOAD.exists(), f"{WORKLOAD} is not built"
    seed = int(os.environ.get("DT_SIGNAL_SEED", time.time_ns() % 1000000))
    rng = random.Random(seed)
    sleep = SLEEP_MS / 1000.0
    runs = []
    for i in range(RUNS):
        # half while the program sleeps, half around the end of its sleep,
        # when it is exiting and writing its trace
        delay = rng.uniform(0, sleep) if i % 2 else rng.uniform(sleep - 0.01, sleep + 0.03)
        runs.append((i, rng.choice([signal.SIGINT, signal.SIGTERM]), i % 4 == 1, delay, rng.random() < 0.5))

    def one(run):
        i, sig, handle, delay, to_group = run
        out = tmp_path / f"t{i}.json"
        rc, err, sent = record_and_signal(out, sig, handle, delay, to_group)
        return run, out, rc, err, sent

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(one, runs))

    signalled_early = 0
    for (i, sig, handle, delay, to_group), out, rc, err, sent in results:
        what = (f"run {i} (seed {seed}): {signal.Signals(sig).name} after {delay * 1000:.0f} ms "
                f"{'to the group' if to_group else 'to devtrace'}, program {'handles' if handle else 'does not handle'}"
                f" it: exit status {rc}\n{err}")
        assert out.exists(), "no trace: " + what
        check_trace(out)
        assert "no trace was written" not in err, what
        assert f"wrote {out}" in err, what
        if handle:
            # the program's own status, whether the signal came or not
            assert rc in (0, 7), what
        else:
            assert rc in (0, 128 + sig), what
            if rc == 128 + sig:
                assert f"terminated by signal {int(sig)}" in err, what
        if sent and delay < sleep / 2:
            # it landed while the program slept: the program was stopped by
            # it, or handled it
            assert rc == (7 if handle else 128 + sig), what
            signalled_early += 1
    assert signalled_early >= 5


@needs_emulator()
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_program_that_handles_the_signal_keeps_its_status(tmp_path, sig):
    out = tmp_path / "t.json"
    rc, err, sent = record_and_signal(out, sig, True, 0.05, False)
    assert sent and rc == 7, err
    trace = check_trace(out)
    ranges = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}
    assert ranges == {"before", "after"}, ranges
    assert "terminated by signal" not in err


@needs_emulator()
def test_a_program_killed_by_sigkill_is_reported_as_such(tmp_path):
    """SIGKILL cannot be caught: no trace, and devtrace says why (not that
    the program might be statically linked)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["DEVTRACE_TOPSPTI_LIBRARY"] = str(TOPSPTI_EMU)
    out = tmp_path / "t.json"
    proc = subprocess.Popen([str(DEVTRACE), "record", "-o", str(out), "--", str(WORKLOAD), "--emulator",
                             str(TOPSPTI_EMU), "5000"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "ready\n"
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        children = [int(p) for p in f.read().split()]
    assert len(children) == 1
    os.kill(children[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert "killed by signal 9" in err and "SIGKILL cannot be caught" in err, err
    assert "statically linked" not in err
    assert not out.exists()
