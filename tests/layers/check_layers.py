#!/usr/bin/env python3
"""The layers of src/ look only down: a check over the #include lines and,
given a build directory, over the calls between folders (the symbols each
object file takes from the others, as nm lists them).

    python3 tests/layers/check_layers.py [--build BUILD_DIR]

Exit status 1, with every violation listed, when a file includes a header of
a layer it may not see (or one hidden from it: HIDDEN), when includes form a
cycle, when an object calls a function (internal, or of the public header)
of a layer it may not see, when a file or an internal header is over its
size (a C file or header of tests/ too), or when an internal function or
variable is named dt_ rather than dt__ (public: dt_<name>, in a public
header; internal: dt__<name>).
docs/architecture.md explains the layers.
"""
import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def set_root(root):
    global ROOT, SRC
    ROOT = Path(root).resolve()
    SRC = ROOT / "src"
    load_table()

# What each layer may include and call, and the headers hidden from some:
# src/layers.txt, which the build reads too (the tree checked, else this
# checkout's). PUBLIC in a layer's entry lets it call the whole public API.
PUBLIC = "public"
TABLE = "src/layers.txt"


def read_table(path):
    """ALLOWED (layer -> what it may see) and HIDDEN (header -> the layers
    it is hidden from, None: every other) from the table's lines."""
    allowed, hidden = {}, {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        head, _, rest = line.partition(":")
        words = rest.split()
        if head.startswith("hidden "):
            name = head.split(None, 1)[1].strip()
            hidden[name] = None if words == ["all"] else set(words)
        else:
            allowed[head.strip()] = set(words)
    return allowed, hidden


def load_table():
    global ALLOWED, HIDDEN
    table = ROOT / TABLE
    if not table.exists():
        table = Path(__file__).resolve().parents[2] / TABLE
    ALLOWED, HIDDEN = read_table(table)


ALLOWED, HIDDEN = {}, {}
load_table()

# Files allowed over the limits: vendor ABI declarations.
MAX_LINES = 1000
MAX_HEADER_LINES = 400
MAX_MODULE_LINES = 3000
EXEMPT = re.compile(r"_abi\.h$|(^|/)vendors\.def$")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else None


def resolve(src_file, name):
    """The file an #include "name" in src_file names, or None (generated or
    public headers)."""
    if name.startswith("devtrace/"):
        return None
    here = src_file.parent / name
    if here.exists():
        return here.resolve()
    for base in (SRC, SRC / "core"):
        p = base / name
        if p.exists():
            return p.resolve()
    return None


GRAPH = {}  # file -> the files it includes (check_includes fills it)


def closure(headers):
    """The headers given and everything they include, transitively."""
    seen, todo = set(), [(SRC / h).resolve() for h in headers]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo.extend(GRAPH.get(f, ()))
    return seen


def allowed(src_layer, target):
    """Whether a file of src_layer may include or call into target (a path
    under src/). A header allowed by name brings what it includes along."""
    t_layer = layer_of(target)
    if t_layer is None or t_layer == src_layer:
        return True
    rules = ALLOWED.get(src_layer)
    if rules is None:
        return False
    if t_layer in rules:
        return True
    named = closure(r for r in rules if r.endswith(".h"))
    return target.resolve() in named or target.with_suffix(".h").resolve() in named


def hidden_from(src_layer, target):
    """The header hidden from src_layer that including target brings, or None."""
    for name, layers in HIDDEN.items():
        header = (SRC / name).resolve()
        if layer_of(SRC / name) == src_layer or (layers is not None and src_layer not in layers):
            continue
        if header in closure([target]):
            return name
    return None


def sources():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def check_includes(errors):
    graph = GRAPH
    for f in sources():
        text = f.read_text(errors="replace")
        layer = layer_of(f)
        if layer not in ALLOWED:
            errors.append(f"{f.relative_to(ROOT)}: src/{layer} is no layer docs/architecture.md names")
        deps = []
        for name in INCLUDE.findall(text):
            target = resolve(f, name)
            if target is None:
                continue
            deps.append(target)
        graph[f.resolve()] = deps
    for f, deps in graph.items():
        layer = layer_of(f)
        for d in deps:
            if not allowed(layer, d):
                errors.append(f"{f.relative_to(ROOT)}: includes {d.relative_to(ROOT)}: "
                              f"src/{layer} may not include src/{layer_of(d)}")
            elif hidden_from(layer, d):
                errors.append(f"{f.relative_to(ROOT)}: includes {d.relative_to(ROOT)}: "
                              f"src/{hidden_from(layer, d)} is hidden from src/{layer}")
    # cycles (Tarjan's strongly connected components)
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        work = [(v, iter(graph.get(v, ())))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    comps.append(comp)

    for v in list(graph):
        if v not in index:
            strong(v)
    for comp in comps:
        names = " -> ".join(str(p.relative_to(ROOT)) for p in sorted(comp))
        errors.append(f"include cycle: {names}")


def check_sizes(errors):
    # a module (a folder below a layer's) whole: its files may call each
    # other in a loop, and are capped together
    for module in sorted(p for p in SRC.glob("*/*") if p.is_dir()):
        n = sum(sum(1 for _ in f.open(errors="replace")) for f in module.rglob("*")
                if f.suffix in (".c", ".h") and f.is_file() and not EXEMPT.search(f.name))
        if n > MAX_MODULE_LINES:
            errors.append(f"{module.relative_to(ROOT)}: a module of {n} lines (at most {MAX_MODULE_LINES})")
    for tree in (SRC, ROOT / "emu"):
        for f in sorted(tree.rglob("*")):
            if f.suffix not in (".c", ".h") or not f.is_file() or EXEMPT.search(f.name):
                continue
            n = sum(1 for _ in f.open(errors="replace"))
            rel = f.relative_to(ROOT)
            in_module = tree == SRC and len(f.relative_to(SRC).parts) > 2
            if n > MAX_LINES and not in_module:
                errors.append(f"{rel}: {n} lines (at most {MAX_LINES})")
            elif f.suffix == ".h" and n > MAX_HEADER_LINES:
                errors.append(f"{rel}: an internal header of {n} lines (at most {MAX_HEADER_LINES})")
    # the tests mirror src/ under the same cap a file (a test of more is a
    # folder of files, tests/unit/<layer>/test_<name>/); their headers too
    for f in sorted((ROOT / "tests").rglob("*")):
        if f.suffix not in (".c", ".h") or not f.is_file():
            continue
        n = sum(1 for _ in f.open(errors="replace"))
        if n > MAX_LINES:
            errors.append(f"{f.relative_to(ROOT)}: {n} lines (at most {MAX_LINES})")


# Names: a public function is dt_<name>, declared in a public header (the
# library's, or the columns library's); an internal one is dt__<name>, as
# libuv's are uv__. One grep lists the public API:
#   nm -g --defined-only build/libdevtrace.a | grep ' dt_[a-z]'
PUBLIC_HEADERS = ("include/devtrace/devtrace.h", "src/columns/dt_columns.h")
PUBLIC_NAME = re.compile(r"\b(dt_[a-z0-9]\w*)\s*\(")
# a function declared or defined at file scope, or a function-like macro
DECLARED = re.compile(r"^(?:(?!typedef\b)[A-Za-z_][^;{}()=#/]*?[\s*]|#\s*define\s+)(dt_[a-z0-9]\w*)\s*\(", re.M)
INTERNAL_RULE = "internal names start dt__ (public ones are declared in include/devtrace/devtrace.h)"


def public_names():
    names = set()
    for h in PUBLIC_HEADERS:
        if (ROOT / h).exists():
            names |= set(PUBLIC_NAME.findall((ROOT / h).read_text(errors="replace")))
    return names


def check_names(errors):
    """A function of src/ named dt_<name> is one a public header declares;
    every other is dt__<name>: a call tells at sight which it is."""
    public = public_names()
    for f in sources():
        rel = f.relative_to(ROOT).as_posix()
        if rel in PUBLIC_HEADERS:
            continue
        text = f.read_text(errors="replace")
        for m in DECLARED.finditer(text):
            if m.group(1) not in public:
                line = text.count("\n", 0, m.start(1)) + 1
                errors.append(f"{rel}:{line}: {m.group(1)} is internal and named dt_: {INTERNAL_RULE}")


def check_symbols(build, errors):
    """What the layers' objects define globally under dt_ is the public API
    (nm, as the one grep above): an internal variable or function named dt_
    that the source check cannot see (one a macro makes) fails too."""
    public = public_names()
    seen = set()
    for o in sorted(Path(build).glob("**/CMakeFiles/*/src/**/*.o")):
        defined, _ = nm_symbols(o)
        for s in sorted(defined):
            if re.match(r"dt_[a-z0-9]", s) and s not in public and s not in seen:
                seen.add(s)
                errors.append(f"{o.relative_to(build)}: defines {s}, internal and named dt_: {INTERNAL_RULE}")


# A "DEVTRACE_..." string, whole: an environment variable's name.
ENV_NAME = re.compile(r'"DEVTRACE_[A-Z0-9_]+"')
ENV_HOME = "base/env_names.h"
# a vendor's library variable: its row in vendors.def, which its descriptor repeats
ENV_VENDOR_LINE = re.compile(r"library_env|override_env|LIBRARY_ENV")


def check_env_names(errors):
    """Environment variables are named in one header: a "DEVTRACE_..."
    string elsewhere in src/ (a vendor's library variable aside) fails."""
    for f in sources():
        rel = f.relative_to(SRC).as_posix()
        if rel == ENV_HOME:
            continue
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if ENV_NAME.search(line) and not ENV_VENDOR_LINE.search(line):
                errors.append(f"{f.relative_to(ROOT)}:{n}: names an environment variable outside "
                              f"src/{ENV_HOME}: {ENV_NAME.search(line).group(0)}")


def nm_symbols(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", str(obj)], capture_output=True, text=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) >= 3}
    out = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True).stdout
    undefined = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, undefined


def check_calls(build, errors):
    """Every function of devtrace an object calls, internal or of the public
    header, must be defined in a layer it may see (PUBLIC: any public one)."""
    header = ROOT / "include/devtrace/devtrace.h"
    public = set(re.findall(r"DT_API\s+[^;(]*?\b(dt_\w+)\s*\(", header.read_text())) if header.exists() else set()
    objects = {}
    build = Path(build)
    for o in build.glob("**/CMakeFiles/*/src/**/*.o"):
        # the object's path below its target's folder (CMakeFiles/T.dir/src/...),
        # taken relative to the build, so that a checkout under a folder named
        # src (~/src/devtrace) does not cut it at the wrong src
        parts = o.relative_to(build).parts
        at = parts.index("CMakeFiles")
        src = SRC.joinpath(*parts[at + 3:])
        src = src.with_name(src.name[: -len(".o")])
        if parts[at + 2] == "src" and src.exists():
            objects.setdefault(src, o)
    owner = {}
    syms = {}
    for src, o in objects.items():
        d, u = nm_symbols(o)
        syms[src] = u
        for s in d:
            owner.setdefault(s, src)
    if not objects:
        errors.append(f"no object files of src/ under {build}: build first")
        return
    calls = {}
    for src, undefined in syms.items():
        layer = layer_of(src)
        for s in sorted(undefined):
            target = owner.get(s)
            # devtrace's own functions: the injection library's interposers
            # (fork, exec) define the C library's names
            if target is None or not s.startswith("dt_"):
                continue
            if s in public and PUBLIC in ALLOWED.get(layer, ()):
                continue
            if not allowed(layer, target):
                errors.append(f"{src.relative_to(ROOT)}: calls {s} of {target.relative_to(ROOT)}: "
                              f"src/{layer} may not call into src/{layer_of(target)}")
            if target.parent != src.parent:
                calls.setdefault(src.parent, {}).setdefault(target.parent, (src, s, target))
    check_folder_circles(calls, errors)


def check_folder_circles(calls, errors):
    """A circle of calls stays inside one folder (a module): files that call
    each other in a loop are one unit, and a folder holds it whole. calls:
    folder -> {folder it calls: (a file, a name, the file defining it)}."""
    index, low, stack, on, counter = {}, {}, [], set(), [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in calls.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                ties = "; ".join(f"{a.relative_to(ROOT)} calls {n} of {b.relative_to(ROOT)}"
                                 for f in sorted(comp) for g, (a, n, b) in sorted(calls.get(f, {}).items())
                                 if g in comp)
                errors.append("a circle of calls crosses folders: "
                              + ", ".join(str(f.relative_to(ROOT)) for f in sorted(comp)) + f" ({ties})")

    for v in sorted(calls):
        if v not in index:
            strong(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", help="a build directory: also check the calls between folders")
    ap.add_argument("--root", help="the source tree (default: this checkout)")
    args = ap.parse_args()
    if args.root:
        set_root(args.root)
    errors = []
    check_includes(errors)
    check_sizes(errors)
    check_names(errors)
    check_env_names(errors)
    if args.build:
        check_calls(args.build, errors)
        check_symbols(args.build, errors)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} violation(s) of the layers (docs/architecture.md)", file=sys.stderr)
        return 1
    print("layers: every include and call looks down; no cycle; sizes within bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
