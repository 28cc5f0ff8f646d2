import ctypes
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("DT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
SOURCE = Path(os.environ.get("DT_SOURCE_DIR", Path(__file__).resolve().parents[2]))


def _sanitizers():
    """The sanitizers the build under test was configured with (its CMake
    cache's DEVTRACE_SANITIZE), e.g. {"address", "undefined"}."""
    try:
        text = (BUILD / "CMakeCache.txt").read_text()
    except OSError:
        return set()
    m = re.search(r"^DEVTRACE_SANITIZE:\w+=(.*)$", text, re.M)
    return {v.strip() for v in m.group(1).split(",") if v.strip()} if m else set()


SANITIZERS = _sanitizers()
DEVTRACE = BUILD / "devtrace"
EMU_RUN = BUILD / "devtrace-emu-run"
TOPSPTI_EMU = BUILD / "emu" / "libtopspti.so"
# records two user ranges around a sleep (tests/integration/workload.c)
WORKLOAD = BUILD / "tests" / "integration" / "dt_workload"
LIBDEVTRACE = BUILD / "libdevtrace.so"
PACKAGE_DIR = SOURCE / "python"

# The Python package from the source tree, over this build's library: for
# the tests in this process and every child Python they start.
os.environ.setdefault("DEVTRACE_LIBRARY", str(LIBDEVTRACE))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_DIR), os.environ.get("PYTHONPATH")) if p)
sys.path.insert(0, str(PACKAGE_DIR))

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


def missing_package(module, error):
    """Why a test cannot run without module: which Python lacks it, where
    the list of what the tests need is, and what pip said when
    `bash tests/run.sh` tried to install it (its log in the build)."""
    log = BUILD / "python-packages.log"
    said = f"; pip's output when tests/run.sh tried: {log}" if log.exists() else ""
    return (f"{module} is not installed in {sys.executable}, which runs the tests ({error}); "
            f"`bash tests/run.sh` installs what the tests need (tests/requirements.txt){said}")


def need(module):
    """Import what a test needs. Its absence fails the test, never skips
    it: the test command installs every package a test needs."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(missing_package(module, e))


def listing(runtime_dir):
    """`devtrace trigger --list` under runtime_dir, each line split."""
    res = run([DEVTRACE, "trigger", "--list"], env={"XDG_RUNTIME_DIR": str(runtime_dir)})
    return [line.split() for line in res.stdout.splitlines() if line.split()]


def listed(runtime_dir, pid):
    """The `devtrace trigger --list` line of pid, split, or None."""
    return next((fields for fields in listing(runtime_dir) if fields[0] == str(pid)), None)


def library_env_var(backend):
    """The variable that tells a backend where its vendor library is."""
    return f"DEVTRACE_{backend.upper()}_LIBRARY"


def emulators():
    """{personality: library} for the emulated vendors of this build: the
    emulator each row of vendors.def names, where it is built into build/emu/
    itself (one in a folder of its own, as the PPU stack's second libcupti,
    is left out) and is that vendor's personality."""
    found = {}
    for name, _, lib in VENDORS:
        if not lib.exists() or lib.parent != BUILD / "emu":
            continue
        res = run([sys.executable, "-c",
                   "import ctypes, sys; f = ctypes.CDLL(sys.argv[1]).emu_personality; "
                   "f.restype = ctypes.c_char_p; print(f().decode())", lib], timeout=60)
        if res.returncode == 0 and res.stdout.strip() == name:
            found[name] = lib
    return found


def preload_of(lib):
    """The file name an emulated vendor wants in LD_PRELOAD from the start
    of the process (emu_preload), or None."""
    res = run([sys.executable, "-c",
               "import ctypes, sys; f = ctypes.CDLL(sys.argv[1]).emu_preload; "
               "f.restype = ctypes.c_char_p; p = f(); print(p.decode() if p else '')", lib], timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip() or None


class Emulator:
    """An emulated vendor's runtime (emu/include/devtrace_emu.h) in this
    process: the same library the backend loads, so the work launched here
    is what the vendor interface reports."""

    KINDS = ("kernel", "memcpy", "memset", "runtime", "driver", "external")

    def __init__(self, path):
        self.path = Path(path)
        self.lib = ctypes.CDLL(str(path))
        self.lib.emu_personality.restype = ctypes.c_char_p
        self.lib.emu_set_faults.argtypes = [ctypes.c_char_p]
        self.personality = self.lib.emu_personality().decode()

    def kernel(self, name, duration_ns, device=0, stream=1, grid=(1, 1, 1), block=(32, 1, 1)):
        g, b = (ctypes.c_int * 3)(*grid), (ctypes.c_int * 3)(*block)
        assert self.lib.emu_launch_kernel(device, stream, name.encode(), g, b, ctypes.c_uint64(duration_ns)) == 0

    def memcpy(self, nbytes, duration_ns, device=0, stream=1, kind=1):
        assert self.lib.emu_memcpy(device, stream, kind, ctypes.c_uint64(nbytes), ctypes.c_uint64(duration_ns),
                                   0) == 0

    def memset(self, nbytes, duration_ns, device=0, stream=1, value=0):
        assert self.lib.emu_memset(device, stream, ctypes.c_uint64(nbytes), value, ctypes.c_uint64(duration_ns),
                                   0) == 0

    def synchronize(self, device=-1, stream=-1):
        assert self.lib.emu_synchronize(device, stream) == 0

    def faults(self, spec):
        assert self.lib.emu_set_faults(spec.encode()) == 0

    def records(self):
        """Well-formed records produced since the last reset, by kind (emu_stats)."""
        words = (ctypes.c_uint64 * 64)()  # emu_stats is 26 uint64 today: room to grow
        self.lib.emu_stats_get(words)
        return dict(zip(self.KINDS, words[:len(self.KINDS)]))

    def reset_stats(self):
        self.lib.emu_stats_reset()


def raised_in_child(statement, error="devtrace.DevtraceError", env=None):
    """Run `statement` in a fresh Python that imports devtrace (and
    devtrace.torch); returns 'STATUS message' of the `error` it raised, or
    fails the test when it raised nothing or something else."""
    code = ("import devtrace, devtrace.torch\n"
            "try:\n"
            f"    {statement}\n"
            f"except {error} as e:\n"
            "    print(getattr(e, 'status', type(e).__name__), e)\n"
            "else:\n"
            "    raise SystemExit('nothing was raised')\n")
    res = run([sys.executable, "-c", code], env=env)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    return res.stdout.strip()
