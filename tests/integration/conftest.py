import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("DT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
SOURCE = Path(os.environ.get("DT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DEVTRACE = BUILD / "devtrace"
EMU_RUN = BUILD / "devtrace-emu-run"
TOPSPTI_EMU = BUILD / "emu" / "libtopspti.so"

# The vendors, from the one list (src/backends/vendors.def): name, library
# variable, emulator library in the build tree.
VENDORS = [(m.group(1), m.group(2), BUILD / m.group(3)) for m in re.finditer(
    r'^DT_VENDOR\((\w+), "(\w+)", "([^"]+)"', (SOURCE / "src/backends/vendors.def").read_text(), re.M)]


def run(args, env=None, timeout=120, **kw):
    full_env = dict(os.environ)
    # sanitizer runtimes cannot be preloaded after the program's own libc start
    full_env.pop("LD_PRELOAD", None)
    if env:
        full_env.update(env)
    return subprocess.run([str(a) for a in args], env=full_env, timeout=timeout,
                          capture_output=True, text=True, **kw)


def load_trace(path):
    path = Path(path)
    if path.suffix == ".gz":
        import gzip
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_trace(path):
    """devtrace check, Python's json module and jq must all accept the trace."""
    res = run([DEVTRACE, "check", path])
    assert res.returncode == 0, res.stdout + res.stderr
    trace = load_trace(path)
    if shutil.which("jq") and not str(path).endswith(".gz"):
        jq = subprocess.run(["jq", "-e", ".traceEvents | length", str(path)], capture_output=True, text=True)
        assert jq.returncode == 0, jq.stderr
    return trace


def needs_emulator():
    return pytest.mark.skipif(not (EMU_RUN.exists() and TOPSPTI_EMU.exists()),
                              reason="the TOPSPTI emulator is not built")
