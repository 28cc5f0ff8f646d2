"""python -m devtrace.torch: build the Kineto plugin for the installed torch
now (as enable() would on first use) and print where it is."""

import argparse

from . import build, has_privateuse1_registry

parser = argparse.ArgumentParser(prog="python -m devtrace.torch", description=__doc__)
parser.add_argument("--verbose", action="store_true", help="show the compiler's commands")
args = parser.parse_args()
print(build(verbose=args.verbose))
print("PrivateUse1 profiler registry: %s" % ("yes" if has_privateuse1_registry() else "no (torch < 2.12)"))
