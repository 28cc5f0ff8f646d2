#!/usr/bin/env python3
"""Judge a devtrace trace of a CUDA workload against what the workload did
(its truth file, written by tests/gpu/workload.cu, cupti_client.cu, or by
hand for an emulated scenario). Used by tests/gpu/cuda_validate.sh.

    cuda_findings.py check TRUTH [TRACE]    # TRACE default: truth's "trace", beside TRUTH
    cuda_findings.py graph RESULT DUMP      # graph_flight.cu's line, the flight recorder's dump
    cuda_findings.py self-test

The truth file (JSON), every key but "trace" optional:
  kernels      {name: n}                 every kernel of the trace, by name, exactly
  launches     {api: {"calls": n, "kernels": {name: n}}}   (api "a|b": either name)
               calls: API events of that name not made inside an API call of
               another domain on the same thread (the driver call a runtime
               launch makes is not counted); kernels: the kernels whose
               correlation id leads to an API event of that name
  copies       [{"kind": "HtoD", "bytes": n}]    every copy, exactly
  memsets      [{"bytes": n}]                    every memset, exactly
  external     {range name | "none": n}  device events by the user range whose
                                         External id they carry
  allocations  [{"bytes": n, "address": a}]      one allocation and one free
               each (at that address when given); other memory events are
               reported, not judged
  timed        {kernel: [ms, ...]}       cudaEvent times of that kernel's
               launches: the kernels' durations over 50 us must sum to
               within 5% of the event times over 50 us
Always: every device event lasts more than 0, is paired with one flow from
its API call, and no record was lost.

Prints one line per check, "PASS name: ..." or "FAIL name: ...", and exits
1 when any check failed (2 when the files cannot be read)."""
import collections
import json
import os
import sys

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LONG_US = 50.0
TIMED_TOLERANCE = 0.05


