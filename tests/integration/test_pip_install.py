"""The documented install commands (README.md, docs/pytorch.md,
docs/analysis.md), run in a fresh virtual environment: one `pip install` of
the repository builds libdevtrace and the devtrace command into the
package; the package then imports, lists backends, records, and `import
devtrace.torch` works; the analysis extras bring what `devtrace convert`
and `analyze` need."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import SOURCE, TOPSPTI_EMU, missing_package, needs_emulator, run

sys.path.insert(0, str(SOURCE / "tests" / "docs"))
import docblocks  # noqa: E402


INSTALL = "tests/integration/test_pip_install.py::test_the_documented_install_commands"


def pip_block(block, venv_root, src, env):
    """A documented pip block, in the checkout (a copy of it), with the
    virtual environment's pip first on PATH; /path/to/devtrace is the
    checkout."""
    text = docblocks.commands(block, {"/path/to/devtrace": src})
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=src, timeout=900, capture_output=True, text=True,
                         env=dict(env, PATH=f"{venv_root / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                                  VIRTUAL_ENV=str(venv_root)))
    assert res.returncode == 0, f"{block.where}:\n{text}{res.stdout}{res.stderr}"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment that sees the machine's torch (a GB we
    do not reinstall) and has this repository installed into it by the
    README's command."""
    root = tmp_path_factory.mktemp("venv")
    res = run([sys.executable, "-m", "venv", "--system-site-packages", root], timeout=300)
    assert res.returncode == 0, res.stderr
    python = root / "bin" / "python"
    # the installed package alone: neither the checkout's library, its Python
    # package nor the tests' Python for convert and analyze
    env = {k: v for k, v in os.environ.items()
           if k not in ("DEVTRACE_LIBRARY", "PYTHONPATH", "LD_PRELOAD", "DEVTRACE_PYTHON")}
    # a copy of the tree, so that the install cannot use or leave build files in the checkout
    src = tmp_path_factory.mktemp("src") / "devtrace"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("build*", ".git", ".venv", "__pycache__"))
    readme = next(b for b in docblocks.documented(INSTALL) if b.doc == "README.md")
    pip_block(readme, root, src, env)
    return python, env, root, src


def command_lines(block):
    return [line.split("#")[0].strip() for line in block.text.splitlines() if line.split("#")[0].strip()]


def test_the_documented_install_commands(venv):
    """The README's (the fixture's), pytorch.md's (the same) and
    analysis.md's extras: each installs, and the extras make `devtrace
    convert` find its packages in the environment's own Python."""
    python, env, root, src = venv
    blocks = docblocks.documented(INSTALL)
    assert [b.doc for b in blocks] == ["README.md", "docs/analysis.md", "docs/pytorch.md"], [b.where for b in blocks]
    readme, analysis, pytorch = blocks
    # a build of the package takes a minute: the same command is run once
    assert command_lines(pytorch) == command_lines(readme) == ["pip install ."], pytorch.text
    pip_block(analysis, root, src, env)
    res = subprocess.run([str(python), "-c", "import pyarrow, duckdb, dask.distributed, devtrace.analysis"],
                         env=env, capture_output=True, text=True, timeout=300, cwd="/")
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(root / "bin" / "devtrace"), "convert", "--help"], env=env, capture_output=True,
                         text=True, timeout=300, cwd="/")
    assert res.returncode == 0 and "parquet" in res.stdout, res.stdout + res.stderr


def test_the_package_imports_with_its_own_library(venv):
    python, env, _, _ = venv
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


def test_the_installed_version_is_the_header_s(venv):
    """The wheel's version (pyproject.toml reads it from the header), the
    package's and its library's: the header's three lines."""
    python, env, _, _ = venv
    header = (SOURCE / "include" / "devtrace" / "devtrace.h").read_text()
    version = ".".join(re.search(r"^#define DT_VERSION_%s (\d+)$" % part, header, re.M).group(1)
                       for part in ("MAJOR", "MINOR", "PATCH"))
    code = ("import importlib.metadata as m, devtrace\n"
            "print(m.version('devtrace'), devtrace.__version__, devtrace.version())")
    res = subprocess.run([str(python), "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd="/")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [version] * 3


@needs_emulator()
def test_the_installed_command_records(venv, tmp_path):
    python, env, _, _ = venv
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
    python, env, _, _ = venv
    res = subprocess.run([str(python), "-c", "import devtrace.torch; print(devtrace.torch._SOURCE.is_file())"],
                         env=env, capture_output=True, text=True, timeout=300, cwd="/")
    assert "No module named 'torch'" not in res.stderr, missing_package("torch", res.stderr.strip().splitlines()[-1])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"
