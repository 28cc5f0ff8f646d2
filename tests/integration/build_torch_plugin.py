"""Build devtrace.torch's Kineto plugin once for the test run (into
TORCH_EXTENSIONS_DIR), so that the torch tests only load it. Without torch
it fails, saying so: the test command installs torch."""
import sys

try:
    import torch  # noqa: F401
except ImportError as e:
    print(f"torch is not installed in {sys.executable}, which runs the tests ({e}); "
          "`bash tests/run.sh` installs what the tests need (tests/requirements.txt)")
    sys.exit(1)

import devtrace.torch

print(devtrace.torch.build())
