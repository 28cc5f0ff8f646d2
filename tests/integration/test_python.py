"""The Python package over the C library, as a Python user drives it: an
emulated TOPSPTI device does the work, devtrace records it."""
import gzip
import json
import os
import sys
import threading

import pytest

from conftest import (DEVTRACE, TOPSPTI_EMU, Emulator, check_trace, load_trace, need, needs_emulator,
                      raised_in_child, run)

pytestmark = needs_emulator()

os.environ["DEVTRACE_TOPSPTI_LIBRARY"] = str(TOPSPTI_EMU)

import devtrace  # noqa: E402  (after the environment above)


@pytest.fixture(scope="module")
def emu():
    return Emulator(TOPSPTI_EMU)


def launch_step(emu, op_id, stream=1, scale=1):
    """One operation's device work: a kernel, a copy, a fill; returns what
    the emulator was asked for as (kind, name, ns, bytes)."""
    with devtrace.external(op_id, name=f"op{op_id}"):
        emu.kernel(f"_Z{len(str(op_id)) + 4}gemm{op_id}v", 40_000 * scale, stream=stream)  # gemm<id>()
        emu.memcpy(4096 * op_id, 20_000 * scale, stream=stream)
        emu.memset(1024 * op_id, 10_000 * scale, stream=stream)
    return [("kernel", f"gemm{op_id}()", 40_000 * scale, 0),
            ("memcpy", "Memcpy HtoD (Pageable -> Device)", 20_000 * scale, 4096 * op_id),
            ("memset", "Memset (Device)", 10_000 * scale, 1024 * op_id)]


KIND_OF = {devtrace.EventKind.KERNEL: "kernel", devtrace.EventKind.MEMCPY: "memcpy",
           devtrace.EventKind.MEMSET: "memset"}


def test_backends_are_listed_with_reasons():
    names = [b.name for b in devtrace.backends()]
    assert names == devtrace.backend_names()
    assert {"cupti", "topspti", "null"} <= set(names)
    topspti = devtrace.probe("topspti")
    assert topspti.available and topspti.library == str(TOPSPTI_EMU)
    assert topspti.vendor.startswith("Enflame")
    with pytest.raises(devtrace.UnknownBackendError) as e:
        devtrace.probe("no-such-backend")
    assert e.value.status == "DT_ERR_UNKNOWN_BACKEND"
    assert "no-such-backend" in str(e.value)


def test_the_library_says_which_backends_kineto_records_itself():
    from devtrace._api import kineto_native

    assert [n for n in devtrace.backend_names() if kineto_native(n)] == ["cupti"]
    with pytest.raises(devtrace.UnknownBackendError) as e:
        kineto_native("no-such-backend")
    assert "no-such-backend" in str(e.value)


