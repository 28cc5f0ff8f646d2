"""docs/pytorch.md's ways with PyTorch (and docs/on-demand.md's PyTorch
lines), run with torch 2.13 (CPU build) on the emulated TOPSPTI device: a
model whose forward launches a kernel there (conftest.TORCH_PROLOGUE)."""
import json
import re

from conftest import TORCH_PROLOGUE, check_trace, load_trace, need


def kernels(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]


def test_plugin(documented, sandbox):
    need("torch")
    block, = documented
    sandbox.python(block, before=TORCH_PROLOGUE)
    trace = json.loads((sandbox / "trace.json").read_text())
    kernel, = kernels(trace)
    assert kernel["name"] == "docs_scale_kernel"
    op = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == "devtrace_docs::emu_scale")
    assert kernel["args"]["External id"] == op["args"]["External id"]
    assert any(e.get("cat") == "user_annotation" and e["name"] == "step" for e in trace["traceEvents"])


def test_key_averages(documented, sandbox):
    """With PrivateUse1 renamed, as a device plugin does, key_averages has
    the custom op's device time."""
    need("torch")
    block, = documented
    res = sandbox.python(block, before=(TORCH_PROLOGUE + "torch.utils.rename_privateuse1_backend('emu')\n"
                                        "import devtrace.torch\ndevtrace.torch.enable(backend='topspti')\n"),
                         subs={"\n    ...\n": "\n    step()\n"})
    header = next(line for line in res.stdout.splitlines() if "Self EMU" in line)
    row = next(line for line in res.stdout.splitlines() if "devtrace_docs::emu_scale" in line)
    end = header.index("Self EMU") + len("Self EMU")  # the table's columns are right-aligned
    value = row[:end].split()[-1]
    # the kernel's 30 us, through the clock fit (a nanosecond either way)
    assert value.endswith("us") and abs(float(value[:-2]) - 30.0) <= 0.005, res.stdout


def listen_and_trigger(sandbox, script, launcher, blocks, subs_word):
    """The listening program started; each trigger block run against it."""
    proc = sandbox.start(f"{launcher} {script.name}", env={"TRAIN_SECONDS": "120"})
    try:
        pid = sandbox.listener(proc, "python")
        return [sandbox.run(b, {subs_word: pid}, timeout=120) for b in blocks], pid
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_listen(documented, sandbox):
    """listen() in a training loop; `devtrace trigger` captures N optimizer
    steps into torch's own trace; under torchrun, --job asks every rank."""
    need("torch")
    on_demand_py, on_demand_cmd, pytorch_py, pytorch_cmd = documented
    assert on_demand_py.doc == "docs/on-demand.md" and pytorch_py.doc == "docs/pytorch.md"
    script = sandbox.script(on_demand_py, before=TORCH_PROLOGUE)
    (res,), pid = listen_and_trigger(sandbox, script, "python3", [on_demand_cmd], "41872")
    shown = next(l for l in on_demand_cmd.text.splitlines() if not l.startswith("$ "))
    example = re.escape(shown).replace("41872", str(pid)).replace("2215", r"\d+").replace("cupti", r"\w+")
    assert re.fullmatch(example, res.stderr.strip().splitlines()[-1]), (example, res.stderr)
    steps = {e["name"] for e in load_trace(sandbox / "steps.json")["traceEvents"]
             if e.get("name", "").startswith("ProfilerStep#")}
    assert len(steps) == 3, steps

    (sandbox / "steps.json").unlink()
    script = sandbox.script(pytorch_py, before=TORCH_PROLOGUE)
    (res,), pid = listen_and_trigger(sandbox, script, "torchrun --nproc_per_node=1", [pytorch_cmd], "PID")
    for name, count in (("steps.json", 3), ("steps.rank0.json", 2)):
        trace = load_trace(sandbox / name)
        steps = {e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
        assert len(steps) == count, (name, steps)
        assert any(k["name"] == "docs_scale_kernel" for k in kernels(trace)), name


def test_record(documented, sandbox):
    block, = documented
    res = sandbox.run(block)
    assert "wrote train.json.gz: " in res.stderr and "nothing lost" in res.stderr, res.stderr
    assert [k["name"] for k in kernels(check_trace(sandbox / "train.json.gz"))] == ["train_step_kernel"] * 4
    assert "train_step_kernel" in res.stdout, res.stdout


def test_python_api(documented, sandbox):
    need("numpy")
    block, = documented
    res = sandbox.python(block, before=("import ctypes, os\n"
                                        "_emu = ctypes.CDLL(os.environ['DEVTRACE_TOPSPTI_LIBRARY'])\n"
                                        "op_id = 7\n"
                                        "def launch_work():\n"
                                        "    g = (ctypes.c_int * 3)(2, 1, 1)\n"
                                        "    assert _emu.emu_launch_kernel(0, 1, b'api_kernel', g, g, 25000) == 0\n"
                                        "    assert _emu.emu_synchronize(-1, -1) == 0\n"),
                         after="print('busy', busy)\n")
    lines = res.stdout.splitlines()
    assert lines[0].startswith("topspti {") and "'vendor_dropped': 0" in lines[0], res.stdout
    name, duration, external_id = lines[1].split()[:3]
    # 25 us on the device's clock, mapped onto the host's through the clock fit
    assert name == "api_kernel" and abs(int(duration) - 25000) <= 5 and external_id == "7", res.stdout
    assert lines[-1] == f"busy {duration}", res.stdout
    trace = check_trace(sandbox / "step.json.gz")
    assert any(e.get("cat") == "cpu_op" and e["name"] == "my_op" for e in trace["traceEvents"])
