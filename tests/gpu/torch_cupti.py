#!/usr/bin/env python3
"""Print the libcupti that the installed PyTorch loads (the nvidia-cuda-cupti
wheel's, or torch/lib's), or nothing. devtrace must use that copy, not a
second one from the toolkit: one CUPTI serves a process."""
import glob
import os

try:
    import nvidia.cuda_cupti as m

    roots = list(m.__path__)
except Exception:
    import torch

    roots = [os.path.join(os.path.dirname(torch.__file__), "lib")]
for r in roots:
    libs = sorted(glob.glob(os.path.join(r, "**", "libcupti.so*"), recursive=True))
    if libs:
        print(libs[0])
        break
