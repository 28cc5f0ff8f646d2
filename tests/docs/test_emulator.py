"""docs/emulator.md's and docs/scenarios.md's commands: the demo scenario
recorded through the emulator, and the example scenario as written."""
import subprocess

from conftest import BUILD, check_trace


def test_demo_scenario(documented, sandbox):
    """The same command in both pages: recorded, a valid trace of the
    scenario's kernels, nothing lost."""
    for block in documented:
        (sandbox / "demo.json").unlink(missing_ok=True)
        res = sandbox.run(block)
        assert "wrote demo.json: " in res.stderr and "nothing lost" in res.stderr, res.stderr
        trace = check_trace(sandbox / "demo.json")
        names = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
        assert "gelu_forward" in names, names


def test_example_scenario(documented, sandbox):
    """The example in scenarios.md is a scenario that runs: every kernel it
    names is recorded, the mangled one demangled."""
    block, = documented
    sandbox.ran.add(block.where)
    (sandbox / "example.scn").write_text(block.text)
    res = subprocess.run([str(BUILD / "devtrace"), "record", "--backend", "topspti", "-o", "example.json", "--",
                          str(BUILD / "devtrace-emu-run"), "example.scn"], cwd=sandbox.root, env=sandbox.env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "records.kernel 8" in res.stdout, res.stdout
    trace = check_trace(sandbox / "example.json")
    kernels = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels.count("gelu_forward") == 4 and len(kernels) == 8, kernels
    assert any(k.startswith("void torch::native::gemm_tiled<float, 128, 64>") for k in kernels), kernels
