"""The `devtrace` command installed by pip: the C program built with the
package, run in place of this process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_BINARY = Path(__file__).resolve().parent / "_native" / "bin" / "devtrace"


def main() -> None:
    if not os.access(_BINARY, os.X_OK):
        sys.exit("devtrace: %s is missing; reinstall the package with pip (it builds the command)" % _BINARY)
    # `devtrace convert|analyze` run this Python's devtrace.analysis
    os.environ.setdefault("DEVTRACE_PYTHON", sys.executable)
    os.execv(str(_BINARY), [str(_BINARY)] + sys.argv[1:])


if __name__ == "__main__":
    main()
