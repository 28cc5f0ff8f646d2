"""Build devtrace.torch's Kineto plugin once for the test run (into
TORCH_EXTENSIONS_DIR), so that the torch tests only load it. Without torch
it says so; in CI that is a failure, since .ci/run installs torch."""
import os
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print("torch is not installed: %s" % e)
    sys.exit(1 if os.environ.get("CI") else 0)

import devtrace.torch

print(devtrace.torch.build())
