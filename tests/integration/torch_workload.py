"""A small model step under torch.profiler with devtrace.torch, on an
emulated accelerator: custom ops (torch.library) launch kernels, copies
and fills through the emulator's runtime, on two threads at once. Writes
into OUT: the Chrome trace torch exported, what the ops launched, the
emulator's record counts, key_averages, and the plugin's account.

  torch_workload.py --emulator LIB --backend NAME --out DIR [--privateuse1 NAME]
                    [--threads N] [--steps N]

--privateuse1 renames torch's PrivateUse1 backend, as a device plugin
(torch_gcu, torch_npu, ...) does: only then does torch.profiler add device
time to key_averages. Without it the script does nothing but
devtrace.torch.enable() before torch.profiler."""
import argparse
import ctypes
import json
import os
import threading
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import devtrace.torch

parser = argparse.ArgumentParser()
parser.add_argument("--emulator", required=True)
parser.add_argument("--backend", required=True)
parser.add_argument("--out", required=True, type=Path)
parser.add_argument("--privateuse1")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--steps", type=int, default=2)
args = parser.parse_args()

if args.privateuse1:
    torch.utils.rename_privateuse1_backend(args.privateuse1)
chosen = devtrace.torch.enable(backend=args.backend)

emu = ctypes.CDLL(args.emulator)
launches = []  # one entry per op call: what it launched
launches_lock = threading.Lock()
local = threading.local()


def launch(op, x):
    """The op's device work: distinct names, sizes and durations per thread
    and step, so that each device event tells which call launched it."""
    t, step = local.index, local.step
    device, stream = t % 2, 1 + t
    grid = (ctypes.c_int * 3)(4, 2, 1)
    block = (ctypes.c_int * 3)(128, 1, 1)
    base = 10_000 * (t + 1) + 1_000 * step
    work = []
    kname = f"emu_{op}_t{t}_s{step}"
    assert emu.emu_launch_kernel(device, stream, kname.encode(), grid, block, ctypes.c_uint64(base + 500)) == 0
    work.append({"cat": "kernel", "name": kname, "dur_ns": base + 500, "bytes": 0})
    if op == "linear":
        nbytes = 4096 * (1 + 8 * t + step)
        assert emu.emu_memcpy(device, stream, 1, ctypes.c_uint64(nbytes), ctypes.c_uint64(base + 200), 0) == 0
        work.append({"cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "dur_ns": base + 200,
                     "bytes": nbytes})
        assert emu.emu_memset(device, stream, ctypes.c_uint64(nbytes // 2), 0, ctypes.c_uint64(base + 100), 0) == 0
        work.append({"cat": "gpu_memset", "name": "Memset (Device)", "dur_ns": base + 100, "bytes": nbytes // 2})
    assert emu.emu_synchronize(device, stream) == 0
    with launches_lock:
        launches.append({"op": f"devtrace_test::emu_{op}", "tid": threading.get_native_id(), "thread": t,
                         "step": step, "device": device, "stream": stream, "work": work})
    return x * 2 if op == "linear" else x.relu()


@torch.library.custom_op("devtrace_test::emu_linear", mutates_args=())
def emu_linear(x: torch.Tensor) -> torch.Tensor:
    return launch("linear", x)


@torch.library.custom_op("devtrace_test::emu_relu", mutates_args=())
def emu_relu(x: torch.Tensor) -> torch.Tensor:
    return launch("relu", x)


class Block(torch.nn.Module):
    def forward(self, x):
        return emu_relu(emu_linear(x)).sum()


model = Block()
start = threading.Barrier(args.threads)


def worker(index):
    local.index = index
    start.wait()  # both threads run their steps at the same time
    with record_function(f"thread_t{index}"):  # scopes nest: each gets its device span
        for step in range(args.steps):
            local.step = step
            with record_function(f"block_t{index}_s{step}"):
                model(torch.ones(8))


activities = [ProfilerActivity.CPU]
if args.privateuse1:
    activities.append(ProfilerActivity.PrivateUse1)
# ops on threads other than the profiler's own are recorded with profile_all_threads
config = torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
with profile(activities=activities, experimental_config=config) as prof:
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

args.out.mkdir(parents=True, exist_ok=True)
prof.export_chrome_trace(str(args.out / "trace.json"))
summary = {}
for avg in prof.key_averages():
    summary[avg.key] = {"count": avg.count, "device_time_total_us": avg.device_time_total,
                        "self_device_time_total_us": avg.self_device_time_total}
kernels_of_op = {}  # device time torch attached to each op, with or without use_device
for fe in prof.events():
    if fe.name.startswith("devtrace_test::"):
        kernels_of_op.setdefault(fe.name, 0.0)
        kernels_of_op[fe.name] += sum(k.duration for k in fe.kernels)
words = (ctypes.c_uint64 * 64)()
emu.emu_stats_get(words)
result = {
    "backend": chosen,
    "privateuse1": args.privateuse1,
    "use_device": prof.use_device,
    "launches": launches,
    "emu_records": dict(zip(["kernel", "memcpy", "memset", "runtime", "driver"], words[:5])),
    "key_averages": summary,
    "kernels_of_op_us": kernels_of_op,
    "plugin": devtrace.torch.last_session(),
    "pid": os.getpid(),
}
(args.out / "result.json").write_text(json.dumps(result, indent=1))
