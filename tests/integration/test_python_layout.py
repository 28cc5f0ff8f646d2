"""The Python package agrees with the C library by construction: its ctypes
structures, enums and DT_* constants are checked at import against the
library's own table of the public header (dt_abi_entry), a package that
declares one otherwise does not import and says what differs, its functions
are bound with the header's prototypes from that table, the table lists
every declaration of the header (read through clang), the Kineto plugin and
the package class event kinds as the library does, and the version is
written once, in the header."""
import ctypes
import enum
import importlib
import json
import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import BUILD, LIBDEVTRACE, PACKAGE_DIR, SOURCE, run

import devtrace  # noqa: E402  (the checkout's package over this build's library: conftest)
from devtrace import _native  # noqa: E402

HEADER = SOURCE / "include" / "devtrace" / "devtrace.h"
ABI = _native.abi


def table():
    """Every entry of the library's table: (scope, name, type, value, size)."""
    out = []
    scope, name, ctype = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p()
    value, size = ctypes.c_uint64(), ctypes.c_uint64()
    while _native.lib.dt_abi_entry(len(out), ctypes.byref(scope), ctypes.byref(name), ctypes.byref(ctype),
                                   ctypes.byref(value), ctypes.byref(size)):
        out.append((scope.value.decode(), name.value.decode(), ctype.value.decode(), value.value, size.value))
    return out


# ---- the package as it is: in agreement ------------------------------------

def test_every_structure_the_package_declares_is_checked_and_agrees():
    checked = {cls._c_type_: cls for cls in vars(_native).values()
               if isinstance(cls, type) and issubclass(cls, ctypes.Structure) and "_c_type_" in cls.__dict__}
    assert sorted(checked) == ["dt_backend_status", "dt_capture_request", "dt_config", "dt_event"]
    assert {c: ABI.struct_differences(cls) for c, cls in checked.items()} == {c: [] for c in checked}
    # the others are dt_event's union members, checked through it
    nested = {cls for cls in vars(_native).values()
              if isinstance(cls, type) and issubclass(cls, (ctypes.Structure, ctypes.Union)) and cls not in
              checked.values()}
    reached = {ftype for _, (ftype, _, _) in _native._flatten(_native.DtEvent) if isinstance(ftype, type)}
    assert nested and nested <= reached
    assert ctypes.sizeof(_native.DtEvent) == dict((n, s) for _, n, t, _, s in table() if t == "struct")["dt_event"]


def test_every_dt_constant_of_the_package_has_the_library_s_value():
    """Every DT_* integer any module of the package declares (the analysis
    package's mirror libdevtrace_columns, not this header), and the enums."""
    import devtrace.torch

    seen = {}
    names = ["devtrace", "devtrace.torch"] + [info.name for pkg in (devtrace, devtrace.torch)
                                              for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + ".")]
    for module_name in names:
        if module_name == "devtrace.analysis" or module_name.endswith("__main__"):
            continue
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if re.fullmatch(r"DT_[A-Z0-9_]+", name) and isinstance(value, int) and not isinstance(value, enum.Enum):
                seen[(module_name, name)] = value
    assert ("devtrace._native", "DT_CAPTURE_MEMORY") in seen and ("devtrace.torch._listen", "DT_ERR_BUSY") in seen
    wrong = {k: (v, ABI.constants.get(k[1], ("", None))[1]) for k, v in seen.items()
             if ABI.constants.get(k[1], ("", None))[1] != v}
    assert wrong == {}
    assert ABI.enum_differences(devtrace.EventKind, "dt_event_kind", "DT_EVENT_") == []
    assert ABI.enum_differences(devtrace.CopyKind, "dt_copy_kind", "DT_COPY_") == []
    assert ABI.enum_differences(devtrace.MemoryKind, "dt_memory_kind", "DT_MEM_") == []


