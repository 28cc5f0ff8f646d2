"""The README's install command: one `pip install` of the repository builds
libdevtrace and the devtrace command into the package; the package then
imports, lists backends, records, and `import devtrace.torch` works."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import SOURCE, TOPSPTI_EMU, missing_package, needs_emulator, run


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment that sees the machine's torch (a GB we
    do not reinstall) and has this repository installed into it by pip."""
    root = tmp_path_factory.mktemp("venv")
    res = run([sys.executable, "-m", "venv", "--system-site-packages", root], timeout=300)
    assert res.returncode == 0, res.stderr
    python = root / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("DEVTRACE_LIBRARY", "PYTHONPATH", "LD_PRELOAD")}
    # a copy of the tree, so that the install cannot use or leave build files in the checkout
    src = tmp_path_factory.mktemp("src") / "devtrace"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build*", ".git", "__pycache__"))
    res = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(src)], env=env, timeout=900,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return python, env


def test_the_package_imports_with_its_own_library(venv):
    python, env = venv
    code = ("import json, devtrace, devtrace._native as n\n"
            "print(json.dumps({'lib': n.library_path(), 'include': str(n.include_dir()),"
            " 'backends': devtrace.backend_names(), 'version': devtrace.version()}))\n")
    res = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd="/")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert "site-packages/devtrace/_native/lib/libdevtrace.so" in info["lib"]
    assert info["include"].endswith("devtrace/_native/include")
    assert {"cupti", "topspti", "null"} <= set(info["backends"])
    assert info["version"] == "0.1.0"


@needs_emulator()
def test_the_installed_command_records(venv, tmp_path):
    python, env = venv
    devtrace_cmd = python.parent / "devtrace"
    out = tmp_path / "t.json"
    res = subprocess.run([str(devtrace_cmd), "record", "--backend", "topspti", "-o", str(out), "--",
                          str(python), "-c",
                          "import ctypes, os; e = ctypes.CDLL(os.environ['DEVTRACE_TOPSPTI_LIBRARY']);"
                          "g = (ctypes.c_int * 3)(1, 1, 1); e.emu_launch_kernel(0, 1, b'k', g, g, 1000);"
                          "e.emu_synchronize(-1, -1)"],
                         env=dict(env, DEVTRACE_TOPSPTI_LIBRARY=str(TOPSPTI_EMU)),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "nothing lost" in res.stderr
    trace = json.loads(out.read_text())
    assert [e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"] == ["k"]
    check = subprocess.run([str(devtrace_cmd), "check", str(out)], env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_devtrace_torch_imports(venv):
    python, env = venv
    res = subprocess.run([str(python), "-c", "import devtrace.torch; print(devtrace.torch._SOURCE.is_file())"],
                         env=env, capture_output=True, text=True, timeout=300, cwd="/")
    assert "No module named 'torch'" not in res.stderr, missing_package("torch", res.stderr.strip().splitlines()[-1])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"
