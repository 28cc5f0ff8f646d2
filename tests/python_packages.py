#!/usr/bin/env python3
"""The Python packages the tests need (tests/requirements.txt), checked and
installed into the Python that runs this script: what `bash tests/run.sh`
does before it builds.

    PYTHON tests/python_packages.py [--install] [--log FILE] [--requirements FILE]
    PYTHON tests/python_packages.py --externally-managed

It says which Python it is and what it installs. Without --install it only
says what is missing (exit 1 when anything is). With --install it runs pip
for what is missing (nothing when all is there: no pip call) and exits 0
even when pip fails: it says so, keeps pip's output in FILE, and the tests
that need a missing package then fail, naming it. --externally-managed
exits 0 when this Python's packages are the system's (PEP 668: Debian's
python3 outside a virtual environment), where pip may not install.
"""
import argparse
import importlib.metadata as metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("requirements.txt")


def requirements(path):
    return [line.split("#")[0].strip() for line in Path(path).read_text().splitlines()
            if line.split("#")[0].strip()]


def unmet(text, extra=None):
    """Why the requirement text is not met in this Python ("" when it is):
    the distribution absent, of another version, or one its extras need."""
    try:
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:  # no pip: nothing can be checked, everything is installed
        return "pip is not installed"
    req = Requirement(text)
    if req.marker and not req.marker.evaluate({"extra": extra or ""}):
        return ""
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return f"{req.name} is not installed"
    if req.specifier and not req.specifier.contains(version, prereleases=True):
        return f"{req.name} {version} is installed, {req.specifier} is needed"
    for extra_name in req.extras:
        for sub in metadata.requires(req.name) or []:
            why = unmet(sub, extra_name)
            if why and "extra ==" in sub:
                return f"{why} (for {req.name}[{extra_name}])"
    return ""


def externally_managed():
    in_venv = sys.prefix != sys.base_prefix
    return not in_venv and Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED").exists()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--log", help="where pip's output goes when it fails")
    ap.add_argument("--externally-managed", action="store_true")
    ap.add_argument("--requirements", default=REQUIREMENTS, help="default: tests/requirements.txt")
    args = ap.parse_args()
    if args.externally_managed:
        return 0 if externally_managed() else 1
    me = f"{sys.executable} (Python {sys.version.split()[0]})"
    missing = [(r, why) for r in requirements(args.requirements) for why in [unmet(r)] if why]
    if not missing:
        print(f"tests' Python: {me}: every package the tests need is installed ({os.path.relpath(args.requirements)})")
        return 0
    if not args.install:
        print(f"tests' Python: {me} lacks what the tests need:")
        for r, why in missing:
            print(f"  {r}: {why}")
        return 1
    names = [r for r, _ in missing]
    print(f"tests' Python: {me}: installing {' '.join(names)}", flush=True)
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", *names]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode == 0:
        print(f"tests' Python: installed {' '.join(names)}")
        return 0
    log = Path(args.log) if args.log else None
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(" ".join(cmd) + "\n" + res.stdout + res.stderr)
    print(f"tests' Python: pip could not install {' '.join(names)} (exit {res.returncode}); "
          f"the tests that need them will fail. pip said:", file=sys.stderr)
    print("\n".join("  " + line for line in (res.stdout + res.stderr).strip().splitlines()[-8:]), file=sys.stderr)
    if log:
        print(f"  (all of it: {log})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
