#!/usr/bin/env python3
"""Writes the hand-made traces used by the reader, stats and check tests.

good.json satisfies every invariant of docs/trace-format.md; each bad_*.json
breaks exactly one (named in its file name). Run from any directory:
    /usr/bin/python3 tests/data/make_traces.py
"""
import copy
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = 1699999993000000000
HOST_PID, HOST_TID = 4242, 4243
LOSS_REASONS = ["timestamp_zero", "timestamp_reversed", "timestamp_too_long", "malformed",
                "unknown_kind", "no_buffer", "vendor_dropped", "outside_window", "store_full",
                "unfinished", "forked_child", "ring_evicted"]


def us(ns):
    """Microseconds with exactly three decimals, as devtrace writes them."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%03d" % (sign, ns // 1000, ns % 1000)


def x(cat, name, pid, tid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


def meta(what, pid, tid, **args):
    return {"ph": "M", "name": what, "pid": pid, "tid": tid, "ts": 0, "args": args}


def flow(ph, fid, pid, tid, ts):
    e = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    if ph == "f":
        e["bp"] = "e"
    return e


def launch(events, api_cat, api_name, cbid, corr, ext, api_ts, api_dur, dev_cat, dev_name, dev_ts,
           dev_dur, **dev_args):
    api_args = {"cbid": cbid, "correlation": corr}
    d_args = {"device": 0, "context": 1, "stream": 7, "correlation": corr}
    if ext is not None:
        api_args = {"External id": ext, **api_args}
        d_args = {"External id": ext, **d_args}
    d_args.update(dev_args)
    events.append(x(api_cat, api_name, HOST_PID, HOST_TID, api_ts, api_dur, **api_args))
    events.append(flow("s", corr, HOST_PID, HOST_TID, api_ts))
    events.append(x(dev_cat, dev_name, 0, 7, dev_ts, dev_dur, **d_args))
    events.append(flow("f", corr, 0, 7, dev_ts))


def good():
    ev = []
    ev.append(meta("process_name", HOST_PID, 0, name="python"))
    ev.append(meta("process_labels", HOST_PID, 0, labels="CPU"))
    ev.append(meta("process_sort_index", HOST_PID, 0, sort_index=HOST_PID))
    ev.append(meta("thread_name", HOST_PID, HOST_TID, name="thread 4243 (python)"))
    ev.append(meta("thread_name", HOST_PID, 0, name="devtrace"))
    ev.append(meta("process_name", 0, 0, name="python"))
    ev.append(meta("process_labels", 0, 0, labels="GPU 0"))
    ev.append(meta("process_sort_index", 0, 0, sort_index=5000000))
    ev.append(meta("thread_name", 0, 7, name="stream 7"))
    ev.append(meta("thread_name", 0, 2000007, name="stream 7 annotations"))
    ev.append(x("Trace", "devtrace capture", HOST_PID, 0, 1000000, 1000000))
    ev.append(x("user_annotation", "step", HOST_PID, HOST_TID, 1100000, 500000, **{"External id": 1}))
    ev.append(x("user_annotation", "fwd", HOST_PID, HOST_TID, 1150000, 200000,
                **{"External id": 2, "parent": 1}))
    launch(ev, "cuda_runtime", "cudaLaunchKernel", 211, 10, 2, 1160000, 5000,
           "kernel", "void gemm<float>(float*, int)", 1170000, 20250, grid=[4, 1, 1], block=[128, 1, 1])
    launch(ev, "cuda_runtime", "cudaMemcpyAsync", 41, 11, 2, 1200000, 3000,
           "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1210000, 10000, bytes=1000000,
           **{"memory bandwidth (GB/s)": 100.0})
    launch(ev, "cuda_runtime", "cudaLaunchKernel", 211, 12, 1, 1400000, 4000,
           "kernel", "relu_kernel", 1410000, 30500)
    launch(ev, "cuda_runtime", "cudaLaunchKernel", 211, 13, 1, 1420000, 4000,
           "kernel", "relu_kernel", 1450000, 10500)
    launch(ev, "cuda_runtime", "cudaMemsetAsync", 51, 14, 1, 1500000, 2000,
           "gpu_memset", "Memset (Device)", 1520000, 4000, bytes=4096)
    launch(ev, "cuda_driver", "cuLaunchKernel", 307, 15, None, 1700000, 1500,
           "kernel", "relu_kernel", 1710000, 9500)
    ev.append(x("gpu_user_annotation", "step", 0, 2000007, 1170000, 354000, **{"External id": 1}))
    ev.append(x("gpu_user_annotation", "fwd", 0, 2000007, 1170000, 50000, **{"External id": 2}))
    loss = {r: 0 for r in LOSS_REASONS}
    loss["vendor_dropped"] = 3
    loss["total"] = 3
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Emulated GPU", "totalGlobalMem": 1 << 34,
                              "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": BASE,
        "traceEvents": ev,
        "devtrace": {
            "version": "0.1.0", "backend": "cupti", "vendor": "NVIDIA (CUPTI)",
            "library": "/usr/local/cuda/lib64/libcupti.so.13", "libraryVersion": "13",
            "captureWindow": {"startNs": BASE + 1000000, "endNs": BASE + 2000000},
            "clock": {"samples": 4, "segments": 1, "slope": 1.0, "offsetNs": 0.0,
                      "errorBoundNs": 120, "identity": True},
            "loss": loss,
            "counts": {"kernel": 4, "memcpy": 1, "memset": 1, "runtime": 5, "driver": 1,
                       "sync": 0, "overhead": 0, "range": 2, "flows": 6},
            "notes": {},
            "attribution": None,  # computed below from the events
        },
        "traceName": "good.json",
    }


def attribution(t):
    sums = {}
    for e in t["traceEvents"]:
        if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset") \
                and "External id" in e["args"]:
            k = str(e["args"]["External id"])
            sums[k] = sums.get(k, 0) + e["dur"]
    return sums


def dump(t, name):
    t = copy.deepcopy(t)
    if t["devtrace"].get("attribution", 0) is None:
        t["devtrace"]["attribution"] = attribution(t)
    out = ["{"]
    keys = list(t.keys())
    for i, k in enumerate(keys):
        sep = "," if i + 1 < len(keys) else ""
        if k == "traceEvents":
            out.append('  "traceEvents": [')
            for j, e in enumerate(t[k]):
                parts = []
                for ek, ev in e.items():
                    if ek in ("ts", "dur"):
                        parts.append('"%s":%s' % (ek, us(ev)))
                    else:
                        parts.append('"%s":%s' % (ek, json.dumps(ev, separators=(",", ":"))))
                out.append("    {" + ",".join(parts) + "}" + ("," if j + 1 < len(t[k]) else ""))
            out.append("  ]" + sep)
        else:
            out.append("  %s: %s%s" % (json.dumps(k), json.dumps(t[k], separators=(",", ":")), sep))
    out.append("}")
    text = "\n".join(out) + "\n"
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text)
    return text


def find(t, pred):
    return [e for e in t["traceEvents"] if pred(e)]


def main():
    g = good()
    text = dump(g, "good.json")
    with gzip.GzipFile(os.path.join(HERE, "good.json.gz"), "wb", mtime=0) as f:
        f.write(text.encode())

    t = copy.deepcopy(g)  # 2: a flow without its finish
    t["traceEvents"].remove(find(t, lambda e: e["ph"] == "f" and e["id"] == 13)[0])
    dump(t, "bad2_flow_unpaired.json")

    t = copy.deepcopy(g)  # 2: a finish without bp:"e"
    del find(t, lambda e: e["ph"] == "f" and e["id"] == 12)[0]["bp"]
    dump(t, "bad2_flow_no_bp.json")

    t = copy.deepcopy(g)  # 3
    t["devtrace"]["attribution"] = attribution(t)
    t["devtrace"]["attribution"]["1"] -= 1
    dump(t, "bad3_attribution.json")

    t = copy.deepcopy(g)  # 4: mangled kernel name
    find(t, lambda e: e.get("cat") == "kernel")[0]["name"] = "_Z4gemmIfEvPfi"
    dump(t, "bad4_mangled.json")

    t = copy.deepcopy(g)  # 4: 1 of 6 API names generic (> 5%)
    find(t, lambda e: e.get("name") == "cudaMemsetAsync")[0]["name"] = "cudaRuntime#51"
    dump(t, "bad4_generic_names.json")

    t = copy.deepcopy(g)  # 5: event after the window's end
    k = find(t, lambda e: e.get("args", {}).get("correlation") == 15 and e.get("cat") == "kernel")[0]
    k["ts"] = 1999000
    find(t, lambda e: e["ph"] == "f" and e["id"] == 15)[0]["ts"] = 1999000
    dump(t, "bad5_outside_window.json")

    t = copy.deepcopy(g)  # 9: partial overlap on stream 7
    m = find(t, lambda e: e.get("cat") == "gpu_memset")[0]
    m["ts"], m["dur"] = 1455000, 10000
    find(t, lambda e: e["ph"] == "f" and e["id"] == 14)[0]["ts"] = 1455000
    dump(t, "bad9_overlap.json")

    t = copy.deepcopy(g)  # 6: stream row without thread_name
    t["traceEvents"].remove(find(t, lambda e: e["ph"] == "M" and e["name"] == "thread_name"
                                 and e["pid"] == 0 and e["tid"] == 7)[0])
    dump(t, "bad6_unnamed_tid.json")

    t = copy.deepcopy(g)  # 6: device row sorts before the host row
    find(t, lambda e: e["ph"] == "M" and e["name"] == "process_sort_index"
         and e["pid"] == 0)[0]["args"]["sort_index"] = 100
    dump(t, "bad6_sort_index.json")

    t = copy.deepcopy(g)  # 7: a loss reason missing
    del t["devtrace"]["loss"]["no_buffer"]
    dump(t, "bad7_loss_missing_key.json")

    t = copy.deepcopy(g)  # 7: total is not the sum
    t["devtrace"]["loss"]["total"] = 4
    dump(t, "bad7_loss_total.json")

    t = copy.deepcopy(g)  # 1: shape (no schemaVersion)
    del t["schemaVersion"]
    dump(t, "bad1_no_schema_version.json")


if __name__ == "__main__":
    main()