def test_every_function_is_bound_with_the_header_s_prototype():
    functions = [n for s, n, t, _, _ in table() if not s and "(" in t]
    assert len(functions) == len(set(functions)) == len(ABI.functions)
    assert _native.lib._unbound == {}
    assert all(callable(getattr(_native.lib, n)) for n in functions)
    events = _native.lib.dt_session_events
    assert events.restype is ctypes.c_size_t
    assert events.argtypes == [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    assert _native.lib.dt_session_create.argtypes == [ctypes.POINTER(_native.DtConfig),
                                                      ctypes.POINTER(ctypes.c_void_p)]
    assert _native.lib.dt_version.restype is ctypes.c_char_p and _native.lib.dt_version.argtypes == []
    assert _native.lib.dt_control_stop.restype is None
    # a name the header does not declare is not reached by chance
    with pytest.raises(AttributeError, match="dt_no_such_function is not bound: the library's header declares"):
        _native.lib.dt_no_such_function


def test_the_exported_functions_are_the_declared_ones():
    declared = set(re.findall(r"DT_API\s+[^;(]*?\b(dt_\w+)\s*\(", HEADER.read_text()))
    res = run(["nm", "-D", "--defined-only", LIBDEVTRACE])
    exported = {f[2] for f in (line.split() for line in res.stdout.splitlines()) if len(f) == 3 and f[1] == "T"}
    assert declared == exported == set(ABI.functions)
    assert len(declared) == 54


# ---- a package that disagrees does not import ------------------------------

def package_copy(tmp_path, edits):
    """The package copied, with (file, old, new) edits made (each old text
    must be there: the test cannot pass on a source it no longer edits)."""
    copy = tmp_path / "python"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "_native"))
    for rel, old, new in edits:
        path = copy / "devtrace" / rel
        text = path.read_text()
        assert text.count(old) == 1, (rel, old)
        path.write_text(text.replace(old, new))
    return copy


def import_fails(tmp_path, edits):
    """Import the edited package: it must fail with LayoutError; returns
    the differences it names."""
    copy = package_copy(tmp_path, edits)
    res = run([sys.executable, "-c", "import devtrace"],
              env={"PYTHONPATH": str(copy), "DEVTRACE_LIBRARY": str(LIBDEVTRACE)})
    assert res.returncode != 0, res.stdout
    assert "devtrace._native.LayoutError: %s (devtrace %s) does not declare the types and constants of devtrace.h " \
           "as this Python package (%s) does:" % (LIBDEVTRACE, devtrace.__version__, (copy / "devtrace").resolve()) \
        in res.stderr, \
        res.stderr
    assert "point DEVTRACE_LIBRARY at the libdevtrace built from this package's checkout" in res.stderr
    message = res.stderr[res.stderr.index("LayoutError"):]
    return [line.strip() for line in message.splitlines() if line.startswith("  ")]


def member(struct, path):
    ctype, offset, size = ABI.members[struct][path]
    return ctype, offset, size


def test_a_member_declared_at_a_wrong_offset_fails_the_import(tmp_path):
    """dt_config.capture (a uint32_t) declared as 8 bytes: it moves, and
    every member after it."""
    ctype, offset, size = member("dt_config", "capture")
    assert (ctype, size) == ("uint32_t", 4)
    after = [p for p, (_, o, _) in ABI.members["dt_config"].items() if o > offset]
    got = import_fails(tmp_path, [("_native.py", '("capture", ctypes.c_uint32)', '("capture", ctypes.c_uint64)')])
    config_size = ctypes.sizeof(_native.DtConfig)
    assert got[0] == "sizeof(dt_config): %d bytes in C, %d in Python (DtConfig)" % (config_size, config_size + 8)
    assert got[1] == "dt_config.capture: offset %d, 4 bytes in C (uint32_t); offset %d, 8 bytes in Python (c_ulong)" \
        % (offset, offset + 4)
    assert [g.split(":")[0] for g in got[2:]] == ["dt_config." + p for p in after]
    assert len(got) == 2 + len(after) == 8


