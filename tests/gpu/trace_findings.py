"""What a hardware validation run found in its trace, and a verdict: the
shared last step of tests/gpu/vendor_validate.sh and rocm_validate.sh.

    python3 trace_findings.py TRACE CHECK_EXIT_STATUS [--expect KEY=N ...]

--expect adds what the workload is known to have done (kernels=20,
copies=30, fills=10, ranges=10, configured=20: kernels carrying a grid and
a block) to the checks. Exit status 1 when the verdict names problems."""
import collections
import json
import sys


def main(argv):
    path, check_rc = argv[1], int(argv[2])
    expect = {}
    args = argv[3:]
    while args:
        if args[0] == "--expect" and len(args) > 1:
            key, _, value = args[1].partition("=")
            expect[key] = int(value)
            args = args[2:]
        else:
            sys.exit(f"unknown argument {args[0]}")
    t = json.load(open(path, encoding="utf-8", errors="replace"))
    ev = t.get("traceEvents", [])
    d = t.get("devtrace", {})
    cats = collections.Counter(e.get("cat", "") for e in ev if e.get("ph") == "X")
    device_cats = ("kernel", "gpu_memcpy", "gpu_memset")
    print("backend:", d.get("backend"), "library:", d.get("library"), "version:", d.get("libraryVersion"))
    print("activity kinds seen:")
    for c in ("kernel", "gpu_memcpy", "gpu_memset", "privateuse1_runtime", "privateuse1_driver",
              "user_annotation", "gpu_user_annotation"):
        print(f"  {c:22s} {cats.get(c, 0)}")
    starts = collections.Counter(e.get("id") for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g")
    ends = collections.Counter(e.get("id") for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g")
    paired = sum(1 for i in starts if starts[i] == 1 and ends.get(i) == 1)
    dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") in device_cats]
    print(f"flows: {len(starts)} starts, {len(ends)} finishes, {paired} paired")
    ext = [e["args"]["External id"] for e in dev if "External id" in e.get("args", {})]
    print(f"device events with an External id: {len(ext)} of {len(dev)} ({len(set(ext))} distinct ids)")
    kernels = [e for e in dev if e.get("cat") == "kernel"]
    configured = [e for e in kernels if "grid" in e.get("args", {}) and "block" in e.get("args", {})]
    print(f"kernels with grid and block: {len(configured)} of {len(kernels)}")
    for e in configured[:3]:
        print(f"  {e.get('name')}: grid {e['args']['grid']} block {e['args']['block']}")
    api = [e for e in ev if e.get("ph") == "X" and e.get("cat", "").startswith("privateuse1_")]
    generic = sum(1 for e in api if "#" in e.get("name", ""))
    print(f"API events with a generic fallback name: {generic} of {len(api)}")
    print("API names:", ", ".join(sorted({e.get("name", "") for e in api})[:30]))
    k = sorted(e.get("dur", 0) for e in kernels)
    if k:
        print(f"kernel durations (us): min {k[0]}, median {k[len(k)//2]}, max {k[-1]}")
    print("device properties:", json.dumps(t.get("deviceProperties"), indent=1))
    print("clock fit:", json.dumps(d.get("clock")))
    print("loss:", json.dumps(d.get("loss")))
    print("notes:", json.dumps(d.get("notes"), indent=1))
    problems = []
    if check_rc != 0:
        problems.append("devtrace check failed")
    if not cats.get("kernel"):
        problems.append("no kernels recorded")
    if not cats.get("privateuse1_runtime"):
        problems.append("no runtime API calls recorded")
    if len(starts) == 0 or paired != len(starts):
        problems.append("flows missing or unpaired")
    if dev and not ext:
        problems.append("no External ids")
    if api and generic * 20 > len(api):
        problems.append("more than 5% generic API names")
    if (d.get("loss") or {}).get("total"):
        problems.append("records were lost (see loss)")
    err = (d.get("clock") or {}).get("errorBoundNs")
    if err is not None and err > 1000:
        problems.append(f"clock error bound {err} ns > 1 us")
    seen = {"kernels": len(kernels), "copies": cats.get("gpu_memcpy", 0), "fills": cats.get("gpu_memset", 0),
            "ranges": cats.get("user_annotation", 0), "configured": len(configured)}
    for key, want in expect.items():
        got = seen.get(key)
        print(f"expected {key}: {want}, found {got}")
        if got != want:
            problems.append(f"{key}: {got}, the workload made {want}")
    print("verdict:", "OK" if not problems else "PROBLEMS: " + "; ".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
