#!/usr/bin/env python3
"""Every command a user is shown runs in a test: a check over the code
blocks of README.md and docs/**/*.md (docs/testing.md, "Documented
commands").

    python3 tests/docs/check_docs.py [--root CHECKOUT]

Exit status 1, with each finding, when a block says no language or is an
indented block, when a block that runs (sh, bash, console, python, c) or
shows a command line has no marker, when a marker names a test that does
not exist or does not run the blocks it is named by (its code never
mentions `documented`), when a script named as the test lacks one of the
block's lines, or when a block not run says no reason.
"""
import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docblocks  # noqa: E402


def test_function(path, name):
    """The source of the module-level function name in path, or None."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return ast.get_source_segment(path.read_text(), node)
    return None


def script_lines(text):
    """A block's command lines as a script would hold them."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def check(root):
    root = Path(root)
    findings = []
    blocks = docblocks.all_blocks(root)
    for b in blocks:
        if b.lang == "indented":
            findings.append(f"{b.where}: an indented code block: fence it (```) and say its language")
            continue
        if not b.lang:
            findings.append(f"{b.where}: a code block that says no language: ```sh, ```python or ```c for what "
                            "runs, ```text or ```json for what does not")
        if b.kind == "not run":
            if not b.what:
                findings.append(f"{b.where}: <!-- not run: --> says no reason")
            continue
        if b.kind == "test":
            path, _, name = b.what.partition("::")
            target = root / path
            if not target.is_file():
                findings.append(f"{b.where}: its test {b.what}: no file {path}")
            elif name:
                source = test_function(target, name)
                if source is None:
                    findings.append(f"{b.where}: its test {b.what}: {path} defines no {name}")
                elif "documented" not in source:
                    findings.append(f"{b.where}: its test {b.what} does not run it (it never asks `documented` "
                                    "for its blocks)")
            else:
                have = set(script_lines(target.read_text()))
                for line in script_lines(b.text):
                    if line not in have:
                        findings.append(f"{b.where}: {path} does not run `{line}` as written")
            continue
        if b.needs_marker():
            what = "runs" if b.lang in docblocks.RUNNABLE else "shows a command line"
            findings.append(f"{b.where}: a block that {what}, and no test runs it: mark it "
                            "<!-- test: tests/docs/test_X.py::test_Y --> (the test that runs it) or "
                            "<!-- not run: why -->")
    return blocks, findings


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=docblocks.SOURCE, help="the checkout (default: this one)")
    args = ap.parse_args()
    blocks, findings = check(args.root)
    for f in findings:
        print(f)
    if findings:
        print(f"{len(findings)} finding(s) in the documented commands (docs/testing.md)", file=sys.stderr)
        return 1
    tested = sum(b.kind == "test" for b in blocks)
    print(f"documented commands: {len(blocks)} code blocks, {tested} run by tests, "
          f"{sum(b.kind == 'not run' for b in blocks)} shown and not run (each says why)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