def test_a_member_of_the_union_at_a_wrong_offset_fails_the_import(tmp_path):
    """A kernel's grid declared after its block: both named, nothing else."""
    old = '("grid", ctypes.c_int32 * 3),\n        ("block", ctypes.c_int32 * 3),'
    new = '("block", ctypes.c_int32 * 3),\n        ("grid", ctypes.c_int32 * 3),'
    _, grid, _ = member("dt_event", "u.kernel.grid")
    _, block, _ = member("dt_event", "u.kernel.block")
    assert import_fails(tmp_path, [("_native.py", old, new)]) == [
        "dt_event.u.kernel.grid: offset %d, 12 bytes in C (int32_t[3]); offset %d, 12 bytes in Python "
        "(c_int_Array_3)" % (grid, block),
        "dt_event.u.kernel.block: offset %d, 12 bytes in C (int32_t[3]); offset %d, 12 bytes in Python "
        "(c_int_Array_3)" % (block, grid)]


def test_a_member_of_another_type_or_missing_or_extra_fails_the_import(tmp_path):
    _, launch, _ = member("dt_event", "u.api.launch")
    """Same sizes and offsets, another type (a signed int read as unsigned,
    a double as an integer), a member renamed: each named."""
    got = import_fails(tmp_path, [
        ("_native.py", '("return_code", ctypes.c_int32)', '("return_code", ctypes.c_uint32)'),
        ("_native.py", '("launch", ctypes.c_int)]', '("spare", ctypes.c_int)]'),
        ("_native.py", '("bandwidth_gbps", ctypes.c_double)', '("bandwidth_gbps", ctypes.c_uint64)'),
    ])
    assert got == [
        "dt_event.u.api.return_code: int32_t in C, c_uint in Python",
        "dt_event.u.api.launch: int at offset %d (4 bytes) in C, not declared in Python (DtEvent)" % launch,
        "dt_event.u.collective.bandwidth_gbps: double in C, c_ulong in Python",
        "dt_event.u.api.spare: declared in Python (DtEvent), not in C"]


def test_a_constant_of_another_value_or_unknown_fails_the_import(tmp_path):
    got = import_fails(tmp_path, [
        ("_native.py", "DT_CAPTURE_MEMORY = 1 << 7\n", "DT_CAPTURE_MEMORY = 1 << 9\nDT_CAPTURE_EVERYTHING = 0xffff\n"),
    ])
    assert got == ["DT_CAPTURE_MEMORY: 128 in C, 512 in Python (devtrace._native)",
                   "DT_CAPTURE_EVERYTHING: declared in Python (devtrace._native), not in C"]


def test_an_enum_that_differs_fails_the_import(tmp_path):
    got = import_fails(tmp_path, [
        ("events.py", "    OP = 9\n    COLLECTIVE = 10\n    MEMORY = 11\n", "    OP = 9\n    COLLECTIVE = 10\n"),
        ("events.py", "    HTOH = 4\n    PTOP = 5\n", "    HTOH = 5\n    PTOP = 4\n    PEER = 6\n"),
    ])
    assert got == ["dt_event_kind: DT_EVENT_MEMORY = 11 in C, not in Python's EventKind",
                   "dt_copy_kind: DT_COPY_HTOH = 4 in C, CopyKind.HTOH = 5 in Python",
                   "dt_copy_kind: DT_COPY_PTOP = 5 in C, CopyKind.PTOP = 4 in Python",
                   "dt_copy_kind: CopyKind.PEER = 6 in Python, no DT_COPY_PEER in C"]