def judge(truth, trace):
    """[(ok, name, detail)] for the trace against the truth."""
    ev = trace.get("traceEvents", [])
    meta = trace.get("devtrace", {})
    out = []

    def check(ok, name, detail):
        out.append((bool(ok), name, detail))

    dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in DEVICE_CATS]
    kernels = [e for e in dev if e.get("cat") == "kernel"]
    api = [e for e in ev if e.get("ph") == "X" and e.get("cat", "").startswith("cuda_")]

    loss = (meta.get("loss") or {}).get("total")
    check(loss == 0, "no records lost", f"loss {json.dumps(meta.get('loss'))}")

    if "kernels" in truth:
        got = collections.Counter(e.get("name") for e in kernels)
        want = collections.Counter(truth["kernels"])
        diff = {k: f"{got.get(k, 0)} (want {want.get(k, 0)})" for k in set(got) | set(want) if got[k] != want[k]}
        check(not diff, "kernel counts by name",
              f"{sum(got.values())} kernels, want {sum(want.values())}" + (f"; differ: {diff}" if diff else ""))

    zero = [e.get("name") for e in dev if not (isinstance(e.get("dur"), (int, float)) and e["dur"] > 0)]
    check(dev and not zero, "every device duration > 0",
          f"{len(dev)} device events, {len(zero)} without a positive duration" + (f" ({zero[:5]})" if zero else ""))

    starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
    ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
    by_corr = collections.defaultdict(list)
    for e in api:
        c = (e.get("args") or {}).get("correlation")
        if c is not None:
            by_corr[c].append(e)
    # one flow per correlation id, to its first device event (a graph
    # launch's kernels share the launch's id)
    dev_corr = [(e.get("args") or {}).get("correlation") for e in dev]
    ids = set(dev_corr)
    unpaired = sum(1 for c in ids
                   if not (c is not None and starts.get(c) == 1 and ends.get(c) == 1 and by_corr.get(c)))
    unlinked = sum(1 for c in dev_corr if not by_corr.get(c))
    check(dev and unpaired == 0 and unlinked == 0, "every device event's flow paired",
          f"{len(ids) - unpaired} of {len(ids)} correlation ids of {len(dev)} device events with one flow "
          f"from their API call, {unlinked} device events without an API call "
          f"({len(starts)} flow starts, {len(ends)} finishes)")

    if "launches" in truth:
        # calls made inside an API call of another domain on the same thread
        spans = collections.defaultdict(list)
        for e in api:
            spans[(e.get("pid"), e.get("tid"))].append(e)

        def nested(e):
            t0, t1 = e["ts"], e["ts"] + e.get("dur", 0)
            return any(o is not e and o.get("cat") != e.get("cat") and o["ts"] <= t0 and t1 <= o["ts"] + o.get("dur", 0)
                       for o in spans[(e.get("pid"), e.get("tid"))])

        for name, want in truth["launches"].items():
            # "a|b": either name (a <<<>>> launch is cudaLaunchKernel with
            # CUDA 13.0's nvcc on the H200, __cudaLaunchKernel in the
            # emulator, which CUPTI 13.0's header also names)
            names = set(name.split("|"))
            calls = [e for e in api if e.get("name") in names]
            top = sum(1 for e in calls if not nested(e))
            launched = collections.Counter(
                k.get("name") for k in kernels
                if any(a.get("name") in names for a in by_corr.get((k.get("args") or {}).get("correlation"), [])))
            wk = collections.Counter(want.get("kernels", {}))
            ok = top == want.get("calls") and launched == wk
            check(ok, f"launches {name}",
                  f"{top} calls (want {want.get('calls')}; {len(calls)} in all), kernels launched "
                  f"{dict(launched)} (want {dict(wk)})")

    if "copies" in truth:
        got = collections.Counter((e["args"].get("copy kind"), e["args"].get("bytes"))
                                  for e in dev if e.get("cat") == "gpu_memcpy")
        want = collections.Counter((c["kind"], c["bytes"]) for c in truth["copies"])
        check(got == want, "copies: kinds and bytes",
              f"{sorted(got.items())} (want {sorted(want.items())})")
    if "memsets" in truth:
        got = collections.Counter(e["args"].get("bytes") for e in dev if e.get("cat") == "gpu_memset")
        want = collections.Counter(m["bytes"] for m in truth["memsets"])
        check(got == want, "memsets: bytes", f"{sorted(got.items())} (want {sorted(want.items())})")

    if "external" in truth:
        ranges = {}
        for e in ev:
            if e.get("ph") == "X" and e.get("cat") == "user_annotation" and "External id" in e.get("args", {}):
                ranges[e["args"]["External id"]] = e.get("name")
        got = collections.Counter(ranges.get(e["args"]["External id"], f"id {e['args']['External id']}")
                                  if "External id" in e.get("args", {}) else "none" for e in dev)
        want = collections.Counter(truth["external"])
        check(got == want, "External ids of device events", f"{dict(got)} (want {dict(want)})")

    if "allocations" in truth:
        mem = [e for e in ev if e.get("name") == "[memory]" and e.get("ph") == "i"]
        allocs = [(e["args"].get("Addr"), e["args"].get("Bytes")) for e in mem if e["args"].get("Bytes", 0) > 0]
        frees = [(e["args"].get("Addr"), -e["args"].get("Bytes")) for e in mem if e["args"].get("Bytes", 0) < 0]
        # the truth's blocks: by address where given, else by size
        with_addr = [a for a in truth["allocations"] if "address" in a]
        addrs = {a["address"] for a in with_addr}
        want = collections.Counter((a["address"], a["bytes"]) for a in with_addr)
        got_a = collections.Counter(x for x in allocs if x[0] in addrs)
        got_f = collections.Counter(x for x in frees if x[0] in addrs)
        sized = collections.Counter(a["bytes"] for a in truth["allocations"] if "address" not in a)
        got_sa = collections.Counter(b for _, b in allocs if b in sized)
        got_sf = collections.Counter(b for _, b in frees if b in sized)
        ok = got_a == want and got_f == want and got_sa == sized and got_sf == sized
        check(ok, "allocations and frees (memory events)",
              f"{len(truth['allocations'])} blocks: allocations {sum(got_a.values()) + sum(got_sa.values())}, "
              f"frees {sum(got_f.values()) + sum(got_sf.values())} with their sizes; "
              f"{len(mem)} memory events in all"
              + ("" if ok else f"; at the blocks' addresses: allocations {dict(got_a)}, frees {dict(got_f)}, "
                 f"want {dict(want)}; by size {dict(got_sa)}/{dict(got_sf)}, want {dict(sized)}"))

    for name, ms in (truth.get("timed") or {}).items():
        event_us = sorted(x * 1000.0 for x in ms)
        durs = sorted(e["dur"] for e in kernels if e.get("name") == name)
        ev_long = [x for x in event_us if x > LONG_US]
        dt_long = [x for x in durs if x > LONG_US]
        a, b = sum(dt_long), sum(ev_long)
        rel = abs(a - b) / b if b > 0 else float("inf")
        ok = len(durs) == len(event_us) and len(dt_long) == len(ev_long) and ev_long and rel <= TIMED_TOLERANCE
        check(ok, f"durations of {name} against cudaEvent",
              f"{len(dt_long)} kernels over {LONG_US:g} us sum to {a:.1f} us, cudaEvent {b:.1f} us over "
              f"{len(ev_long)} launches: {100 * rel:.2f}% apart (at most {100 * TIMED_TOLERANCE:g}%)")
    return out


