"""`devtrace record --on-demand` and DEVTRACE_ON_DEMAND=1: the traced
program listens for `devtrace trigger` instead of recording from start."""
import os
import subprocess
import time

from conftest import DEVTRACE, WORKLOAD, listing


def test_record_on_demand_listens_records_nothing_from_start_and_keeps_the_exit_status(tmp_path):
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir(mode=0o700)
    out = tmp_path / "t.json"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime_dir))
    env.pop("LD_PRELOAD", None)
    rec = subprocess.Popen([str(DEVTRACE), "record", "--on-demand", "--backend", "null", "-o", str(out), "--",
                            str(WORKLOAD), "--exit", "3", "3000"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        found = None
        deadline = time.monotonic() + 30
        while found is None and time.monotonic() < deadline and rec.poll() is None:
            time.sleep(0.05)
            found = next((fields for fields in listing(runtime_dir) if fields[1:2] == ["dt_workload"]), None)
        assert found is not None, "the program was never listed as listening"
        assert found[4:6] == ["null", "idle"], found
        pid = found[0]
        _, err = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    assert rec.returncode == 3, err
    assert "on demand: nothing was recorded from start" in err, err
    assert "lost" not in err, err
    assert not out.exists()
    assert not (runtime_dir / "devtrace" / f"{pid}.sock").exists()