def test_a_library_that_declares_more_than_the_package_is_named():
    """A library newer than the package (a member, an enumerator and a
    function it does not know): the member and the enumerator are
    differences, the function is left unbound and says why."""
    entries = table()
    at = next(i for i, e in enumerate(entries) if e[:2] == ("dt_config", "flight_recorder_bytes"))
    entries.insert(at + 1, ("dt_config", "ring_pages", "uint32_t", 64, 4))
    entries = [e if e[:2] != ("", "dt_config") else ("", "dt_config", "struct", 0, 72) for e in entries]
    entries.append(("dt_event_kind", "DT_EVENT_BARRIER", "constant", 12, 0))
    entries.append(("", "dt_session_ring", "int (const dt_session *, dt_ring *)", 0, 0))
    abi = _native.Abi(entries)
    assert abi.struct_differences(_native.DtConfig) == [
        "sizeof(dt_config): 72 bytes in C, 64 in Python (DtConfig)",
        "dt_config.ring_pages: uint32_t at offset 64 (4 bytes) in C, not declared in Python (DtConfig)"]
    assert abi.enum_differences(devtrace.EventKind, "dt_event_kind", "DT_EVENT_") == [
        "dt_event_kind: DT_EVENT_BARRIER = 12 in C, not in Python's EventKind"]
    lib = _native.Library(_native._cdll, abi)
    assert list(lib._unbound) == ["dt_session_ring"]
    with pytest.raises(AttributeError, match=re.escape(
            "libdevtrace's dt_session_ring is not bound: its prototype int (const dt_session *, dt_ring *) has a "
            "C type this package does not know: 'dt_ring *'")):
        lib.dt_session_ring
    assert lib.dt_step_count() == _native.lib.dt_step_count()


def test_a_library_without_the_table_is_refused_with_why():
    other = BUILD / "libdevtrace_columns.so"
    res = run([sys.executable, "-c", "import devtrace"], env={"DEVTRACE_LIBRARY": str(other)})
    assert res.returncode != 0
    assert ("ImportError: %s lacks dt_abi_entry: it is older than this Python package" % other) in res.stderr, \
        res.stderr


# ---- the table is the whole header -----------------------------------------