# CUPTI ran out of its device buffers after this many graph kernels in a
# user's report (parca-dev/parcagpu#23, the default pool of 250 buffers of
# 100,000 records), every timestamp after it invalid
REPORTED_LIMIT = 25_100_000
KERNEL_MAX_US = 10_000.0
TIMESTAMP_LOSSES = ("timestamp_zero", "timestamp_reversed", "timestamp_too_long", "malformed")


def judge_graph(result, dump):
    """[(ok, name, detail)] for the flight recorder's last window of
    graph_flight.cu (result: its JSON line): every kernel's timestamps
    valid, none lost for its timestamps; and [note] for what is told, not
    judged (how far past the reported limit the run went)."""
    out, notes = [], []

    def check(ok, name, detail):
        out.append((bool(ok), name, detail))

    ev = dump.get("traceEvents", [])
    loss = (dump.get("devtrace") or {}).get("loss") or {}
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    check(kernels, "graph kernels in the flight recorder's window", f"{len(kernels)} kernels")
    bad = [e for e in kernels
           if not (isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))
                   and e["ts"] >= 0 and 0 < e["dur"] <= KERNEL_MAX_US)]
    check(kernels and not bad, "every kernel timestamp valid",
          f"{len(kernels) - len(bad)} of {len(kernels)} with 0 < duration <= {KERNEL_MAX_US:g} us after the "
          f"trace's start" + (f"; first bad: {bad[:3]}" if bad else ""))
    lost = {k: loss.get(k) for k in TIMESTAMP_LOSSES if loss.get(k)}
    check(not lost, "no record lost for its timestamps", json.dumps(lost) if lost else "none of " + ", ".join(TIMESTAMP_LOSSES))
    n = result.get("kernels", 0)
    notes.append(f"{n:,} graph kernels in {result.get('seconds', 0):.1f} s "
                 f"({n / max(result.get('seconds', 1), 1e-9) / 1e6:.2f} M/s), "
                 + ("past" if n >= REPORTED_LIMIT else "short of")
                 + f" the {REPORTED_LIMIT:,} after which CUPTI's timestamps were reported invalid")
    before, after = result.get("used_before", 0), result.get("used_after", 0)
    notes.append(f"device memory in use {before / 2**20:.0f} MiB before, {after / 2**20:.0f} MiB after "
                 f"({(after - before) / 2**20:+.0f} MiB)")
    return out, notes


def run_graph(result_path, dump_path):
    try:
        lines = [l for l in open(result_path, encoding="utf-8") if l.startswith("{")]
        result = json.loads(lines[-1])
        dump = json.load(open(dump_path, encoding="utf-8", errors="replace"))
    except (OSError, ValueError, IndexError) as e:
        print(f"FAIL reading {result_path}, {dump_path}: {e}")
        return 2
    results, notes = judge_graph(result, dump)
    for ok, name, detail in results:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    for n in notes:
        print(f"NOTE {n}")
    return 0 if all(ok for ok, _, _ in results) else 1