def test_profile_records_typed_events_exactly(tmp_path, emu):
    emu.reset_stats()
    out = tmp_path / "t.json"
    with devtrace.profile(out, backend="topspti") as p:
        with devtrace.range("step") as step:
            expected = launch_step(emu, 1) + launch_step(emu, 2, stream=2, scale=2)
        emu.synchronize()
    assert p.backend == "topspti"
    assert p.lost == 0 and set(p.losses.values()) == {0}
    assert "outside_window" in p.losses and "vendor_dropped" in p.losses
    device = [e for e in p.events if isinstance(e, devtrace.DeviceEvent)]
    got = sorted((KIND_OF[e.kind], e.name, getattr(e, "bytes", 0), e.duration_ns) for e in device)
    want = sorted((kind, name, nbytes, ns) for kind, name, ns, nbytes in expected)
    assert [g[:3] for g in got] == [w[:3] for w in want]
    # the emulator's durations, through the clock fit (which may round by a nanosecond)
    assert all(abs(g[3] - w[3]) <= 1 for g, w in zip(got, want)), (got, want)
    records = emu.records()
    for kind in ("kernel", "memcpy", "memset"):
        assert sum(1 for e in device if KIND_OF[e.kind] == kind) == records[kind]
    assert sum(1 for e in p.events if e.kind == devtrace.EventKind.RUNTIME) == records["runtime"]
    op_of = {"gemm1()": 1, "gemm2()": 2, 4096: 1, 8192: 2, 1024: 1, 2048: 2}
    for e in device:
        assert e.external_id == op_of[e.name if e.kind == devtrace.EventKind.KERNEL else e.bytes]
    kernel = next(e for e in device if isinstance(e, devtrace.KernelEvent))
    assert kernel.block == (32, 1, 1) and kernel.registers_per_thread > 0
    ops = [e for e in p.events if isinstance(e, devtrace.OpEvent)]
    assert sorted((o.name, o.external_id, o.parent_id) for o in ops) == [("op1", 1, step.id), ("op2", 2, step.id)]
    assert all(o.thread == threading.get_native_id() for o in ops)
    assert p.enclosing_range(1) == step.id and p.enclosing_range(99) is None
    (rng,) = [e for e in p.events if isinstance(e, devtrace.RangeEvent)]
    assert rng.name == "step" and rng.range_id == step.id == rng.external_id
    # the trace file says the same
    trace = check_trace(out)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert sorted(k["name"] for k in kernels) == ["gemm1()", "gemm2()"]


