import importlib
import importlib.util
from pathlib import Path


# the CLI integration tests' helpers (paths, run, check_trace), one copy
_spec = importlib.util.spec_from_file_location(
    "dt_integration", Path(__file__).resolve().parents[1] / "integration" / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)
BUILD, DEVTRACE, EMU_RUN, SOURCE, TOPSPTI_EMU = (_integration.BUILD, _integration.DEVTRACE, _integration.EMU_RUN,
                                                 _integration.SOURCE, _integration.TOPSPTI_EMU)
check_trace, load_trace, run = _integration.check_trace, _integration.load_trace, _integration.run


need = _integration.need
