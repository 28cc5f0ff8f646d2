"""devtrace.torch with the real torch: a model step of custom ops that
launch work on an emulated accelerator, on two threads, under
torch.profiler; the exported trace, key_averages and HTA must show every
emulated activity, linked to the op that launched it.

The vendors are every emulator this build has, less those Kineto records
itself (CUPTI): TOPSPTI always, and any other emulated vendor as it is
added (MCPTI, PPU, MUPTI, ...)."""
import collections
import json
import sys
from pathlib import Path

import pytest

from conftest import (SOURCE, TOPSPTI_EMU, emulators, library_env_var, need, needs_emulator, preload_of,
                      raised_in_child, run)

pytestmark = needs_emulator()

WORKLOAD = Path(__file__).resolve().parent / "torch_workload.py"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("privateuse1_runtime", "privateuse1_driver")


def vendors():
    sys.path.insert(0, str(SOURCE / "python"))
    from devtrace.torch import KINETO_NATIVE_BACKENDS

    found = {name: lib for name, lib in emulators().items() if name not in KINETO_NATIVE_BACKENDS}
    assert "topspti" in found, "the TOPSPTI emulator must be built (%s)" % TOPSPTI_EMU
    return found


VENDORS = vendors()

# Vendors whose interface does not say what some checks compare: the stream
# a launch went to and the kind of host memory a copy used.
NO_LAUNCH_STREAMS = {
    "rocprofiler_sdk": "rocprofiler-sdk names the HSA queue a kernel ran on, not the HIP stream it was launched "
                       "on, and no queue for copies (devtrace puts them on row 0), nor whether host memory was "
                       "pinned (copies are named 'Unknown -> Device'): rows and copy names cannot match the launches",
}


def needs_launch_streams(result):
    why = NO_LAUNCH_STREAMS.get(result["backend"])
    if why:
        pytest.skip(why)


def record(tmp_path_factory, vendor, privateuse1=None):
    need("torch")
    out = tmp_path_factory.mktemp("%s_%s" % (vendor, privateuse1 or "plain"))
    lib = VENDORS[vendor]
    cmd = [sys.executable, WORKLOAD, "--emulator", lib, "--backend", vendor, "--out", out]
    if privateuse1:
        cmd += ["--privateuse1", privateuse1]
    env = {library_env_var(vendor): str(lib)}
    if preload_of(lib):
        # as `devtrace record` runs a program of such a vendor
        env["LD_PRELOAD"] = str(lib)
    res = run(cmd, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    result = json.loads((out / "result.json").read_text())
    with open(out / "trace.json", encoding="utf-8") as f:
        trace = json.load(f)
    return out, result, trace


@pytest.fixture(scope="module", params=sorted(VENDORS))
def plain(request, tmp_path_factory):
    """Only devtrace.torch.enable() before torch.profiler, default setup."""
    return record(tmp_path_factory, request.param)


@pytest.fixture(scope="module", params=sorted(VENDORS))
def device_plugin(request, tmp_path_factory):
    """As under a device plugin: PrivateUse1 renamed, activities=[CPU, PrivateUse1]."""
    return record(tmp_path_factory, request.param, privateuse1="emu")


def device_events(trace):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]


def expected_work(result):
    return [(w, call) for call in result["launches"] for w in call["work"]]


def work_name(cat, name):
    """A copy or fill by its direction ("Memcpy HtoD"): the memory kinds in
    its name are the vendor's to say (MSPTI's records have none)."""
    return name if cat == "kernel" else name.split(" (")[0]


def identity(e):
    """What names one launch: kernel names and copy sizes are unique per call;
    copies and fills by direction (work_name): the memory kinds are the
    vendor's to say (roctracer does not say whether host memory is pageable,
    MSPTI's records name none)."""
    return (e["cat"], work_name(e["cat"], e["name"]), e["args"].get("bytes", 0) if e["cat"] != "kernel" else 0)


