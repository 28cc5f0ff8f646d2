"""The documented-commands check fails on what it exists to catch, and
passes on a tree that keeps the rule (docs/testing.md)."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("check_docs.py")

RUNS_IT = '''def test_tour(documented, sandbox):
    for block in documented:
        sandbox.run(block)
'''


def tree(tmp_path, readme, files=None):
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "docs").mkdir(exist_ok=True)
    for name, text in {"tests/docs/test_readme.py": RUNS_IT, ".ci/run": "bash tests/run.sh\n", **(files or {})}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], capture_output=True, text=True)


GOOD = """# x

<!-- test: tests/docs/test_readme.py::test_tour -->
```sh
devtrace record -o t.json -- python3 train.py
```

<!-- test: .ci/run -->
```sh
bash tests/run.sh
```

<!-- not run: needs an NVIDIA GPU -->
```sh
bash tests/gpu/cuda_validate.sh
```

```json
{"traceEvents": []}
```
"""


def test_a_tree_whose_blocks_are_all_run_or_excused_passes(tmp_path):
    r = tree(tmp_path, GOOD)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 code blocks, 2 run by tests, 1 shown and not run" in r.stdout


def test_a_block_that_runs_and_names_no_test_fails(tmp_path):
    r = tree(tmp_path, GOOD + "\n```python\nimport devtrace\n```\n\n```text\ndevtrace stats t.json\n```\n")
    assert r.returncode == 1
    assert "README.md:22: a block that runs, and no test runs it" in r.stdout, r.stdout
    assert "README.md:26: a block that shows a command line, and no test runs it" in r.stdout, r.stdout


def test_a_marker_must_name_a_test_that_runs_it(tmp_path):
    bad = GOOD.replace("test_readme.py::test_tour", "test_readme.py::test_gone")
    r = tree(tmp_path, bad)
    assert r.returncode == 1 and "tests/docs/test_readme.py defines no test_gone" in r.stdout, r.stdout
    r = tree(tmp_path, GOOD, {"tests/docs/test_readme.py": "def test_tour(sandbox):\n    pass\n"})
    assert r.returncode == 1
    assert "its test tests/docs/test_readme.py::test_tour does not run it" in r.stdout, r.stdout
    r = tree(tmp_path, GOOD, {".ci/run": "bash tests/run.sh build\n"})
    assert r.returncode == 1 and ".ci/run does not run `bash tests/run.sh` as written" in r.stdout, r.stdout


def test_every_block_says_its_language_and_why_it_is_not_run(tmp_path):
    r = tree(tmp_path, GOOD + "\n```\nsome file\n```\n\nIndented:\n\n    devtrace check t.json\n\n"
                              "<!-- not run: -->\n```sh\nls\n```\n")
    assert r.returncode == 1
    assert "README.md:22: a code block that says no language" in r.stdout, r.stdout
    assert "README.md:28: an indented code block" in r.stdout, r.stdout
    assert "README.md:31: <!-- not run: --> says no reason" in r.stdout, r.stdout
