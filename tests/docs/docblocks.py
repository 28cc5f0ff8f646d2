"""The code blocks of README.md and docs/**/*.md, and the marker before each
that says whether a test runs it (docs/testing.md, "Documented commands"):

    <!-- test: tests/docs/test_readme.py::test_tour -->   the pytest test that runs it
    <!-- test: .ci/run -->                                a script that runs its lines as written
    <!-- not run: a synopsis -->                          shown, not run, and why

A block in a language that runs (sh, bash, console, python, c) needs one of
them; so does a block in another language (text, json, scn) that shows a
command line (`devtrace ...`, `$ ...`). Every block says its language.
"""
import re
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
RUNNABLE = {"sh", "bash", "console", "python", "c"}
MARKER = re.compile(r"^<!--\s*(test|not run):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s{0,3})(```+|~~~+)\s*([\w+-]*)")
COMMAND = re.compile(r"^\s*(\$ |devtrace\s|build/devtrace\s)")


@dataclass
class Block:
    doc: str          # the file, relative to the checkout
    line: int         # the line of its opening fence (1-based)
    lang: str         # its info string: "" when none, "indented" for an indented block
    text: str         # its content
    kind: str = ""    # "test", "not run", or "" when unmarked
    what: str = ""    # the test or script it names, or why it is not run

    @property
    def where(self):
        return f"{self.doc}:{self.line}"

    def needs_marker(self):
        return self.lang in RUNNABLE or any(COMMAND.match(line) for line in self.text.splitlines())


def documents(root=SOURCE):
    root = Path(root)
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.exists()]


def parse(path, root=SOURCE):
    """The code blocks of one Markdown file, each with the marker above it."""
    lines = Path(path).read_text().split("\n")
    doc = str(Path(path).resolve().relative_to(Path(root).resolve()))
    blocks, i, in_list = [], 0, False

    def marker_before(k):
        k -= 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        m = MARKER.match(lines[k].strip()) if k >= 0 else None
        return (m.group(1), m.group(2)) if m else ("", "")

    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            fence, indent = m.group(2), len(m.group(1))
            j = i + 1
            while j < len(lines) and not (len(lines[j].strip()) >= len(fence) and set(lines[j].strip()) == {fence[0]}):
                j += 1
            body = [l[indent:] if l[:indent].strip() == "" else l for l in lines[i + 1:j]]
            kind, what = marker_before(i)
            blocks.append(Block(doc, i + 1, m.group(3), "\n".join(body) + "\n", kind, what))
            i = j + 1
            continue
        if line.strip():
            # list items and their continuations are no indented code
            if re.match(r"^\s*([-*+]|\d+\.)\s", line):
                in_list = True
            elif not line.startswith(" "):
                in_list = False
        if (line.startswith("    ") and line.strip() and not in_list and i > 0 and not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            while j > i and not lines[j - 1].strip():
                j -= 1
            kind, what = marker_before(i)
            blocks.append(Block(doc, i + 1, "indented", "\n".join(l[4:] for l in lines[i:j]) + "\n", kind, what))
            i = j
            continue
        i += 1
    return blocks


def all_blocks(root=SOURCE):
    return [b for p in documents(root) for b in parse(p, root)]


def documented(test, root=SOURCE):
    """The blocks whose marker names test ("tests/docs/test_readme.py::test_tour"),
    in document order: what that test runs."""
    return [b for b in all_blocks(root) if b.kind == "test" and b.what == test]


def commands(block, subs=None):
    """The block's text as a shell runs it, with each placeholder word
    (subs: {"PID": 4242, "/path/to/devtrace": ...}) replaced; a console
    block keeps only its `$ ` lines."""
    text = block.text
    if block.lang == "console":
        text = "\n".join(l[2:] for l in text.splitlines() if l.startswith("$ ")) + "\n"
    for word, value in (subs or {}).items():
        text = re.sub(rf"(?<![\w/.-]){re.escape(word)}(?![\w/.-])", str(value).replace("\\", "\\\\"), text)
    return text
