import importlib
import importlib.util
import logging
from pathlib import Path


# the CLI integration tests' helpers (paths, run), one copy
_spec = importlib.util.spec_from_file_location(
    "dt_integration", Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
BUILD, DEVTRACE, EMU_RUN, SOURCE = _integration.BUILD, _integration.DEVTRACE, _integration.EMU_RUN, _integration.SOURCE
run, load_trace = _integration.run, _integration.load_trace
MSPTI_EMU = BUILD / "emu" / "libmspti.so"
FIXTURES = SOURCE.parent / "shared" / "fixtures" / "torch-traces"
if not FIXTURES.exists():
    FIXTURES = SOURCE / ".." / "shared" / "fixtures" / "torch-traces"

# HTA logs a warning per file parsed
logging.getLogger("hta").setLevel(logging.ERROR)


need = _integration.need
