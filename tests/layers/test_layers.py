"""The layer check fails on what it exists to catch: a layer that includes
one above it, a header hidden from a layer, a cycle of includes, an
oversized file (of src/ or of tests/); and passes on a tree that keeps the rules."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("check_layers.py")


def tree(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], capture_output=True, text=True)


GOOD = {
    "src/base/hash.h": "#pragma once\n",
    "src/core/store.h": '#include "base/hash.h"\n',
    "src/core/store.c": '#include "core/store.h"\n',
    "src/export/chrome.c": '#include "core/recording.h"\n#include "base/hash.h"\n',
    "src/core/recording.h": '#include "core/store.h"\n',
    "src/cli/main.c": '#include "reader/dt_reader.h"\n#include "devtrace/devtrace.h"\n',
    "src/reader/dt_reader.h": '#include "base/hash.h"\n',
}


def test_a_tree_that_keeps_the_rules_passes(tmp_path):
    r = tree(tmp_path, GOOD)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_layer_that_includes_one_above_it_fails(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/core/session.c": '#include "export/chrome.h"\n',
                                     "src/export/chrome.h": "#pragma once\n"}))
    assert r.returncode == 1
    assert "src/core/session.c: includes src/export/chrome.h: src/core may not include src/export" in r.stdout


def test_export_sees_the_recording_view_not_the_rest_of_core(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/export/perfetto.c": '#include "core/session.h"\n',
                                     "src/core/session.h": "#pragma once\n"}))
    assert r.returncode == 1
    assert "src/export/perfetto.c: includes src/core/session.h" in r.stdout
    # what the view includes comes with it
    assert "src/export/chrome.c" not in r.stdout


def test_the_session_is_opaque_outside_core(tmp_path):
    files = dict(GOOD, **{
        "src/core/sink.h": '#include "core/store.h"\n',
        "src/core/session.h": '#include "core/sink.h"\n',
        "src/core/session_impl.h": '#include "core/session.h"\n',
        "src/core/session.c": '#include "core/session_impl.h"\n',
        "src/core/leaky.h": '#include "core/session_impl.h"\n',
        "src/api/write.c": '#include "core/session.h"\n#include "core/leaky.h"\n',
        "src/backends/engine.c": '#include "core/sink.h"\n#include "core/session.h"\n',
    })
    r = tree(tmp_path, files)
    assert r.returncode == 1
    # core sees its own fields; api the session's calls, a backend the sink
    assert "src/core/session.c" not in r.stdout
    assert "src/api/write.c: includes src/core/session.h" not in r.stdout
    assert "src/backends/engine.c: includes src/core/sink.h" not in r.stdout
    # the fields, even through another header; the session's calls from a backend
    assert "src/api/write.c: includes src/core/leaky.h: src/core/session_impl.h is hidden from src/api" in r.stdout
    assert "src/backends/engine.c: includes src/core/session.h: src/core/session.h is hidden from src/backends" \
        in r.stdout


def test_a_cycle_fails(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/core/a.h": '#include "core/b.h"\n', "src/core/b.h": '#include "core/a.h"\n'}))
    assert r.returncode == 1
    assert "include cycle: src/core/a.h -> src/core/b.h" in r.stdout


def test_the_reader_may_not_reach_into_the_core(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/reader/check.c": '#include "core/store.h"\n'}))
    assert r.returncode == 1
    assert "src/reader/check.c: includes src/core/store.h: src/reader may not include src/core" in r.stdout


def test_oversized_files_fail(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/core/big.c": "int x;\n" * 1001, "src/core/big.h": "\n" * 401,
                                     "src/backends/vendor_abi.h": "\n" * 2000}))
    assert r.returncode == 1
    assert "src/core/big.c: 1001 lines (at most 1000)" in r.stdout
    assert "src/core/big.h: an internal header of 401 lines (at most 400)" in r.stdout
    assert "vendor_abi.h" not in r.stdout


def test_oversized_test_files_fail(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"tests/unit/core/test_big.c": "int x;\n" * 1001,
                                     "tests/conformance/big.h": "\n" * 1001,
                                     "tests/unit/core/test_split/part.c": "int y;\n" * 1000,
                                     "tests/unit/core/test_split/split.h": "\n" * 999}))
    assert r.returncode == 1
    assert "tests/unit/core/test_big.c: 1001 lines (at most 1000)" in r.stdout
    assert "tests/conformance/big.h: 1001 lines (at most 1000)" in r.stdout
    # a test's files are capped one by one, its headers as its C files
    assert "test_split" not in r.stdout


def test_an_unknown_folder_is_named(tmp_path):
    r = tree(tmp_path, dict(GOOD, **{"src/misc/x.c": "int y;\n"}))
    assert r.returncode == 1
    assert "src/misc is no layer" in r.stdout


def test_an_internal_function_named_as_a_public_one_fails(tmp_path):
    """Public functions are dt_<name> and declared in a public header;
    internal ones dt__<name>, defined, declared or made by a macro."""
    files = dict(GOOD, **{"include/devtrace/devtrace.h": "DT_API int dt_session_start(void *s);\n",
                          "src/core/session.h": "DT_HIDDEN void dt_session_note(void *s);\n"
                                                "DT_HIDDEN void dt__core_lock(void *s);\n"
                                                "DT_HIDDEN int dt_session_start(void *s);\n",
                          "src/core/session.c": "static inline int\ndt_core_id(int x)\n{ return x; }\n"
                                                "#define dt_core_max(a, b) ((a) > (b) ? (a) : (b))\n"
                                                "typedef int dt_core_fn(int);\n"})
    r = tree(tmp_path, files)
    assert r.returncode == 1
    rule = "internal names start dt__ (public ones are declared in include/devtrace/devtrace.h)"
    assert f"src/core/session.h:1: dt_session_note is internal and named dt_: {rule}" in r.stdout
    assert f"src/core/session.c:2: dt_core_id is internal and named dt_: {rule}" in r.stdout
    assert f"src/core/session.c:4: dt_core_max is internal and named dt_: {rule}" in r.stdout
    assert "dt__core_lock" not in r.stdout
    assert "dt_session_start" not in r.stdout
    # a type keeps dt_
    assert "dt_core_fn" not in r.stdout


def test_an_internal_symbol_named_dt_fails(tmp_path):
    """What the objects define under dt_ is the public API: a variable (or a
    function a macro names) the source check cannot see fails by nm."""
    files = dict(PUBLIC_CALLS, **{"src/core/state.c": "#define STATE(x) int dt_state_##x = 1;\nSTATE(on)\n"
                                                      "int dt__state_off = 0;\n"})
    r = built_tree(tmp_path, files)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "defines dt_state_on, internal and named dt_" in r.stdout
    assert "dt__state_off" not in r.stdout
    assert "dt_session_write" not in r.stdout


def built_tree(root, files):
    """A checkout at root with its sources compiled into root/build the way
    CMake lays objects out (build/CMakeFiles/<target>.dir/src/...)."""
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for name in files:
        if name.endswith(".c"):
            obj = root / "build" / "CMakeFiles" / "devtrace_obj.dir" / (name + ".o")
            obj.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cc", "-c", "-I", str(root / "src"), "-o", str(obj), str(root / name)], check=True)
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--build", str(root / "build")],
                          capture_output=True, text=True)


CALLS = {
    "src/base/hash.h": "#pragma once\n",
    "src/base/hash.c": "int dt__hash_mix(int x) { return x * 31; }\n",
    "src/core/store.c": "int dt__hash_mix(int x);\nint dt__store_put(int x) { return dt__hash_mix(x); }\n",
}


def test_a_checkout_under_a_folder_named_src_is_checked(tmp_path):
    """~/src/devtrace is a common place for a checkout: its build's objects
    are found, and a call that looks up is still caught there."""
    root = tmp_path / "src" / "devtrace"
    r = built_tree(root, CALLS)
    assert r.returncode == 0, r.stdout + r.stderr
    up = dict(CALLS, **{"src/base/hash.c": "int dt__store_put(int x);\nint dt__hash_mix(int x) { return dt__store_put(x); }\n"})
    r = built_tree(tmp_path / "src" / "again", up)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "src/base/hash.c: calls dt__store_put of src/core/store.c: src/base may not call into src/core" in r.stdout


PUBLIC_CALLS = {
    "include/devtrace/devtrace.h": "#define DT_API\nDT_API int dt_session_write(int x);\nDT_API int dt_prepare(int x);\n"
                                   "DT_API const char *dt_format_name(int f);\n",
    "src/format/formats.c": "const char *dt_format_name(int f) { return f ? \"json\" : 0; }\n",
    "src/api/write.c": "int dt_session_write(int x) { return x; }\nint dt_prepare(int x) { return x; }\n",
    "src/core/session.c": "const char *dt_format_name(int f);\nint dt__core_new(int f) { return dt_format_name(f) != 0; }\n",
    "src/cli/main.c": "int dt_session_write(int x);\nint main(void) { return dt_session_write(0); }\n",
}


def test_an_upward_call_through_the_public_header_fails(tmp_path):
    """A public function is called as an internal one is: from a layer that
    may see where it is defined (core may call format's dt_format_name), or
    from a layer above the facade (cli); core calling api's fails."""
    r = built_tree(tmp_path / "down", PUBLIC_CALLS)
    assert r.returncode == 0, r.stdout + r.stderr
    up = dict(PUBLIC_CALLS, **{"src/core/flush.c": "int dt_session_write(int x);\n"
                                                   "int dt__core_flush(int x) { return dt_session_write(x); }\n"})
    r = built_tree(tmp_path / "up", up)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("src/core/flush.c: calls dt_session_write of src/api/write.c: src/core may not call into src/api"
            in r.stdout)
    assert "src/core/session.c" not in r.stdout
    assert "src/cli/main.c" not in r.stdout


def test_a_backend_calling_the_facade_fails(tmp_path):
    """No call up is exempt: a backend reaching the facade through the public
    header (dt_prepare, defined in api) fails as any other call up does."""
    tree = dict(PUBLIC_CALLS, **{"src/backends/cupti.c": "int dt_prepare(int x);\n"
                                                         "int dt__cupti_init(int x) { return dt_prepare(x); }\n"})
    r = built_tree(tmp_path / "up", tree)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "src/backends/cupti.c: calls dt_prepare of src/api/" in r.stdout
    assert "src/backends may not call into src/api" in r.stdout



def test_an_environment_variable_named_outside_its_header_fails(tmp_path):
    """Environment variables are named in src/base/env_names.h alone; a
    vendor's library variable stays on its descriptor's line."""
    files = dict(GOOD, **{
        "src/base/env_names.h": '#define DT_ENV_OUTPUT "DEVTRACE_OUTPUT"\n',
        "src/core/store.c": '#include "core/store.h"\nconst char *o = "DEVTRACE_OUTPUT";\n',
        "src/backends/mcpti.c": 'struct { const char *library_env; } d = {.library_env = "DEVTRACE_MCPTI_LIBRARY"};\n',
    })
    r = tree(tmp_path, files)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'src/core/store.c:2: names an environment variable outside src/base/env_names.h: "DEVTRACE_OUTPUT"' in r.stdout
    assert "mcpti.c" not in r.stdout
    assert "src/base/env_names.h:1" not in r.stdout


def test_a_circle_of_calls_that_crosses_folders_fails(tmp_path):
    """Files that call each other in a loop are one module, held whole by
    one folder: a loop between a layer's files and a module below it fails;
    the same loop inside the module passes."""
    inside = dict(CALLS, **{
        "src/core/ring/ring.c": "int dt__ring_pool(int x);\nint dt__ring_put(int x) { return x ? dt__ring_pool(x - 1) : 0; }\n",
        "src/core/ring/pool.c": "int dt__ring_put(int x);\nint dt__ring_pool(int x) { return dt__ring_put(x); }\n",
    })
    r = built_tree(tmp_path / "inside", inside)
    assert r.returncode == 0, r.stdout + r.stderr
    across = dict(CALLS, **{
        "src/core/ring/ring.c": "int dt__ring_pool(int x);\nint dt__ring_put(int x) { return x ? dt__ring_pool(x - 1) : 0; }\n",
        "src/core/pool.c": "int dt__ring_put(int x);\nint dt__ring_pool(int x) { return dt__ring_put(x); }\n",
    })
    r = built_tree(tmp_path / "across", across)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("a circle of calls crosses folders: src/core, src/core/ring (src/core/pool.c calls dt__ring_put of "
            "src/core/ring/ring.c; src/core/ring/ring.c calls dt__ring_pool of src/core/pool.c)") in r.stdout


def test_a_module_over_its_size_fails(tmp_path):
    big = "int x;\n" * 1600
    r = tree(tmp_path, dict(GOOD, **{"src/core/ring/a.c": big, "src/core/ring/b.c": big}))
    assert r.returncode == 1
    assert "src/core/ring: a module of 3200 lines (at most 3000)" in r.stdout
    r = tree(tmp_path / "small", dict(GOOD, **{"src/core/ring/a.c": big}))
    assert "src/core/ring" not in r.stdout, r.stdout
