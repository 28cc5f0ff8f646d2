#!/usr/bin/env python3
"""How fast a session's events reach Python: as numpy columns
(profile.arrays(), one library call per 65,536 events) against the baseline
of one typed object per event (profile.events), in the same run.

  DEVTRACE_LIBRARY=build/libdevtrace.so PYTHONPATH=python python3 bench/python_events.py [EVENTS]

The events are named host operations recorded with the null backend (the
numpy path does not depend on the kind). Prints events per second for both
and their ratio; it is a benchmark, not a test.
"""
import sys
import time

import devtrace


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with devtrace.profile(backend="null") as p:
        t0 = time.perf_counter()
        names = ["aten::mm", "aten::relu", "aten::softmax", "aten::add"]
        for i in range(n):
            with devtrace.external(i, name=names[i & 3]):
                pass
        record_s = time.perf_counter() - t0
    assert len(p) == n, (len(p), n)
    t0 = time.perf_counter()
    cols = p.arrays()
    arrays_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    typed = p.events
    typed_s = time.perf_counter() - t0
    assert len(cols) == len(typed) == n
    print("events: %d (recorded from Python at %.2f M ops/s)" % (n, n / record_s / 1e6))
    print("typed objects (baseline): %8.3f s  %7.2f M events/s" % (typed_s, n / typed_s / 1e6))
    print("numpy columns:            %8.3f s  %7.2f M events/s  (%.0fx)" % (arrays_s, n / arrays_s / 1e6,
                                                                          typed_s / arrays_s))


if __name__ == "__main__":
    main()