def header_declarations():
    """What the header declares, as clang reads it: {(scope, name): type}
    for structs and enums ("struct", "enum"), members (their type),
    enumerators and numeric macros ("constant") and functions (signature)."""
    clang = shutil.which("clang")
    assert clang, "clang is not on PATH (scripts/deps.sh installs it)"
    res = run([clang, "-x", "c", "-std=c11", "-fsyntax-only", "-Xclang", "-ast-dump=json",
               "-I", SOURCE / "include", HEADER])
    assert res.returncode == 0, res.stderr
    out = {}

    def members(record, prefix, scope):
        pending = None
        for d in record.get("inner", []):
            if d["kind"] == "RecordDecl":
                pending = d
            elif d["kind"] == "FieldDecl":
                qual = d["type"]["qualType"]
                nested = re.match(r"(struct|union) \(unnamed", qual)
                out[(scope, prefix + d["name"])] = nested.group(1) if nested else qual
                if nested:
                    members(pending, prefix + d["name"] + ".", scope)
                pending = None

    for d in json.loads(res.stdout)["inner"]:
        name = d.get("name", "")
        if d["kind"] == "RecordDecl" and name.startswith("dt_") and d.get("completeDefinition"):
            out[("", name)] = "struct"
            members(d, "", name)
        elif d["kind"] == "EnumDecl":
            constants = [c["name"] for c in d.get("inner", []) if c["kind"] == "EnumConstantDecl"]
            if name.startswith("dt_"):
                out[("", name)] = "enum"
            if name.startswith("dt_") or any(c.startswith("DT_") for c in constants):
                out.update({(name, c): "constant" for c in constants})
        elif d["kind"] == "FunctionDecl" and name.startswith("dt_"):
            out[("", name)] = d["type"]["qualType"]
    # the macros that are numbers (not DT_API, not DT_VERSION_STRING), by what they expand to
    res = run([clang, "-x", "c", "-std=c11", "-dM", "-E", "-I", SOURCE / "include", HEADER])
    macros = re.findall(r"^#define (DT_[A-Z0-9_]+) \S", res.stdout, re.M)
    probe = "#include <devtrace/devtrace.h>\n" + "".join("probe_%d %s\n" % (i, m) for i, m in enumerate(macros))
    res = subprocess.run([clang, "-x", "c", "-std=c11", "-E", "-P", "-I", str(SOURCE / "include"), "-"],
                         input=probe, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    expanded = dict(re.findall(r"^probe_(\d+) (.*)$", res.stdout, re.M))
    assert len(expanded) == len(macros)
    for i, name in enumerate(macros):
        if not expanded[str(i)].startswith(('"', "__attribute__")):
            out[("", name)] = "constant"
    return out


def spelled(ctype):
    """A C type as clang spells it."""
    ctype = re.sub(r"\bunsigned\b(?! (int|long|char|short))", "unsigned int", ctype)
    return re.sub(r"\s*([*(),\[\]])\s*", r"\1", ctype)


def test_the_table_lists_every_declaration_of_the_header_as_the_header_writes_it():
    declared = header_declarations()
    listed = {(s, n): t for s, n, t, _, _ in table()}
    assert len(listed) == len(table())
    assert sorted(set(declared) - set(listed)) == []
    assert sorted(set(listed) - set(declared)) == []
    assert {k: spelled(t) for k, t in listed.items()} == {k: spelled(t) for k, t in declared.items()}
    assert listed[("dt_event", "u.kernel.grid")] == "int32_t[3]" and listed[("dt_event", "u")] == "union"
    assert listed[("", "DT_CAPTURE_KERNEL_QUEUED")] == listed[("dt_event_kind", "DT_EVENT_KERNEL")] == "constant"


def test_the_table_s_values_are_the_compiler_s():
    """Sizes, offsets and values as a C program of its own computes them
    from the header (the table's are the library's compiler's)."""
    lines, expect = [], []
    for scope, name, ctype, value, size in table():
        if ctype == "constant":
            lines.append('printf("%%s %%llu\\n", "%s", (unsigned long long)(%s));' % (name, name))
            expect.append("%s %d" % (name, value))
        elif ctype in ("struct", "enum") and not scope:
            lines.append('printf("%%s %%zu\\n", "%s", sizeof(%s));' % (name, name))
            expect.append("%s %d" % (name, size))
        elif scope and "(" not in ctype:
            lines.append('printf("%%s %%zu %%zu\\n", "%s.%s", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (scope, name, scope, name, scope, name))
            expect.append("%s.%s %d %d" % (scope, name, value, size))
    src = ("#include <stddef.h>\n#include <stdio.h>\n#include <devtrace/devtrace.h>\n"
           "int main(void)\n{\n%s\nreturn 0;\n}\n")
    work = BUILD / "tests" / "abi_values"
    work.mkdir(parents=True, exist_ok=True)
    (work / "values.c").write_text(src % "\n".join(lines))
    res = run(["cc", "-std=c11", "-I", SOURCE / "include", "-o", work / "values", work / "values.c"])
    assert res.returncode == 0, res.stderr
    res = run([work / "values"])
    assert res.stdout.splitlines() == expect


# ---- one classification ----------------------------------------------------

CLASS = {"DEVICE": _native.DT_EVENT_CLASS_DEVICE, "HOST": _native.DT_EVENT_CLASS_HOST,
         "LAUNCHED": _native.DT_EVENT_CLASS_LAUNCHED, "API": _native.DT_EVENT_CLASS_API}


def test_each_kind_has_its_class():
    got = {k.name: {c for c, bit in CLASS.items() if _native.lib.dt_event_kind_class(k) & bit}
           for k in devtrace.EventKind}
    assert got == {"KERNEL": {"DEVICE", "LAUNCHED"}, "MEMCPY": {"DEVICE", "LAUNCHED"},
                   "MEMSET": {"DEVICE", "LAUNCHED"}, "RUNTIME": {"HOST", "API"}, "DRIVER": {"HOST", "API"},
                   "SYNC": {"DEVICE"}, "OVERHEAD": {"DEVICE"}, "RANGE": {"HOST"}, "OP": {"HOST"},
                   "COLLECTIVE": {"DEVICE", "LAUNCHED"}, "MEMORY": {"DEVICE"}}
    for no_kind in (0, 12, 31, 32, 255, 2**31 - 1, 2**32 - 1):
        assert _native.lib.dt_event_kind_class(no_kind) == 0


def test_the_package_types_events_by_the_library_s_classes():
    from devtrace import events

    assert events._HOST_KINDS == {k for k in devtrace.EventKind
                                  if _native.lib.dt_event_kind_class(k) & _native.DT_EVENT_CLASS_HOST}
    assert sorted(events._API_KINDS) == [devtrace.EventKind.RUNTIME, devtrace.EventKind.DRIVER]


def test_the_kineto_plugin_asks_the_library_what_each_kind_is():
    """No list of kinds of its own in the plugin's choice of what it hands
    torch.profiler, and of which Kineto type (the torch tests check what it
    hands)."""
    src = (PACKAGE_DIR / "devtrace" / "torch" / "kineto_plugin.cpp").read_text()

    def body(signature):
        return src[src.index(signature):].split("\n}\n", 1)[0]

    assert "dt_event_kind_class" in body("bool is_device_kind(int k)")
    assert "DT_EVENT_CLASS_LAUNCHED" in body("bool is_device_kind(int k)")
    assert "dt_event_kind_class" in body("bool is_api_kind(int k)")
    assert "DT_EVENT_CLASS_API" in body("bool is_api_kind(int k)")
    assert "is_api_kind(kind)" in body("ActivityType activity_type(int kind)")
    kinds = re.findall(r"DT_EVENT_[A-Z_]+", body("bool is_device_kind") + body("bool is_api_kind") +
                       body("ActivityType activity_type"))
    assert sorted(set(kinds)) == ["DT_EVENT_CLASS_API", "DT_EVENT_CLASS_LAUNCHED", "DT_EVENT_DRIVER",
                                  "DT_EVENT_MEMCPY", "DT_EVENT_MEMSET"]


# ---- one version -----------------------------------------------------------

def header_version():
    parts = [re.search(r"^#define DT_VERSION_%s (\d+)$" % p, HEADER.read_text(), re.M).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def test_the_version_is_written_once_in_the_header():
    version = header_version()
    assert devtrace.__version__ == devtrace.version() == version
    assert ABI.constants["DT_VERSION_NUMBER"][1] == sum(int(p) * f for p, f in zip(version.split("."),
                                                                                    (10000, 100, 1)))
    cache = (BUILD / "CMakeCache.txt").read_text()
    assert re.search(r"^CMAKE_PROJECT_VERSION:\w+=(.*)$", cache, re.M).group(1) == version
    assert (BUILD / ("libdevtrace.so." + version)).exists()
    # pyproject.toml's metadata, as scikit-build-core's regex provider reads it
    settings = tomllib.loads((SOURCE / "pyproject.toml").read_text())["tool"]["scikit-build"]["metadata"]["version"]
    assert settings["provider"] == "scikit_build_core.metadata.regex"
    m = re.search(settings["regex"], (SOURCE / settings["input"]).read_text(), re.M)
    assert settings["result"].format(*m.groups(), **m.groupdict()) == version
    # written nowhere else: not in the build files, the header's string or the package
    written = [p for p in [SOURCE / "CMakeLists.txt", SOURCE / "pyproject.toml", HEADER,
                           *sorted((PACKAGE_DIR / "devtrace").rglob("*.py")),
                           *sorted((PACKAGE_DIR / "devtrace").rglob("*.cpp"))]
               if re.search(r"(?<![\d.])%s(?![\d.])" % re.escape(version), p.read_text())]
    assert written == []