def test_every_external_id_resolves_to_a_host_event(tmp_path, emu):
    """Ops pushed with a name are cpu_op spans: the trace resolves its own
    External ids, without a framework's trace beside it."""
    out = tmp_path / "t.json"
    with devtrace.profile(out, backend="topspti"):
        with devtrace.range("forward"):
            launch_step(emu, 3)
        launch_step(emu, 4)
        emu.synchronize()
    trace = check_trace(out)
    events = trace["traceEvents"]
    host = {e["args"]["External id"]: e for e in events
            if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")}
    cpu_ops = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    assert cpu_ops == {3: "op3", 4: "op4"}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert len(device) == 6
    for e in device:
        owner = host[e["args"]["External id"]]
        # the op's span encloses the API call that launched the work
        api = next(a for a in events if a.get("cat") == "privateuse1_runtime"
                   and a["args"]["correlation"] == e["args"]["correlation"])
        assert owner["ts"] <= api["ts"] and api["ts"] + api["dur"] <= owner["ts"] + owner["dur"]
        assert owner["tid"] == api["tid"]
    assert trace["devtrace"]["counts"]["op"] == 2


def test_thread_and_process_names(tmp_path, emu):
    """A worker that ended before the trace was written keeps its name; the
    process is named by its command line, not the 15-byte kernel name."""
    out = tmp_path / "t.json"
    tids = []

    def worker():
        tids.append(threading.get_native_id())
        with open(f"/proc/self/task/{tids[0]}/comm", "w") as f:
            f.write("data-loader-3")
        launch_step(emu, 5, stream=3)

    with devtrace.profile(out, backend="topspti") as p:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        emu.synchronize()
    assert p.thread_name(tids[0]) == "data-loader-3"
    trace = check_trace(out)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert names[(os.getpid(), tids[0])] == f"thread {tids[0]} (data-loader-3)"
    (pname,) = [e["args"]["name"] for e in trace["traceEvents"]
                if e.get("ph") == "M" and e["name"] == "process_name" and e["pid"] == os.getpid()]
    with open("/proc/self/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    assert pname.startswith(os.path.basename(argv[0]) + " ")
    assert " ".join(argv[1:])[:80] in pname


def test_numpy_columns_match_the_typed_events(tmp_path, emu):
    np = need("numpy")
    with devtrace.profile(backend="topspti") as p:
        for i in range(1, 40):
            launch_step(emu, i, stream=1 + i % 3)
        emu.synchronize()
    a = p.arrays()
    events = p.events
    assert len(a) == len(events) == len(p)
    assert list(a.name) == [e.name for e in events]
    assert np.array_equal(a.kind, [int(e.kind) for e in events])
    assert np.array_equal(a.start_ns, [e.start_ns for e in events])
    assert np.array_equal(a.duration_ns, [e.duration_ns for e in events])
    assert np.array_equal(a.has_external, [e.external_id is not None for e in events])
    assert np.array_equal(a.external_id, [e.external_id or 0 for e in events])
    assert np.array_equal(a.stream, [getattr(e, "stream", 0) for e in events])
    assert np.array_equal(a.thread, [getattr(e, "thread", 0) for e in events])
    assert np.array_equal(a.bytes, [getattr(e, "bytes", 0) for e in events])
    assert np.array_equal(a.cbid, [getattr(e, "cbid", 0) for e in events])
    assert len(a.names) == len(set(a.names))
    # the analysis the columns are for: device time by External id
    dev = np.isin(a.kind, [1, 2, 3])
    per_op = np.bincount(a.external_id[dev].astype(np.int64), weights=a.duration_ns[dev])
    assert abs(per_op[7] - 70_000) <= 3  # three events, each through the clock fit


def test_losses_are_counted_by_reason(emu):
    emu.faults("vendor_dropped=5,reversed_timestamps=2,zero_timestamps=3")
    with devtrace.profile(backend="topspti") as p:
        for i in range(1, 4):
            launch_step(emu, i)
        emu.synchronize()
    assert p.losses["vendor_dropped"] == 5
    assert p.losses["timestamp_reversed"] == 2
    assert p.losses["timestamp_zero"] == 3
    assert p.lost == 10
    # vendor_dropped only adds to the vendor's count; the broken records are the ones not kept
    assert sum(1 for e in p.events if isinstance(e, devtrace.DeviceEvent)) == 9 - 2 - 3


def test_decorator_records_each_call(tmp_path, emu):
    out = tmp_path / "d.json.gz"

    @devtrace.profile(out, backend="topspti")
    def step(op):
        launch_step(emu, op)
        emu.synchronize()

    step(1)
    first = load_trace(out)
    step(2)
    second = load_trace(out)
    assert [e["name"] for e in first["traceEvents"] if e.get("cat") == "cpu_op"] == ["op1"]
    assert [e["name"] for e in second["traceEvents"] if e.get("cat") == "cpu_op"] == ["op2"]

    @devtrace.range("scoped")
    def ranged():
        return 42

    assert ranged() == 42 and ranged() == 42


def test_format_by_name_or_suffix(tmp_path, emu):
    """format="perfetto" and a .pftrace path write Perfetto's protobuf, a
    .gz path gzip: the library's own format table, as `devtrace record`."""
    written = {}
    for name, fmt in (("a.pftrace", None), ("b.bin", "perfetto"), ("c.pftrace.gz", None),
                      ("d.json.gz", None), ("e.out", "json")):
        with devtrace.profile(tmp_path / name, backend="topspti", format=fmt):
            launch_step(emu, 1)
            emu.synchronize()
        written[name] = (tmp_path / name).read_bytes()
    assert written["d.json.gz"][:2] == b"\x1f\x8b"
    assert gzip.decompress(written["c.pftrace.gz"])[:1] == b"\x0a"  # field 1 (packet), length-delimited
    for name in ("a.pftrace", "b.bin"):
        assert written[name][:1] == b"\x0a", name
    assert json.loads(written["e.out"])["traceEvents"]


def test_the_formats_are_the_librarys(tmp_path):
    """The formats profile() takes and names (its docstring, its error) are
    the library's table, listed by number: none hand-listed."""
    names = []
    while devtrace._api.lib.dt_format_name(len(names)) is not None:
        names.append(devtrace._api.lib.dt_format_name(len(names)).decode())
    assert names == ["json", "json.gz", "perfetto", "perfetto.gz"]
    assert '"json", "json.gz", "perfetto" or "perfetto.gz" (the' in devtrace.profile.__doc__
    assert "{formats}" not in devtrace.profile.__doc__
    with pytest.raises(ValueError) as e:
        devtrace.profile(tmp_path / "t.json", format="xml")
    assert str(e.value) == "format must be one of json, json.gz, perfetto, perfetto.gz, got 'xml'"


def test_errors_carry_the_librarys_message(tmp_path):
    with devtrace.profile(backend="null"):
        with pytest.raises(devtrace.BusyError) as e:
            devtrace.profile(backend="null").start()
        assert "another devtrace session is running" in str(e.value)
    unwritable = tmp_path / "no-such-dir" / "t.json"
    with pytest.raises(devtrace.TraceWriteError) as e:
        with devtrace.profile(unwritable, backend="null"):
            pass
    assert str(unwritable.parent) in str(e.value)
    with pytest.raises(ValueError):
        devtrace.profile("t.json", format="xml")
    with pytest.raises(ValueError):
        devtrace.profile(capture=["kernel", "teleport"])
    with pytest.raises(devtrace.DevtraceError) as e:
        with devtrace.range("r"):
            devtrace.external(1).__enter__()  # left open: the range cannot close
    assert e.value.status == "DT_ERR_STATE"
    devtrace.external(1).__exit__(None, None, None)
    with pytest.raises(ValueError):
        devtrace.external(-1)


def test_a_missing_vendor_library_is_explained():
    said = raised_in_child("devtrace.profile(backend='topspti').start()", "devtrace.BackendUnavailableError",
                           env={"DEVTRACE_TOPSPTI_LIBRARY": "/nonexistent/libtopspti.so"})
    assert said.startswith("DT_ERR_BACKEND_UNAVAILABLE")
    assert "/nonexistent/libtopspti.so" in said


def test_python_ranges_join_a_devtrace_record_session(tmp_path):
    """Under `devtrace record`, the package binds to the preloaded library:
    its ranges and ops land in the recorded trace."""
    script = tmp_path / "work.py"
    script.write_text(
        "import ctypes, os, devtrace\n"
        "emu = ctypes.CDLL(os.environ['DEVTRACE_TOPSPTI_LIBRARY'])\n"
        "g = (ctypes.c_int * 3)(1, 1, 1)\n"
        "with devtrace.range('python-range'):\n"
        "    with devtrace.external(11, name='python-op'):\n"
        "        emu.emu_launch_kernel(0, 1, b'k', g, g, ctypes.c_uint64(30000))\n"
        "emu.emu_synchronize(-1, -1)\n"
        "print(devtrace._native.library_path() or 'preloaded')\n")
    out = tmp_path / "rec.json"
    res = run([DEVTRACE, "record", "--backend", "topspti", "-o", out, "--", sys.executable, script])
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "preloaded"
    trace = check_trace(out)
    events = trace["traceEvents"]
    (k,) = [e for e in events if e.get("cat") == "kernel"]
    (op,) = [e for e in events if e.get("cat") == "cpu_op"]
    assert op["name"] == "python-op" and k["args"]["External id"] == op["args"]["External id"] == 11
    assert [e["name"] for e in events if e.get("cat") == "gpu_user_annotation"] == ["python-range"]


MSPTI_EMU = [lib for name, _, lib in __import__("conftest").VENDORS if name == "mspti"]


@pytest.mark.skipif(not MSPTI_EMU or not MSPTI_EMU[0].exists(), reason="the MSPTI emulator is not built")
def test_collectives_come_back_typed(tmp_path):
    """An all-reduce on the emulated Ascend runtime is a CollectiveEvent with
    its element count, bytes, torch dtype name and communicator; in a child
    Python, as MSPTI's library is its own process's (and records without
    LD_PRELOAD: collectives are not memory kinds)."""
    code = f"""
import ctypes, devtrace
lib = ctypes.CDLL({str(MSPTI_EMU[0])!r})
class Desc(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("stream", ctypes.c_int), ("name", ctypes.c_char_p),
                ("group", ctypes.c_char_p), ("algorithm", ctypes.c_char_p), ("data_type", ctypes.c_int),
                ("count", ctypes.c_uint64), ("duration_ns", ctypes.c_uint64)]
with devtrace.profile({str(tmp_path / "t.json")!r}, backend="mspti") as p:
    d = Desc(0, 3, b"hcom_allReduce_", b"world", b"RING", 4, 1 << 20, 50_000)
    assert lib.emu_collective(ctypes.byref(d)) == 0
    assert lib.emu_synchronize(-1, -1) == 0
(c,) = [e for e in p.events if isinstance(e, devtrace.CollectiveEvent)]
assert c.kind == devtrace.EventKind.COLLECTIVE
print(c.name, c.count, c.bytes, c.data_type, c.group, c.algorithm, c.stream, abs(c.duration_ns - 50_000) <= 1, p.lost)
"""
    res = run([sys.executable, "-c", code], env={"DEVTRACE_MSPTI_LIBRARY": str(MSPTI_EMU[0])})
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    assert res.stdout.split() == ["hcom_allReduce_", str(1 << 20), str(4 << 20), "Float", "world", "RING", "3",
                                  "True", "0"]
    trace = check_trace(tmp_path / "t.json")
    (ev,) = [e for e in trace["traceEvents"] if e.get("args", {}).get("Collective name")]
    assert ev["cat"] == "kernel" and ev["args"]["In msg nelems"] == 1 << 20 and ev["args"]["dtype"] == "Float"


@pytest.mark.skipif(not MSPTI_EMU or not MSPTI_EMU[0].exists(), reason="the MSPTI emulator is not built")
def test_memory_allocations_come_back_typed(tmp_path):
    """Device memory allocated and freed on the emulated Ascend runtime comes
    back as MemoryEvents (address, bytes, free or not, kind), with bytes in
    the numpy columns, and as torch's [memory] instants in the trace; in a
    child Python started with libmspti.so preloaded, as MSPTI needs for its
    memory kinds."""
    code = f"""
import ctypes, devtrace
lib = ctypes.CDLL({str(MSPTI_EMU[0])!r})
addr = ctypes.c_uint64()
with devtrace.profile({str(tmp_path / "t.json")!r}, backend="mspti") as p:
    assert lib.emu_malloc(1, 3, ctypes.c_uint64(3 << 20), ctypes.byref(addr)) == 0
    assert lib.emu_free(addr) == 0
mem = [e for e in p.events if isinstance(e, devtrace.MemoryEvent)]
assert [m.kind for m in mem] == [devtrace.EventKind.MEMORY] * 2
cols = p.arrays()
print(len(mem), [m.is_free for m in mem], {{m.bytes for m in mem}}, {{m.address == addr.value for m in mem}},
      {{m.memory_kind.name for m in mem}}, {{m.device for m in mem}},
      int(cols.bytes[cols.kind == devtrace.EventKind.MEMORY].sum()), p.lost)
"""
    res = run([sys.executable, "-c", code],
              env={"DEVTRACE_MSPTI_LIBRARY": str(MSPTI_EMU[0]), "LD_PRELOAD": str(MSPTI_EMU[0])})
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    assert res.stdout.split("\n")[0] == "2 [False, True] {%d} {True} {'DEVICE'} {1} %d 0" % (3 << 20, 6 << 20)
    trace = check_trace(tmp_path / "t.json")
    mem = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
    assert [(e["ph"], e["s"], e["cat"]) for e in mem] == [("i", "t", "cpu_instant_event")] * 2
    assert [(e["args"]["Bytes"], e["args"]["Total Allocated"]) for e in mem] == [(3 << 20, 3 << 20), (-(3 << 20), 0)]
    assert {(e["args"]["Device Id"], e["args"]["Device Type"]) for e in mem} == {(1, 20)}
