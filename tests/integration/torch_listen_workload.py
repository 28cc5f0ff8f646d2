"""A small training loop that listens for `devtrace trigger` through
devtrace.torch.listen(): a linear layer, then a custom op that launches a
kernel on an emulated accelerator, named after the step it belongs to
(emu_step<n>: step n ends with the n-th optimizer step), then SGD. Under
torchrun (gloo, CPU) the ranks all-reduce their loss every step, so they
step together, and stop together.

  torch_listen_workload.py --emulator LIB --backend NAME --dir DIR
                           [--step-sleep S] [--max-seconds S] [--profile-first]

Writes DIR/ready.<rank> (the pid) once it listens, runs until DIR/stop
exists (rank 0 looks, every rank stops at the same step; DIR/hold holds
them all between two steps while it exists), then writes
DIR/result.<rank>.json: the steps run and the capture count.
--profile-first runs the first steps under the program's own
torch.profiler, to show a trigger then is refused (busy), not raised."""
import argparse
import ctypes
import json
import os
import time
from pathlib import Path

import torch

import devtrace.torch

parser = argparse.ArgumentParser()
parser.add_argument("--emulator", required=True)
parser.add_argument("--backend", required=True)
parser.add_argument("--dir", required=True, type=Path)
parser.add_argument("--step-sleep", type=float, default=0.05)
parser.add_argument("--max-seconds", type=float, default=120)
parser.add_argument("--profile-first", type=int, default=0)
args = parser.parse_args()

distributed = "RANK" in os.environ
if distributed:
    import torch.distributed as dist
    dist.init_process_group("gloo")
rank = int(os.environ.get("RANK", "0"))

emu = ctypes.CDLL(args.emulator)
grid = (ctypes.c_int * 3)(1, 1, 1)
step = 0  # the step under way: 1, 2, ...


@torch.library.custom_op("devtrace_listen::emu_step", mutates_args=())
def emu_step(x: torch.Tensor) -> torch.Tensor:
    assert emu.emu_launch_kernel(0, 1, f"emu_step{step}".encode(), grid, grid, ctypes.c_uint64(2000)) == 0
    assert emu.emu_synchronize(0, 1) == 0
    return x.relu()


@emu_step.register_fake
def _(x):
    return torch.empty_like(x)


emu_step.register_autograd(lambda ctx, grad: grad, setup_context=lambda ctx, inputs, output: None)

torch.manual_seed(0)
model = torch.nn.Linear(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
devtrace.torch.listen(backend=args.backend)
args.dir.mkdir(parents=True, exist_ok=True)
(args.dir / f"ready.{rank}").write_text(str(os.getpid()))

own = None
if args.profile_first:
    own = torch.profiler.profile()
    own.start()
deadline = time.monotonic() + args.max_seconds
x = torch.ones(4, 8)
while True:
    step += 1
    loss = emu_step(model(x)).sum()
    loss.backward()
    stop = float((args.dir / "stop").exists() or time.monotonic() > deadline) if rank == 0 else 0.0
    if distributed:
        both = torch.tensor([loss.item(), stop])
        dist.all_reduce(both)
        stop = both[1].item()
    optimizer.step()  # the end of step `step`
    optimizer.zero_grad()
    if own is not None and step == args.profile_first:
        own.stop()
        own = None
        (args.dir / "own_done").write_text("")
    if stop:
        break
    time.sleep(args.step_sleep)
    # DIR/hold (rank 0 looks) holds every rank here, between two steps,
    # until it is removed; each says DIR/held.<rank>
    while True:
        hold = float((args.dir / "hold").exists()) if rank == 0 else 0.0
        if distributed:
            flag = torch.tensor([hold])
            dist.all_reduce(flag)
            hold = flag[0].item()
        if not hold:
            break
        (args.dir / f"held.{rank}").write_text(str(step))
        time.sleep(0.05)

listener = devtrace.torch._listen.listener()
result = {"steps": step, "captures": listener.captures, "pid": os.getpid()}
devtrace.torch.stop_listening()
(args.dir / f"result.{rank}.json").write_text(json.dumps(result))
if distributed:
    dist.destroy_process_group()