def run_check(truth_path, trace_path=None):
    try:
        truth = json.load(open(truth_path, encoding="utf-8"))
        if trace_path is None:
            trace_path = os.path.join(os.path.dirname(truth_path), truth["trace"])
        trace = json.load(open(trace_path, encoding="utf-8", errors="replace"))
    except (OSError, ValueError, KeyError) as e:
        print(f"FAIL reading {truth_path}: {e}")
        return 2
    results = judge(truth, trace)
    for ok, name, detail in results:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    return 0 if results and all(ok for ok, _, _ in results) else 1


def self_test():
    """A synthetic trace that holds the truth passes every check; each
    change to it fails the check that covers it, and that check alone."""
    def x(cat, name, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1 if cat.startswith("cuda") else 7,
                "ts": ts, "dur": dur, "args": args}

    def build():
        ev = [x("user_annotation", "outer", 0, 100, **{"External id": 9})]
        corr = 0

        def launch(api, cat, kname, ts, dur, ext=None, driver_inside=False):
            nonlocal corr
            corr += 1
            a = {"correlation": corr}
            if ext is not None:
                a["External id"] = ext
            ev.append(x(cat, api, ts, 2, **a))
            if driver_inside:
                corr += 1
                ev.append(x("cuda_driver", "cuLaunchKernel", ts + 0.5, 1, correlation=corr))
            ev.append({"ph": "s", "id": a["correlation"], "cat": "ac2g", "ts": ts})
            ev.append(x("kernel" if kname else "gpu_memcpy", kname or "Memcpy HtoD", ts + 5, dur, **a))
            ev.append({"ph": "f", "id": a["correlation"], "cat": "ac2g", "ts": ts + 5, "bp": "e"})
            return ev[-2]

        launch("__cudaLaunchKernel", "cuda_runtime", "spin", 10, 300.5, ext=9, driver_inside=True)
        launch("__cudaLaunchKernel", "cuda_runtime", "spin", 20, 299.0, ext=9, driver_inside=True)
        launch("cuLaunchKernel", "cuda_driver", "k_cu", 30, 3)
        launch("cudaGraphLaunch", "cuda_runtime", "k_graph", 40, 3)
        # a second graph kernel of the same launch: its id, no flow of its own
        ev.append(dict(ev[-2], ts=50))
        cp = launch("cudaMemcpyAsync", "cuda_runtime", None, 60, 10)
        cp["args"].update({"bytes": 4096, "copy kind": "HtoD"})
        for b in (1 << 20, -(1 << 20)):
            ev.append({"ph": "i", "name": "[memory]", "ts": 70, "args": {"Bytes": b, "Addr": 1234}})
        for b in (3 << 20, -(3 << 20)):
            ev.append({"ph": "i", "name": "[memory]", "ts": 80, "args": {"Bytes": b, "Addr": 999}})
        return {"traceEvents": ev, "devtrace": {"loss": {"total": 0}}}

    truth = {"trace": "t.json", "kernels": {"spin": 2, "k_cu": 1, "k_graph": 2},
             "launches": {"cudaLaunchKernel|__cudaLaunchKernel": {"calls": 2, "kernels": {"spin": 2}},
                          "cuLaunchKernel": {"calls": 1, "kernels": {"k_cu": 1}},
                          "cudaGraphLaunch": {"calls": 1, "kernels": {"k_graph": 2}}},
             "copies": [{"kind": "HtoD", "bytes": 4096}], "memsets": [],
             "external": {"outer": 2, "none": 4},
             "allocations": [{"address": 1234, "bytes": 1 << 20}, {"bytes": 3 << 20}],
             "timed": {"spin": [0.3015, 0.2995]}}
    failures = []
    good = judge(truth, build())
    bad = [(n, d) for ok, n, d in good if not ok]
    if bad or len(good) != 12:
        failures.append(f"the right trace: {len(good)} checks, failed {bad}")

    def mutant(label, change, fails):
        t = build()
        tr = json.loads(json.dumps(truth))
        change(t["traceEvents"], tr, t)
        res = judge(tr, t)
        failed = sorted(n for ok, n, _ in res if not ok)
        if failed != sorted(fails):
            failures.append(f"{label}: failed {failed}, want {sorted(fails)}")

    def drop_kernel(ev, tr, t):
        i = next(i for i, e in enumerate(ev) if e.get("name") == "k_cu")
        del ev[i]
    mutant("a kernel missing", drop_kernel,
           ["kernel counts by name", "launches cuLaunchKernel", "External ids of device events"])
    mutant("a zero duration", lambda ev, tr, t: next(e for e in ev if e.get("name") == "k_cu").update(dur=0),
           ["every device duration > 0"])
    mutant("a flow lost", lambda ev, tr, t: ev.remove(next(e for e in ev if e.get("ph") == "f")),
           ["every device event's flow paired"])
    mutant("a driver launch counted", lambda ev, tr, t: tr["launches"]["cuLaunchKernel"].update(calls=3),
           ["launches cuLaunchKernel"])
    mutant("copy bytes wrong", lambda ev, tr, t: tr["copies"][0].update(bytes=4095), ["copies: kinds and bytes"])
    mutant("a memset more", lambda ev, tr, t: tr["memsets"].append({"bytes": 1}), ["memsets: bytes"])
    mutant("External id wrong", lambda ev, tr, t: tr["external"].update(outer=3), ["External ids of device events"])
    mutant("a free missing", lambda ev, tr, t: ev.remove(next(e for e in ev if e.get("args", {}).get("Bytes") == -(1 << 20))),
           ["allocations and frees (memory events)"])
    mutant("allocation bytes wrong", lambda ev, tr, t: tr["allocations"][1].update(bytes=5 << 20),
           ["allocations and frees (memory events)"])
    mutant("cudaEvent 6% apart", lambda ev, tr, t: tr["timed"].update(spin=[0.32, 0.3175]),
           ["durations of spin against cudaEvent"])
    mutant("records lost", lambda ev, tr, t: t["devtrace"]["loss"].update(total=3), ["no records lost"])

    # the flight recorder's window of graph kernels
    def window():
        ev = [{"ph": "X", "cat": "kernel", "name": "tick(unsigned int*)", "ts": 10.0 + i, "dur": 1.5, "pid": 0,
               "tid": 7} for i in range(100)]
        return {"traceEvents": ev, "devtrace": {"loss": {"total": 0}}}
    result = {"kernels": 30_000_000, "seconds": 20.0, "used_before": 1 << 30, "used_after": (1 << 30) + (1 << 20)}
    res, notes = judge_graph(result, window())
    if not all(ok for ok, _, _ in res) or len(res) != 3 or "past" not in notes[0]:
        failures.append(f"a right window: {res} {notes}")
    for label, change, fails in (
            ("a zero timestamp", lambda d: d["traceEvents"][5].update(dur=0), ["every kernel timestamp valid"]),
            ("a kernel before the start", lambda d: d["traceEvents"][6].update(ts=-3.0), ["every kernel timestamp valid"]),
            ("zero timestamps lost", lambda d: d["devtrace"]["loss"].update(timestamp_zero=4),
             ["no record lost for its timestamps"]),
            ("no kernel", lambda d: d.update(traceEvents=[]),
             ["graph kernels in the flight recorder's window", "every kernel timestamp valid"])):
        d = window()
        change(d)
        failed = sorted(n for ok, n, _ in judge_graph(result, d)[0] if not ok)
        if failed != sorted(fails):
            failures.append(f"{label}: failed {failed}, want {sorted(fails)}")
    for f in failures:
        print("self-test FAIL:", f)
    print("self-test:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "check":
        sys.exit(run_check(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
    if len(sys.argv) == 4 and sys.argv[1] == "graph":
        sys.exit(run_graph(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 2 and sys.argv[1] == "self-test":
        sys.exit(self_test())
    sys.exit(__doc__)
