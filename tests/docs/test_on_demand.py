"""docs/on-demand.md's transcripts: `devtrace trigger --list` and a capture
of a window, against a program listening under `devtrace record
--on-demand` on the TOPSPTI emulator; what they print has the documented
shape (the pid, counts and backend being this run's)."""
import re

from conftest import check_trace


def transcript(block):
    """The block's command (its `$ ` line, the example's pid as PID) and the
    lines it shows printed."""
    lines = block.text.splitlines()
    return [l for l in lines if not l.startswith("$ ")]


def test_list_and_capture(documented, sandbox):
    listing, capture = documented
    proc = sandbox.start("devtrace record --on-demand -o unused.json -- python3 train.py",
                         env={"TRAIN_SECONDS": "60"})
    try:
        pid = sandbox.listener(proc, "python3")
        shown = transcript(listing)
        res = sandbox.run(listing, {"41872": pid})
        printed = res.stdout.splitlines()
        assert printed[0].split() == shown[0].split(), res.stdout  # the same columns
        row = next(line.split() for line in printed[1:] if line.split()[0] == str(pid))
        assert len(row) == len(shown[1].split()) and row[1] == "python3" and row[5] == "idle", printed

        shown = transcript(capture)
        res = sandbox.run(capture, {"41872": pid})
        example = re.escape(shown[0]).replace("41872", str(pid)).replace(r"rank\ 0,\ cupti", r"(rank\ \d+,\ )?\w+")
        # a window cut from a running program may lose records at its edges
        example = example.replace("18422", r"\d+").replace(r"nothing\ lost", r"(nothing\ lost|LOST\ \d+\ records\ \(.*\))")
        printed = [line for line in res.stderr.splitlines() if line.startswith("devtrace: process")]
        assert len(printed) == 1 and re.fullmatch(example, printed[0]), (example, res.stderr)
        trace = check_trace(sandbox / "step.json")
        assert any(e.get("name") == "train_step_kernel" for e in trace["traceEvents"])
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
