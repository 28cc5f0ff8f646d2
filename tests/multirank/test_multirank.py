"""Multi-rank jobs, `devtrace merge`, Perfetto output and foreign traces, as
users meet them: torchrun, HTA, Perfetto's own protobuf classes."""
import gzip
import json
import re
import zlib
from collections import Counter, defaultdict
from pathlib import Path

from conftest import BUILD, DEVTRACE, EMU_RUN, SOURCE, TOPSPTI_EMU, check_trace, load_trace, need, run

BENCH_EXPORT = BUILD / "bench" / "bench_export"
HTA_RANK = re.compile(r'"rank":\s+(\d+)')


def hta_rank(path):
    """The rank exactly as HTA finds it: the first line matching its pattern."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            m = HTA_RANK.search(line)
            if m:
                return int(m.group(1))
    return None


def device_events(trace):
    return [e for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def test_torchrun_four_ranks_merge_check_and_hta(tmp_path):
    need("torch")
    need("hta")
    env = {"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU)}
    res = run([DEVTRACE, "record", "-o", tmp_path / "job.json", "--",
               "torchrun", "--nproc_per_node=4", "--no-python", "--master_port=0",
               EMU_RUN, "--quiet", SOURCE / "examples" / "train_step.scn"],
              env=env, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    ranks = [tmp_path / f"job.rank{r}.json" for r in range(4)]
    per_rank_device = []
    for r, path in enumerate(ranks):
        assert path.exists(), res.stderr
        trace = check_trace(path)
        info = trace["distributedInfo"]
        assert (info["rank"], info["local_rank"], info["world_size"], info["launcher"]) == (r, r, 4, "torchrun")
        assert hta_rank(path) == r
        per_rank_device.append(len(device_events(trace)))
        assert per_rank_device[-1] > 0
    # launcher processes (torchrun itself) did no device work
    for path in tmp_path.glob("job*.json"):
        if path not in ranks:
            assert device_events(load_trace(path)) == []

    merged = tmp_path / "merged.json"
    res = run([DEVTRACE, "merge", "-o", merged, *ranks])
    assert res.returncode == 0, res.stderr
    assert "no offset between them" in res.stderr
    trace = check_trace(merged)
    assert len(device_events(trace)) == sum(per_rank_device)
    labels = {e["args"]["labels"] for e in trace["traceEvents"]
              if e.get("ph") == "M" and e.get("name") == "process_labels"}
    assert {f"rank {r} GPU 0" for r in range(4)} <= labels
    # each rank's devices are their own processes
    device_pids = {(e["pid"]) for e in device_events(trace)}
    assert len(device_pids) == 4 * len({e["pid"] for e in device_events(load_trace(ranks[0]))})
    assert [r["rank"] for r in trace["devtrace"]["ranks"]] == [0, 1, 2, 3]
    assert all(r["loss"]["total"] == 0 for r in trace["devtrace"]["ranks"])
    # every flow pair of every rank survives, none merged with another rank's
    assert sum(1 for e in trace["traceEvents"] if e.get("ph") == "s") == \
        sum(sum(1 for e in load_trace(p)["traceEvents"] if e.get("ph") == "s") for p in ranks)

    hta_dir = tmp_path / "hta"
    hta_dir.mkdir()
    for p in ranks:
        (hta_dir / p.name).write_bytes(p.read_bytes())
    from hta.trace_analysis import TraceAnalysis
    analysis = TraceAnalysis(trace_dir=str(hta_dir))
    assert sorted(analysis.t.traces) == [0, 1, 2, 3]
    for r in range(4):
        df = analysis.t.traces[r]
        assert (df["stream"] != -1).sum() == per_rank_device[r]


def read_pftrace(path):
    """Every TracePacket, with the protobuf classes that the `perfetto`
    package generates from Perfetto's own .proto files (a .gz file is
    gzip'd whole; bundles of compressed_packets are inflated)."""
    pb = need("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = pb.Trace()
    trace.ParseFromString(data)
    packets = []
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            packets.extend(inner.packet)
        else:
            packets.append(p)
    return packets


REALTIME, BOOTTIME = 1, 6
SEQ_INCREMENTAL_STATE_CLEARED = 1


def pftrace_slices(packets):
    """Slices as trace_processor builds them: per packet sequence, its
    interned strings (cleared with its incremental state), its defaults
    (timestamp clock, track) and its clocks. A sequence-scoped clock (ids
    64-127) is tied to the trace clock by the sequence's ClockSnapshot; an
    incremental one counts each packet's timestamp from the previous packet
    on that clock, starting at the snapshot's value (clock_snapshot.proto).
    Returns the slices (CLOCK_REALTIME ns) and the thread tracks."""
    interned = defaultdict(lambda: ({}, {}, {}, {}))  # seq -> names, cats, args, string values
    defaults = {}
    clocks = {}  # (seq, clock id) -> [value now, incremental, unit, snapshot value, realtime at snapshot]
    primary = None
    tracks = {}
    open_slices = defaultdict(list)
    slices = []

    def realtime(p):
        seq = p.trusted_packet_sequence_id
        d = defaults.get(seq)
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else \
            (d.timestamp_clock_id if d is not None and d.HasField("timestamp_clock_id") else BOOTTIME)
        if clock == REALTIME:
            return p.timestamp
        assert 64 <= clock < 128, f"clock {clock} is neither REALTIME nor the sequence's own"
        c = clocks[(seq, clock)]
        if c[1]:
            c[0] += p.timestamp
            value = c[0]
        else:
            value = p.timestamp
        return c[4] + (value - c[3]) * c[2]

    for p in packets:
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED or p.incremental_state_cleared:
            interned[seq] = ({}, {}, {}, {})
        if p.HasField("trace_packet_defaults"):
            defaults[seq] = p.trace_packet_defaults
        if p.HasField("clock_snapshot"):
            cs = p.clock_snapshot
            if cs.primary_trace_clock:
                primary = cs.primary_trace_clock
            rt = {c.clock_id: c.timestamp for c in cs.clocks}.get(REALTIME)
            for c in cs.clocks:
                if 64 <= c.clock_id < 128:
                    assert rt is not None, "a sequence clock is tied to CLOCK_REALTIME"
                    clocks[(seq, c.clock_id)] = [c.timestamp, c.is_incremental, c.unit_multiplier_ns or 1,
                                                 c.timestamp, rt]
        names, cats, args, values = interned[seq]
        if p.HasField("interned_data"):
            for e in p.interned_data.event_names:
                names[e.iid] = e.name
            for e in p.interned_data.event_categories:
                cats[e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                args[e.iid] = e.name
            for e in p.interned_data.debug_annotation_string_values:
                values[e.iid] = e.str.decode()
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("thread"):
                tracks[d.uuid] = (d.thread.pid, d.thread.tid, d.thread.thread_name)
        if not p.HasField("track_event"):
            continue
        te = p.track_event
        assert p.HasField("timestamp")
        ts = realtime(p)
        track = te.track_uuid if te.HasField("track_uuid") else defaults[seq].track_event_defaults.track_uuid
        if te.type == te.TYPE_SLICE_BEGIN:
            a = {}
            for d in te.debug_annotations:
                kind = d.WhichOneof("value")
                if kind == "uint_value":
                    a[args[d.name_iid]] = d.uint_value
                elif kind == "int_value":
                    a[args[d.name_iid]] = d.int_value
                elif kind == "double_value":
                    a[args[d.name_iid]] = d.double_value
                elif kind == "string_value":
                    a[args[d.name_iid]] = d.string_value
                elif kind == "string_value_iid":
                    a[args[d.name_iid]] = values[d.string_value_iid]
                else:
                    a[args[d.name_iid]] = [v.int_value for v in d.array_values]
            # trace_processor takes the fixed64 flow ids, else the varint ones
            s = {"name": names[te.name_iid], "cat": cats[te.category_iids[0]], "track": track,
                 "ts": ts, "args": a, "flow_out": list(te.flow_ids or te.flow_ids_old),
                 "flow_in": list(te.terminating_flow_ids or te.terminating_flow_ids_old)}
            open_slices[track].append(s)
            slices.append(s)
        elif te.type == te.TYPE_SLICE_END:
            s = open_slices[track].pop()
            assert ts >= s["ts"]
            s["dur"] = ts - s["ts"]
    assert primary == REALTIME, "timestamps are CLOCK_REALTIME"
    assert all(not v for v in open_slices.values()), "every slice ends"
    return slices, tracks


def test_perfetto_matches_the_json_of_the_same_session(tmp_path):
    # host threads of about 19000 events: rows written in parts, each part its
    # sequence begun again (state cleared), encoded on two threads
    json_path = tmp_path / "t.json"
    res = run([BENCH_EXPORT, json_path, "150000", "json", "1"])
    assert res.returncode == 0, res.stderr
    assert "Perfetto:" in res.stdout
    trace = load_trace(json_path)
    packets = read_pftrace(str(json_path) + ".pftrace")
    restarts = Counter(p.trusted_packet_sequence_id for p in packets
                       if p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED)
    assert max(restarts.values()) > 1, "no row was written in parts"
    slices, tracks = pftrace_slices(packets)
    assert Counter(s["cat"] for s in slices) == Counter(e["cat"] for e in trace["traceEvents"] if e.get("ph") == "X")
    compare_slices_with_json(slices, tracks, trace)
    assert any(s["flow_out"] for s in slices) and any(s["flow_in"] for s in slices)
    # the rows are the JSON's rows, named alike
    names_json = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
                  if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for pid, tid, name in tracks.values():
        assert names_json[(pid, tid)] == name


def compare_slices_with_json(slices, tracks, trace):
    """Every complete event of the JSON is one slice of the Perfetto trace
    on the same row, with the same name, category, time, duration and args,
    and the flows are the JSON's."""
    base = trace["baseTimeNanoseconds"]
    from_json = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X":
            from_json[(e["pid"], e["tid"], e["name"], base + round(e["ts"] * 1000))] = e
    assert len(slices) == len(from_json)
    for s in slices:
        pid, tid, _ = tracks[s["track"]]
        e = from_json[(pid, tid, s["name"], s["ts"])]
        assert s["cat"] == e["cat"]
        assert s["dur"] == round(e["dur"] * 1000)
        if e["name"] == "devtrace capture" and e["cat"] == "Trace" and s["args"]:
            # a session's capture slice (merge's has no args): the JSON's
            # devtrace key, as far as a reader needs it, the losses and the
            # capture window agree
            dt = trace["devtrace"]
            assert {k[len("devtrace.loss."):]: v for k, v in s["args"].items()
                    if k.startswith("devtrace.loss.")} == dt["loss"]
            assert s["args"]["devtrace.captureWindow.startNs"] == dt["captureWindow"]["startNs"]
            assert s["args"]["devtrace.backend"] == dt["backend"]
            continue
        assert set(s["args"]) == set(e["args"]), (s, e)
        for k, v in e["args"].items():
            if isinstance(v, float):
                assert abs(s["args"][k] - v) <= 1e-6 * max(1.0, abs(v)), k
            else:
                assert s["args"][k] == v, k
    flows_out = {f for s in slices for f in s["flow_out"]}
    flows_in = {f for s in slices for f in s["flow_in"]}
    assert flows_out == {e["id"] for e in trace["traceEvents"] if e.get("ph") == "s"}
    assert flows_in == {e["id"] for e in trace["traceEvents"] if e.get("ph") == "f"}


def record(tmp_path, name, fmt=None, env=None):
    args = [DEVTRACE, "record", "-o", tmp_path / name]
    if fmt:
        args += ["--format", fmt]
    res = run(args + ["--", EMU_RUN, SOURCE / "examples" / "train_step.scn"],
              env={"DEVTRACE_TOPSPTI_LIBRARY": str(TOPSPTI_EMU), **(env or {})})
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_record_writes_perfetto_when_asked(tmp_path):
    """`record --format perfetto` (and perfetto.gz) write what the JSON of
    the same program holds: the emulator gives the same events each run."""
    record(tmp_path, "run.json")
    record(tmp_path, "run", "perfetto")
    record(tmp_path, "run.pftrace", "perfetto.gz")
    trace = check_trace(tmp_path / "run.json")
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    for path in (tmp_path / "run.pftrace", tmp_path / "run.pftrace.gz"):
        slices, tracks = pftrace_slices(read_pftrace(path))
        assert Counter((s["cat"], s["name"]) for s in slices) == Counter((e["cat"], e["name"]) for e in xs)
        assert sum(len(s["flow_out"]) for s in slices) == sum(1 for e in trace["traceEvents"] if e.get("ph") == "s")
        # the same rows, named alike (thread ids differ between runs)
        assert {re.sub(r"\d+", "N", n) for _, _, n in tracks.values()} == \
            {re.sub(r"\d+", "N", e["args"]["name"]) for e in trace["traceEvents"] if e.get("name") == "thread_name"}
        # each slice inside the capture window
        window = [s for s in slices if s["cat"] == "Trace"][0]
        assert all(window["ts"] <= s["ts"] and s["ts"] + s["dur"] <= window["ts"] + window["dur"] for s in slices)


def test_merge_writes_perfetto_as_it_writes_json(tmp_path):
    for r in range(2):
        record(tmp_path, f"r{r}.json", env={"RANK": str(r), "WORLD_SIZE": "2"})
    ranks = sorted(tmp_path.glob("r*.rank*.json"))
    assert len(ranks) == 2
    res = run([DEVTRACE, "merge", "-o", tmp_path / "m.json", *ranks])
    assert res.returncode == 0, res.stderr
    res = run([DEVTRACE, "merge", "-o", tmp_path / "m.pftrace", *ranks])
    assert res.returncode == 0, res.stderr
    trace = check_trace(tmp_path / "m.json")
    slices, tracks = pftrace_slices(read_pftrace(tmp_path / "m.pftrace"))
    compare_slices_with_json(slices, tracks, trace)
    assert {f"rank {r} GPU 0" for r in range(2)} <= {e["args"]["labels"] for e in trace["traceEvents"]
                                                      if e.get("name") == "process_labels"}


def devtrace_trace_inside(torch_trace, path):
    """A devtrace trace of the process that torch_trace profiled: one
    runtime call inside each of a few cpu_ops (and one outside every op),
    each launching a kernel, with devtrace's own External ids."""
    base = torch_trace["baseTimeNanoseconds"]
    ops = [e for e in torch_trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"
           and e["args"].get("External id") is not None and e["dur"] > 2]
    ops = sorted(ops, key=lambda e: e["ts"])[:6]
    pid = ops[0]["pid"]
    ev = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python3"}},
          {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "ts": 0, "args": {"sort_index": pid}},
          {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {"name": "python3"}},
          {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "ts": 0, "args": {"labels": "GPU 0"}},
          {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "ts": 0, "args": {"sort_index": 5000000}},
          {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "ts": 0, "args": {"name": "stream 7"}}]
    expect = {}
    t_kernel = max(e["ts"] + e["dur"] for e in torch_trace["traceEvents"] if e.get("ph") == "X")
    calls = [(op, op["ts"] + 1) for op in ops] + [(None, ops[0]["ts"] - 5)]
    for corr, (op, ts) in enumerate(calls, start=1):
        tid = ops[0]["tid"]
        own = 900000 + corr
        ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0, "args": {"name": "main"}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                   "ts": round(ts, 3), "dur": 0.5, "args": {"External id": own, "cbid": 211, "correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7,
                   "ts": round(t_kernel + 10 * corr, 3), "dur": 2.0,
                   "args": {"External id": own, "device": 0, "stream": 7, "correlation": corr}})
        expect[corr] = op["args"]["External id"] if op else None
    lo = min(e["ts"] for e in ev if e["ph"] == "X")
    hi = max(e["ts"] + e["dur"] for e in ev if e["ph"] == "X")
    loss = {r: 0 for r in ["timestamp_zero", "timestamp_reversed", "timestamp_too_long", "malformed",
                           "unknown_kind", "no_buffer", "vendor_dropped", "outside_window", "store_full",
                           "unfinished", "forked_child", "ring_evicted"]}
    loss["total"] = 0
    trace = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms", "baseTimeNanoseconds": base,
             "traceEvents": ev,
             "devtrace": {"version": "0.1.0", "backend": "cupti", "host": torch_trace.get("host_name", "h"), "pid": pid,
                          "captureWindow": {"startNs": base + round(lo * 1000), "endNs": base + round(hi * 1000)},
                          "loss": loss, "attribution": {str(900000 + c): 2000 for c in expect}}}
    Path(path).write_text(json.dumps(trace))
    return expect


