"""What the tests of documented commands share (docs/testing.md,
"Documented commands"): the blocks a test is named by (`documented`), and a
sandbox to run them in as a user would (`sandbox`): a scratch checkout
whose build/ is the build under test, with `devtrace` and this Python on
PATH, the TOPSPTI emulator as the vendor library, and stand-ins for the
programs the docs name (`train.py`, `./my_binary`)."""
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docblocks  # noqa: E402

# the CLI integration tests' helpers (paths, run, check_trace), one copy
_spec = importlib.util.spec_from_file_location(
    "dt_integration", Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
BUILD, DEVTRACE, SOURCE, TOPSPTI_EMU = _integration.BUILD, _integration.DEVTRACE, _integration.SOURCE, \
    _integration.TOPSPTI_EMU
check_trace, load_trace, need = _integration.check_trace, _integration.load_trace, _integration.need

# The user's program the docs run (`python3 train.py`): kernels on the
# emulated device, a step each, for --steps per epoch or, with TRAIN_SECONDS,
# until that many seconds have passed.
TRAIN_PY = '''\
import argparse, ctypes, os, time
ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=1)
ap.add_argument("--steps", type=int, default=4)
args = ap.parse_args()
emu = ctypes.CDLL(os.environ["DEVTRACE_TOPSPTI_LIBRARY"])
grid, block = (ctypes.c_int * 3)(4, 1, 1), (ctypes.c_int * 3)(128, 1, 1)
until = time.time() + float(os.environ.get("TRAIN_SECONDS", "0"))
step = 0
while step < args.epochs * args.steps or time.time() < until:
    assert emu.emu_launch_kernel(0, 1, b"train_step_kernel", grid, block, ctypes.c_uint64(20000)) == 0
    assert emu.emu_synchronize(-1, -1) == 0
    step += 1
    if time.time() < until:
        time.sleep(0.01)
'''

# What the torch snippets assume: a model whose forward launches a kernel on
# the emulated device (a custom op), an input, a step, a loader, an optimizer.
TORCH_PROLOGUE = '''\
import ctypes, os, time
import torch
from torch.profiler import ProfilerActivity
_emu = ctypes.CDLL(os.environ["DEVTRACE_TOPSPTI_LIBRARY"])

@torch.library.custom_op("devtrace_docs::emu_scale", mutates_args=())
def emu_scale(x: torch.Tensor) -> torch.Tensor:
    grid, block = (ctypes.c_int * 3)(4, 1, 1), (ctypes.c_int * 3)(128, 1, 1)
    assert _emu.emu_launch_kernel(0, 1, b"docs_scale_kernel", grid, block, ctypes.c_uint64(30000)) == 0
    assert _emu.emu_synchronize(0, 1) == 0
    return x * 2

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
    def forward(self, x):
        return self.lin(emu_scale(x))

model, x = Model(), torch.ones(4, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
def step():
    model(x)
def batches(seconds=float(os.environ.get("TRAIN_SECONDS", "1"))):
    until = time.time() + seconds
    while time.time() < until:
        time.sleep(0.01)
        yield torch.ones(4, 8)
loader = batches()
'''


class Sandbox:
    """A scratch checkout to run documented blocks in (cwd), with the
    environment a user of this build would have."""

    def __init__(self, root, ran):
        self.root = root
        self.ran = ran  # where each block run was documented
        root.mkdir()
        for entry in SOURCE.iterdir():
            if entry.name not in (".git", ".venv") and not entry.name.startswith("build"):
                (root / entry.name).symlink_to(entry)
        (root / "build").symlink_to(BUILD)
        bin_dir = root / ".bin"
        bin_dir.mkdir()
        # the tests' Python as `python`, `python3`, and its torchrun
        for name, args in (("python", ""), ("python3", ""), ("torchrun", " -m torch.distributed.run")):
            (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
            (bin_dir / name).chmod(0o755)
        (root / "train.py").write_text(TRAIN_PY)
        (root / "my_binary").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{root / "train.py"}" "$@"\n')
        (root / "my_binary").chmod(0o755)
        runtime = root / ".run"
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "RANK", "LOCAL_RANK", "WORLD_SIZE") and not k.startswith("DEVTRACE_")}
        env.update(PATH=os.pathsep.join([str(bin_dir), str(BUILD), env.get("PATH", "")]),
                   DEVTRACE_TOPSPTI_LIBRARY=str(TOPSPTI_EMU), DEVTRACE_LIBRARY=str(BUILD / "libdevtrace.so"),
                   DEVTRACE_PYTHON=sys.executable, XDG_RUNTIME_DIR=str(runtime),
                   PYTHONPATH=os.pathsep.join(p for p in (str(SOURCE / "python"), os.environ.get("PYTHONPATH"))
                                              if p))
        if os.environ.get("TORCH_EXTENSIONS_DIR"):
            env["TORCH_EXTENSIONS_DIR"] = os.environ["TORCH_EXTENSIONS_DIR"]
        self.env = env
        self.runtime = runtime

    def __truediv__(self, name):
        return self.root / name

    def run(self, block, subs=None, timeout=300, check=True, env=None):
        """A shell block, as bash runs a script (it stops at the first
        failing line), placeholder words replaced (subs: {"PID": 4242})."""
        self.ran.add(block.where)
        # a script file, not `bash -c`, which would exec the last command in
        # place of the shell: each line is its own process, as typed
        script = self.root / f".block_{Path(block.doc).stem}_{block.line}.sh"
        script.write_text(docblocks.commands(block, subs))
        res = subprocess.run(["bash", "-euo", "pipefail", str(script)], cwd=self.root,
                             env=dict(self.env, **(env or {})), capture_output=True, text=True, timeout=timeout)
        if check:
            assert res.returncode == 0, f"{block.where}:\n{block.text}{res.stdout}{res.stderr}"
        return res

    def script(self, block, before="", after="", subs=None):
        """A Python block as a program: inside the code it assumes (before)
        and the checks of what it did (after), lines replaced (subs: a
        `...` line by the work it stands for)."""
        self.ran.add(block.where)
        text = block.text
        for old, new in (subs or {}).items():
            text = text.replace(old, new)
        script = self.root / f"snippet_{Path(block.doc).stem}_{block.line}.py"
        script.write_text(before + "\n" + text + "\n" + after)
        return script

    def python(self, block, before="", after="", subs=None, timeout=300, check=True, env=None):
        """A Python block run (see script)."""
        script = self.script(block, before, after, subs)
        res = subprocess.run([sys.executable, str(script)], cwd=self.root, env=dict(self.env, **(env or {})),
                             capture_output=True, text=True, timeout=timeout)
        if check:
            assert res.returncode == 0, f"{block.where}:\n{block.text}{res.stdout}{res.stderr}"
        return res

    def start(self, command, env=None):
        """A program in the background (a shell command line), as a user
        leaves one running in another terminal."""
        return subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.root, env=dict(self.env, **(env or {})),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def listener(self, proc, name, timeout=60):
        """The pid of the process named name that proc started, once
        `devtrace trigger --list` shows it."""
        until = time.time() + timeout
        while time.time() < until:
            assert proc.poll() is None, proc.communicate()
            res = subprocess.run([str(DEVTRACE), "trigger", "--list"], env=self.env, capture_output=True, text=True)
            for fields in (line.split() for line in res.stdout.splitlines()[1:]):
                if fields and name in fields[1]:
                    return int(fields[0])
            time.sleep(0.1)
        raise AssertionError(f"no listener {name} after {timeout} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    setattr(item, "rep_" + outcome.get_result().when, outcome.get_result())


def test_name(request):
    return f"{Path(request.node.path).resolve().relative_to(SOURCE)}::{request.node.originalname}"


@pytest.fixture
def documented(request):
    """The blocks whose marker names this test, in document order."""
    blocks = docblocks.documented(test_name(request))
    assert blocks, f"no block of README.md or docs/ names {test_name(request)}"
    return blocks


@pytest.fixture
def sandbox(request, tmp_path, documented):
    """A sandbox; at the end, a test that passed must have run every block
    it is named by."""
    ran = set()
    yield Sandbox(tmp_path / "checkout", ran)
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.passed:
        left = [b.where for b in documented if b.where not in ran]
        assert not left, f"{test_name(request)} is named by blocks it did not run: {', '.join(left)}"