def test_every_emulated_activity_appears_once_with_its_name(plain):
    _, result, trace = plain
    needs_launch_streams(result)
    assert result["plugin"]["errors"] == []
    want = sorted((w["cat"], work_name(w["cat"], w["name"]), w["bytes"]) for w, _ in expected_work(result))
    got = sorted(identity(e) for e in device_events(trace))
    assert got == want
    counts = collections.Counter(e["cat"] for e in device_events(trace))
    records = result["emu_records"]
    assert counts == {"kernel": records["kernel"], "gpu_memcpy": records["memcpy"],
                      "gpu_memset": records["memset"]}
    for cat, kind in zip(API_CATS, ("runtime", "driver")):
        calls = [e for e in trace["traceEvents"] if e.get("cat") == cat]
        assert len(calls) == records[kind] and all(e["name"] for e in calls)
    kept = result["plugin"]["kept"]
    assert (kept["kernel"], kept["memcpy"], kept["memset"]) == (records["kernel"], records["memcpy"],
                                                              records["memset"])
    assert result["plugin"]["loss"]["total"] == 0 and result["plugin"]["outside_window"] == 0
    assert trace["devtrace"]["backend"] == result["backend"]
    assert trace["devtrace"]["loss"]["total"] == 0


def test_each_activity_is_linked_to_the_op_that_launched_it(plain):
    _, result, trace = plain
    needs_launch_streams(result)
    events = trace["traceEvents"]
    cpu_ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
    api_calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in API_CATS}
    calls = launched_by(result)
    assert result["plugin"]["unresolved"] == 0 and result["plugin"]["unlinked_too_large"] == 0
    for e in device_events(trace):
        call = calls[identity(e)]
        op = cpu_ops[e["args"]["External id"]]
        assert op["name"] == call["op"]
        assert op["tid"] == call["tid"]  # the launching thread's op, not the other thread's
        api = api_calls[e["args"]["correlation"]]
        assert api["tid"] == call["tid"] and api["args"]["External id"] == e["args"]["External id"]
        assert op["ts"] <= api["ts"] and api["ts"] + api["dur"] <= op["ts"] + op["dur"]
        assert (e["pid"], e["tid"]) == (call["device"], call["stream"])
        assert e["args"]["device"] == call["device"] and e["args"]["stream"] == call["stream"]


def test_args_of_each_kind(plain):
    """The args torch's trace shows for each kind handed over, as the
    plugin writes them from devtrace's records: the same keys on every
    event of a kind, each value the record's."""
    _, result, trace = plain
    kernel_keys = {"device", "stream", "context", "correlation", "grid", "block", "registers per thread",
                   "shared memory", "queued"}
    copy_keys = {"device", "stream", "context", "correlation", "bytes", "memory bandwidth (GB/s)"}
    calls = launched_by(result)
    for e in device_events(trace):
        args = dict(e["args"])
        args.pop("External id", None)
        if e["cat"] == "kernel":
            assert set(args) == kernel_keys, e
            for k in ("grid", "block"):
                assert len(args[k]) == 3 and all(isinstance(v, int) and v >= 0 for v in args[k]), e  # 0: not said
            assert all(isinstance(args[k], int) and args[k] >= 0
                       for k in ("registers per thread", "shared memory", "queued")), e
        else:
            assert set(args) == copy_keys, e
            assert identity(e) in calls, e  # the bytes of a copy or fill an op made
            dur_ns = round(e["dur"] * 1000)
            assert args["memory bandwidth (GB/s)"] == pytest.approx(args["bytes"] / dur_ns if dur_ns else 0, rel=1e-9)
        assert all(isinstance(args[k], int) for k in ("device", "stream", "context", "correlation")), e
    apis = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in API_CATS]
    assert apis
    for e in apis:
        args = dict(e["args"])
        args.pop("External id", None)
        assert set(args) == {"cbid", "correlation", "return code"}, e
        assert isinstance(args["cbid"], int) and args["correlation"] > 0 and args["return code"] == 0, e