def test_merge_gives_devtrace_calls_the_external_id_of_their_cpu_op(tmp_path):
    torch = need("torch")
    from torch.profiler import ProfilerActivity, profile
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 32)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            model(x).sum().backward()
    torch_path = tmp_path / "torch.json"
    prof.export_chrome_trace(str(torch_path))
    torch_trace = load_trace(torch_path)
    # torch.profiler's own trace is an input: read leniently, checked generically
    res = run([DEVTRACE, "check", torch_path])
    assert res.returncode == 0, res.stdout
    assert "not applicable" in res.stdout
    expect = devtrace_trace_inside(torch_trace, tmp_path / "dev.json")
    merged = tmp_path / "merged.json.gz"
    res = run([DEVTRACE, "merge", "-o", merged, torch_path, tmp_path / "dev.json"])
    assert res.returncode == 0, res.stderr
    assert "1 process" in res.stderr.replace("processes", "process")
    out = load_trace(merged)
    kept = [e for e in out["traceEvents"] if e.get("cat") == "cpu_op"]
    assert kept == [e for e in torch_trace["traceEvents"] if e.get("cat") == "cpu_op"]
    by_corr = defaultdict(list)
    for e in out["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "kernel"):
            by_corr[e["args"]["correlation"]].append(e)
    own_ids = set()
    for corr, op_id in expect.items():
        api, kernel = sorted(by_corr[corr], key=lambda e: e["cat"] != "cuda_runtime")
        if op_id is None:  # outside every op: keeps its own id, moved past torch's
            assert api["args"]["External id"] == kernel["args"]["External id"]
            own_ids.add(api["args"]["External id"])
        else:
            assert api["args"]["External id"] == op_id
            assert kernel["args"]["External id"] == op_id
    torch_ids = {e["args"]["External id"] for e in kept if "External id" in e["args"]}
    assert not own_ids & torch_ids
    # device time per op, as Kineto's linking gives it
    attr = out["devtrace"]["attribution"]
    for corr, op_id in expect.items():
        if op_id is not None:
            assert attr[str(op_id)] == 2000 * list(expect.values()).count(op_id)


def kineto_gpu_trace(flavour):
    """A small trace in the shape torch.profiler writes for a GPU run: pretty
    printed, ids as Kineto types them (on ROCm, "stream" a string)."""
    pid, tid = 1234, 1234
    stream = "7" if flavour == "rocm" else 7
    cat_rt = "cuda_runtime"
    ev = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0, "args": {"name": "thread 1234"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "ts": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "ts": 0, "args": {"name": "stream 7 "}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": tid, "ts": 100.0, "dur": 20.0,
         "args": {"External id": 5, "Record function id": 0, "Ev Idx": 4}},
        {"ph": "X", "cat": cat_rt, "name": "hipLaunchKernel" if flavour == "rocm" else "cudaLaunchKernel",
         "pid": pid, "tid": tid, "ts": 105.0, "dur": 4.0,
         "args": {"External id": 5, "cbid": 211, "correlation": 77}},
        {"ph": "s", "id": 77, "pid": pid, "tid": tid, "ts": 105.0, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "Cijk_Ailk_Bljk_SB_MT64x64" if flavour == "rocm" else "sgemm_128x64",
         "pid": 0, "tid": 7, "ts": 110.0, "dur": 30.0,
         "args": {"External id": 5, "device": 0, "stream": stream, "correlation": 77, "grid": [4, 1, 1],
                  "block": [256, 1, 1]}},
        {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 110.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
         "ts": 90.0, "dur": 60.0, "args": {"Op count": 0}},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 160.0},
    ]
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1700000000000000000, "traceEvents": ev,
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1}, "traceName": "t.json"}


