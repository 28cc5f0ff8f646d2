"""The test command's Python: what it installs, what it says, and what a
test that needs a package the Python lacks does (it fails, naming the
package and the Python, rather than skipping)."""
import os
import subprocess
import sys
from pathlib import Path

SOURCE = Path(os.environ.get("DT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
PACKAGES = SOURCE / "tests" / "python_packages.py"


def packages(tmp_path, *lines, install=True, env=None):
    req = tmp_path / "requirements.txt"
    req.write_text("\n".join(lines) + "\n")
    args = [sys.executable, str(PACKAGES), "--requirements", str(req), "--log", str(tmp_path / "pip.log")]
    return subprocess.run(args + (["--install"] if install else []), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


def test_a_python_with_everything_installs_nothing_and_says_which_python(tmp_path):
    res = packages(tmp_path, "pytest", "# a comment", "pip>=1")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith(f"tests' Python: {sys.executable} (Python "), res.stdout
    assert "every package the tests need is installed" in res.stdout and "installing" not in res.stdout


def test_what_pip_cannot_install_is_said_and_the_tests_still_run(tmp_path):
    """pip offline and without the package: the command says what it tried,
    what pip said (all of it in the log) and goes on, exit 0, for the tests
    that need the package to fail, naming it."""
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path), "PIP_CONSTRAINT": ""}
    res = packages(tmp_path, "pytest", "devtrace-no-such-package==1.0", env=offline)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "installing devtrace-no-such-package==1.0" in res.stdout and "pytest" not in res.stdout.split("installing")[1]
    assert "pip could not install devtrace-no-such-package==1.0" in res.stderr, res.stderr
    assert "devtrace-no-such-package" in (tmp_path / "pip.log").read_text()
    # checked only: what is missing is listed, exit 1
    res = packages(tmp_path, "pytest", "devtrace-no-such-package==1.0", "pytest>=999", install=False)
    assert res.returncode == 1
    assert "devtrace-no-such-package==1.0: devtrace-no-such-package is not installed" in res.stdout
    assert "pytest>=999: pytest " in res.stdout and ", >=999 is needed" in res.stdout


def test_a_test_that_needs_a_missing_package_fails_naming_it(tmp_path):
    test = tmp_path / "test_needs.py"
    test.write_text("import sys\n"
                    f"sys.path.insert(0, {str(SOURCE / 'tests' / 'integration')!r})\n"
                    "from conftest import need\n\n"
                    "def test_it():\n    need('devtrace_no_such_module')\n")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", str(test)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 1, res.stdout
    assert "1 failed" in res.stdout and "skipped" not in res.stdout, res.stdout
    assert f"devtrace_no_such_module is not installed in {sys.executable}, which runs the tests" in res.stdout
    assert "`bash tests/run.sh` installs what the tests need (tests/requirements.txt)" in res.stdout


def test_the_system_python_is_told_from_a_virtual_environment(tmp_path):
    """Where python3 is the system's own (PEP 668), the test command makes a
    virtual environment to install into; a virtual environment is used as
    it is."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    res = subprocess.run([str(venv / "bin" / "python3"), str(PACKAGES), "--externally-managed"], timeout=300)
    assert res.returncode == 1
    debian = Path("/usr/bin/python3")
    marker = Path(subprocess.run([str(debian), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                                 capture_output=True, text=True).stdout.strip(), "EXTERNALLY-MANAGED")
    if debian.exists() and marker.exists():
        assert subprocess.run([str(debian), str(PACKAGES), "--externally-managed"], timeout=300).returncode == 0