def test_flows_pair(plain):
    _, result, trace = plain
    events = trace["traceEvents"]
    starts = [e for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"]
    finishes = [e for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"]
    assert len(starts) == len({e["id"] for e in starts}) == len(device_events(trace))
    assert {e["id"] for e in starts} == {e["id"] for e in finishes}
    assert all(e.get("bp") == "e" for e in finishes)
    at = {(e["pid"], e["tid"], e["ts"]): e for e in events if e.get("ph") == "X"}
    for s in starts:
        f = next(x for x in finishes if x["id"] == s["id"])
        api, dev = at[(s["pid"], s["tid"], s["ts"])], at[(f["pid"], f["tid"], f["ts"])]
        assert api["cat"] in API_CATS and dev["cat"] in DEVICE_CATS
        assert api["args"]["correlation"] == dev["args"]["correlation"]
    assert result["plugin"]["flows"] == len(starts)


def launched_by(result):
    """identity of a device activity -> the op call that launched it"""
    return {(w["cat"], work_name(w["cat"], w["name"]), w["bytes"] if w["cat"] != "kernel" else 0): call
            for w, call in expected_work(result)}


def test_device_time_per_op_is_the_emulators(plain):
    _, result, trace = plain
    needs_launch_streams(result)
    by_ext = collections.defaultdict(list)
    for e in device_events(trace):
        by_ext[e["args"]["External id"]].append(e)
    calls = launched_by(result)
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"].startswith("devtrace_test::")]
    assert len(ops) == len(result["launches"])
    for op in ops:
        mine = by_ext[op["args"]["External id"]]
        call = calls[identity(mine[0])]
        assert {id(calls[identity(e)]) for e in mine} == {id(call)}  # all of one call's work, no other's
        assert len(mine) == len(call["work"])
        device_ns = sum(round(e["dur"] * 1000) for e in mine)
        # durations pass through the clock fit: a nanosecond per event at most
        assert abs(device_ns - sum(w["dur_ns"] for w in call["work"])) <= len(mine)
    # torch attaches the same device time to the ops, even without a device plugin
    per_op = collections.defaultdict(int)
    for call in result["launches"]:
        per_op[call["op"]] += sum(w["dur_ns"] for w in call["work"])
    for op, want_ns in per_op.items():
        assert result["kernels_of_op_us"][op] == pytest.approx(want_ns / 1000, abs=0.01)


def test_key_averages_shows_the_device_time(device_plugin):
    _, result, trace = device_plugin
    needs_launch_streams(result)
    assert result["use_device"] == "emu"
    per_op = collections.defaultdict(int)
    calls = collections.Counter()
    for call in result["launches"]:
        per_op[call["op"]] += sum(w["dur_ns"] for w in call["work"])
        calls[call["op"]] += 1
    for op, want_ns in per_op.items():
        avg = result["key_averages"][op]
        assert avg["count"] == calls[op]
        assert avg["self_device_time_total_us"] == pytest.approx(want_ns / 1000, abs=0.002 * calls[op] * 3)
        assert avg["device_time_total_us"] == pytest.approx(want_ns / 1000, abs=0.002 * calls[op] * 3)
    assert sorted(identity(e) for e in device_events(trace)) == sorted(
        (w["cat"], work_name(w["cat"], w["name"]), w["bytes"]) for w, _ in expected_work(result))


def test_record_function_scopes_get_gpu_user_annotations(plain):
    _, result, trace = plain
    needs_launch_streams(result)
    events = trace["traceEvents"]
    scopes = {e["name"]: e for e in events if e.get("cat") == "user_annotation"
              and e["name"].startswith(("block_", "thread_"))}
    threads = {c["thread"] for c in result["launches"]}
    assert len(scopes) == len({(c["thread"], c["step"]) for c in result["launches"]}) + len(threads)
    spans = [e for e in events if e.get("cat") == "gpu_user_annotation"]
    assert result["plugin"]["user_spans"] == len(spans) == len(scopes)
    for name, scope in scopes.items():
        if name.startswith("thread_"):  # the outer scope spans all of its thread's steps
            t = int(name.split("_t")[1])
            calls = [c for c in result["launches"] if c["thread"] == t]
        else:
            t, s = (int(x[1:]) for x in name.split("_")[1:])
            calls = [c for c in result["launches"] if c["thread"] == t and c["step"] == s]
        by_call = launched_by(result)
        mine = [e for e in device_events(trace) if any(by_call[identity(e)] is c for c in calls)]
        (span,) = [e for e in spans if e["name"] == name]
        assert span["args"]["External id"] == scope["args"]["External id"]
        assert (span["pid"], span["tid"]) == (calls[0]["device"], calls[0]["stream"])
        start = min(e["ts"] for e in mine)
        end = max(e["ts"] + e["dur"] for e in mine)
        # Kineto widens annotations by 1 ns before and 1 ns after
        assert span["ts"] == pytest.approx(start - 0.001, abs=0.0015)
        assert span["ts"] + span["dur"] == pytest.approx(end + 0.001, abs=0.0025)


def test_device_rows_are_named(plain):
    _, result, trace = plain
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    used = {(e["pid"], e["tid"]) for e in device_events(trace)}
    named_pids = {e["pid"] for e in meta if e["name"] == "process_name"}
    named_rows = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    for pid, tid in used:
        assert pid in named_pids and (pid, tid) in named_rows
    sort = {e["pid"]: e["args"]["sort_index"] for e in meta if e["name"] == "process_sort_index"}
    assert all(sort[pid] >= 5000000 for pid, _ in used)
    assert trace["devtrace"]["loss"]["total"] == 0


def test_hta_reads_the_trace(plain):
    need("hta")
    from hta.trace_analysis import TraceAnalysis

    out, result, trace = plain
    folder = out / "hta"
    folder.mkdir(exist_ok=True)
    (folder / "rank0.pt.trace.json").write_text((out / "trace.json").read_text())
    analyzer = TraceAnalysis(trace_dir=str(folder))
    kernel_types, kernel_metrics = analyzer.get_gpu_kernel_breakdown(visualize=False)
    names = set(kernel_metrics["name"])
    assert {w["name"] for w, _ in expected_work(result) if w["cat"] == "kernel"} <= names


def test_cupti_is_refused_with_a_reason():
    need("torch")
    said = raised_in_child("devtrace.torch.enable('cupti')")
    assert "Kineto" in said and "ProfilerActivity.CUDA" in said


def test_an_unavailable_backend_is_refused_before_profiling():
    need("torch")
    said = raised_in_child("devtrace.torch.enable('topspti')", "devtrace.BackendUnavailableError",
                           env={"DEVTRACE_TOPSPTI_LIBRARY": "/nonexistent/libtopspti.so"})
    assert "/nonexistent/libtopspti.so" in said


EDGE_SCRIPT = r"""
import ctypes, json, sys
import torch
from torch.profiler import profile, record_function
import devtrace, devtrace.torch

devtrace.torch.enable(sys.argv[2])
emu = ctypes.CDLL(sys.argv[1])
g = (ctypes.c_int * 3)(1, 1, 1)

def kernel(name):
    assert emu.emu_launch_kernel(0, 1, name.encode(), g, g, ctypes.c_uint64(5000)) == 0

runs = []
for run in range(2):  # the plugin serves every torch.profiler run, one session each
    with profile() as prof:
        with record_function("scope%d" % run):
            kernel("in_scope_%d" % run)            # no op around it: linked to the scope
        with devtrace.external(2**40 + run):    # beyond Kineto's int32 ids
            kernel("big_id_%d" % run)
        with devtrace.range("python_range"):     # a devtrace range is none of torch's
            kernel("in_range_%d" % run)
        emu.emu_synchronize(-1, -1)
    path = "%s/run%d.json" % (sys.argv[3], run)
    prof.export_chrome_trace(path)
    runs.append({"trace": path, "plugin": devtrace.torch.last_session()})
print(json.dumps(runs))
"""


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_ids_that_do_not_fit_kineto_are_not_truncated(tmp_path, vendor):
    """Kineto links through int32 ids: a larger External id must stay
    unlinked (and counted), never be cut to another op's id."""
    need("torch")
    lib = VENDORS[vendor]
    res = run([sys.executable, "-c", EDGE_SCRIPT, lib, vendor, tmp_path], env={library_env_var(vendor): str(lib)})
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    runs = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(runs) == 2
    for n, r in enumerate(runs):
        with open(r["trace"], encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
        kernels = {e["name"]: e for e in events if e.get("cat") == "kernel"}
        assert set(kernels) == {f"in_scope_{n}", f"big_id_{n}", f"in_range_{n}"}
        (scope,) = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == f"scope{n}"]
        assert kernels[f"in_scope_{n}"]["args"]["External id"] == scope["args"]["External id"]
        assert "External id" not in kernels[f"big_id_{n}"]["args"]
        assert "External id" not in kernels[f"in_range_{n}"]["args"]
        assert r["plugin"]["unlinked_too_large"] == 1
        assert r["plugin"]["unresolved"] == 1
        assert r["plugin"]["kept"]["kernel"] == 3
        spans = [e for e in events if e.get("cat") == "gpu_user_annotation"]
        assert [s["name"] for s in spans] == [f"scope{n}"]


def test_a_session_already_running_is_reported_not_hidden(tmp_path):
    """torch.profiler while a devtrace.profile runs: the plugin cannot record
    (one session per process) and says so, on stderr, in last_session() and
    in the trace."""
    need("torch")
    code = ("import json, sys, torch, devtrace, devtrace.torch\n"
            "devtrace.torch.enable(sys.argv[1])\n"
            "with devtrace.profile(backend='null'):\n"
            "    with torch.profiler.profile() as prof:\n"
            "        torch.ones(2).sum()\n"
            "prof.export_chrome_trace(sys.argv[2])\n"
            "print(json.dumps(devtrace.torch.last_session()))\n")
    out = tmp_path / "t.json"
    res = run([sys.executable, "-c", code, "topspti", out], env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr[-4000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["errors"] and "another devtrace session is running" in report["errors"][0]
    assert "devtrace.torch: device activity is not recorded" in res.stderr
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    assert "another devtrace session is running" in trace["devtrace"]["error"]


def test_losses_reach_the_trace_and_the_report(tmp_path):
    need("torch")
    code = ("import ctypes, json, sys, torch, devtrace.torch\n"
            "devtrace.torch.enable('topspti')\n"
            "emu = ctypes.CDLL(sys.argv[1])\n"
            "emu.emu_set_faults(b'vendor_dropped=3,reversed_timestamps=2')\n"
            "g = (ctypes.c_int * 3)(1, 1, 1)\n"
            "with torch.profiler.profile() as prof:\n"
            "    for i in range(4):\n"
            "        emu.emu_launch_kernel(0, 1, b'k', g, g, ctypes.c_uint64(1000))\n"
            "    emu.emu_synchronize(-1, -1)\n"
            "prof.export_chrome_trace(sys.argv[2])\n"
            "print(json.dumps(devtrace.torch.last_session()))\n")
    out = tmp_path / "t.json"
    res = run([sys.executable, "-c", code, TOPSPTI_EMU, out], env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stderr[-4000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["loss"]["vendor_dropped"] == 3 and report["loss"]["timestamp_reversed"] == 2
    assert report["kept"]["kernel"] == 2
    assert any("5 records lost: timestamp_reversed 2, vendor_dropped 3" in e for e in report["errors"])
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    assert trace["devtrace"]["loss"]["vendor_dropped"] == 3
    assert trace["devtrace"]["loss"]["total"] == 5
    assert sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel") == 2


def test_enable_names_what_it_accepts():
    need("torch")
    for bad in ("None", "3"):
        said = raised_in_child("devtrace.torch.enable(%s)" % bad, "TypeError")
        assert "backend is a name" in said and '"auto"' in said and "topspti" in said, said


ACTIVE_SCRIPT = r"""
import ctypes, json, sys
import torch
from torch.profiler import profile, schedule
import devtrace, devtrace.torch

emu = ctypes.CDLL(sys.argv[1])
g = (ctypes.c_int * 3)(1, 1, 1)

def kernel():
    assert emu.emu_launch_kernel(0, 1, b"k", g, g, ctypes.c_uint64(1000)) == 0
    assert emu.emu_synchronize(-1, -1) == 0

def refused():
    try:
        devtrace.torch.enable(sys.argv[2])
    except devtrace.DevtraceError as e:
        return [e.status, str(e)]
    return None

out = {}
with profile():                       # the first enable() inside a run
    out["inside"] = refused()
    kernel()
with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=1)) as p:
    out["warmup"] = refused()         # Kineto configures its child profilers at warm-up
    p.step()
    p.step()
devtrace.torch.enable(sys.argv[2])   # between runs
with profile():
    out["again"] = devtrace.torch.enable(sys.argv[2])  # the backend this run records with: nothing changes
    kernel()
out["kept"] = devtrace.torch.last_session()["kept"]["kernel"]
print(json.dumps(out))
"""


def test_enable_during_a_run_is_refused(tmp_path):
    """enable() while torch.profiler runs would leave that run with no
    device activity: it raises, from a scheduled run's warm-up on, and the
    next run records."""
    need("torch")
    res = run([sys.executable, "-c", ACTIVE_SCRIPT, TOPSPTI_EMU, "topspti"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)})
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for when in ("inside", "warmup"):
        assert out[when] is not None, "enable() inside a run (%s) returned normally" % when
        status, said = out[when]
        assert status == "DT_ERR_STATE"
        assert "torch.profiler run is under way" in said and "before torch.profiler starts" in said, said
    assert out["again"] == "topspti"
    assert out["kept"] == 1


PRELOAD_SCRIPT = r"""
import ctypes, json, sys, warnings
import torch
import devtrace.torch

with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    devtrace.torch.enable("mspti")
    devtrace.torch.enable("mspti")   # said once
emu = ctypes.CDLL(sys.argv[1])
g = (ctypes.c_int * 3)(1, 1, 1)
with torch.profiler.profile() as prof:
    for i in range(3):
        assert emu.emu_launch_kernel(0, 1, b"k", g, g, ctypes.c_uint64(1000)) == 0
        assert emu.emu_memcpy(0, 1, 1, ctypes.c_uint64(4096), ctypes.c_uint64(1000), 1) == 0
        assert emu.emu_memset(0, 1, ctypes.c_uint64(256), 0, ctypes.c_uint64(500), 1) == 0
    assert emu.emu_synchronize(-1, -1) == 0
prof.export_chrome_trace(sys.argv[2])
print(json.dumps({"warnings": [[w.category.__name__, str(w.message)] for w in said],
                  "plugin": devtrace.torch.last_session()}))
"""


@pytest.mark.parametrize("preloaded", [False, True], ids=["without_preload", "preloaded"])
def test_copies_mspti_cannot_record_are_said_to_be_missing(tmp_path, preloaded):
    """MSPTI records copies and memsets only with libmspti.so in LD_PRELOAD
    from the start: without it enable() warns once, and last_session() and
    the trace's "devtrace" key carry the session's note; with it, nothing
    is said and everything is recorded."""
    need("torch")
    assert "mspti" in VENDORS, "the MSPTI emulator must be built"
    lib = VENDORS["mspti"]
    env = {"DEVTRACE_MSPTI_LIBRARY": str(lib)}
    if preloaded:
        env["LD_PRELOAD"] = str(lib)
    out = tmp_path / "t.json"
    res = run([sys.executable, "-c", PRELOAD_SCRIPT, lib, out], env=env)
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    with open(out, encoding="utf-8") as f:
        trace = json.load(f)
    kept = got["plugin"]["kept"]
    assert kept["kernel"] == 3
    if preloaded:
        assert got["warnings"] == []
        assert kept["memcpy"] == 3 and kept["memset"] == 3
        assert "kinds" not in got["plugin"]["notes"] and "kinds" not in trace["devtrace"]["notes"]
        return
    assert kept["memcpy"] == 0 and kept["memset"] == 0
    note = got["plugin"]["notes"]["kinds"]
    assert note.startswith("memory copies, memsets") and "LD_PRELOAD=%s" % lib in note, note
    assert trace["devtrace"]["notes"]["kinds"] == note
    assert len(got["warnings"]) == 1, got["warnings"]
    category, warned = got["warnings"][0]
    assert category == "RuntimeWarning"
    assert "memory copies, memsets" in warned
    # the warning's advice is the note's, word for word
    assert note[note.index("libmspti.so must be"):] in warned, (warned, note)


def test_check_takes_the_plugins_trace_torchs_and_their_merge(plain, tmp_path):
    """The plugin's trace is torch.profiler's with devtrace's key in it: check
    applies torch's rules (and the plugin's loss counts), not devtrace's own;
    a torch.profiler CPU trace passes; merge names every row it writes and
    keeps torch's host_name, so that the merges pass too."""
    from conftest import DEVTRACE
    torch = need("torch")
    out, result, trace = plain
    assert trace["devtrace"]["writer"] == "devtrace.torch"
    plugin_path = out / "trace.json"
    res = run([DEVTRACE, "check", plugin_path])
    assert res.returncode == 0, res.stdout[-4000:]
    assert 'devtrace.writer "devtrace.torch"' in res.stdout
    assert "check: OK (" in res.stdout

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        x = torch.randn(16, 16)
        for _ in range(3):
            x = x @ x
    cpu_path = tmp_path / "torch_cpu.json"
    prof.export_chrome_trace(str(cpu_path))
    host = json.loads(cpu_path.read_text())["host_name"]
    res = run([DEVTRACE, "check", cpu_path])
    assert res.returncode == 0, res.stdout

    for name, inputs in (("cpu", [cpu_path]), ("both", [cpu_path, plugin_path])):
        merged = tmp_path / ("m_%s.json" % name)
        res = run([DEVTRACE, "merge", "-o", merged] + inputs)
        assert res.returncode == 0, res.stderr
        res = run([DEVTRACE, "check", merged])
        assert res.returncode == 0, (name, res.stdout[-4000:])
        m = json.loads(merged.read_text())
        assert m["host_name"] == host
        assert [r["format"] for r in m["devtrace"]["ranks"]] == ["foreign"] * len(inputs)
        named = {(e["pid"], e.get("tid")) for e in m["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        named_pids = {e["pid"] for e in m["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"}
        for e in m["traceEvents"]:
            if e.get("ph") != "M":
                assert e["pid"] in named_pids and (e["pid"], e["tid"]) in named, e