def test_foreign_gpu_traces_are_read_leniently(tmp_path):
    for flavour in ("cuda", "rocm"):
        path = tmp_path / f"{flavour}.pt.trace.json"
        path.write_text(json.dumps(kineto_gpu_trace(flavour), indent=2))
        res = run([DEVTRACE, "stats", path, "--format", "csv"])
        assert res.returncode == 0, res.stderr
        assert ",30000,1," in res.stdout  # the kernel: 30 us, once
        res = run([DEVTRACE, "check", path])
        assert res.returncode == 0, res.stdout
        assert "not applicable: 3 (attribution)" in res.stdout
        # a flow cut on one side is a known property of Kineto's traces...
        t = kineto_gpu_trace(flavour)
        t["traceEvents"] = [e for e in t["traceEvents"] if e.get("ph") != "f"]
        path.write_text(json.dumps(t, indent=2))
        res = run([DEVTRACE, "check", path])
        assert res.returncode == 0, res.stdout
        assert "invariant 2: flow id 77 has 1 start(s) and 0 finish(es)" in res.stdout
        assert "a known property of torch.profiler's traces" in res.stdout
        # ...a flow finished twice is malformed: still a violation
        t = kineto_gpu_trace(flavour)
        t["traceEvents"] += [e for e in t["traceEvents"] if e.get("ph") == "f"]
        path.write_text(json.dumps(t, indent=2))
        res = run([DEVTRACE, "check", path])
        assert res.returncode == 1
        assert "invariant 2: flow id 77 has 1 start(s) and 2 finish(es)" in res.stdout
