"""The build is the first check of the layers: each layer of src/ compiles
against an include folder that holds only what src/layers.txt lets it see
(cmake/Layers.cmake), so an include the table does not allow fails the
compile before the layer check runs. Compiled here as the build compiles a
layer's file, with that layer's folder."""
import os
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("DT_BUILD_DIR", "build"))
CC = os.environ.get("DT_CC", "cc")
ROOT = Path(__file__).resolve().parents[2]


def compiles(layer, tmp_path, include):
    src = tmp_path / f"{layer}_probe.c"
    src.write_text(f'#include "{include}"\nint dt_probe;\n')
    r = subprocess.run([CC, "-std=c11", "-fsyntax-only", "-I", str(BUILD / "layers" / layer),
                        "-I", str(ROOT / "include"), str(src)], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


@pytest.mark.parametrize("layer,include", [
    ("backends", "core/sink.h"),            # a backend's view of a session
    ("export", "core/recording.h"),         # the recording view
    ("ondemand", "core/steps.h"),           # one header of core, by name
    ("api", "core/session.h"),
    ("cli", "reader/dt_reader.h"),
    ("inject", "api/inject_support.h"),
])
def test_what_a_layer_may_see_compiles(layer, include, tmp_path):
    ok, err = compiles(layer, tmp_path, include)
    assert ok, err


@pytest.mark.parametrize("layer,include", [
    ("core", "api/write.h"),                # a layer above
    ("backends", "api/backend_select.h"),
    ("backends", "core/session.h"),         # hidden from backends
    ("api", "core/session_impl.h"),         # core's own
    ("export", "core/session.h"),           # core beyond the recording view
    ("reader", "core/recording.h"),
    ("format", "core/event.h"),
    ("ondemand", "core/session.h"),
    ("cli", "api/ondemand_support.h"),
])
def test_what_a_layer_may_not_see_fails_the_compile(layer, include, tmp_path):
    assert (ROOT / "src" / include).exists(), include
    ok, err = compiles(layer, tmp_path, include)
    assert not ok
    assert "No such file or directory" in err or "file not found" in err, err
