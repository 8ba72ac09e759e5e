"""zerograd-nn imports with neither numpy nor a backend; the missing piece is named at first use.

zerograd-nn depends on zerograd only: numpy is imported where the host parses or makes
data (data sets, the DataLoader's generator), and a backend is loaded the first time an
array is made, as docs/backend-plugins.md says. Each case runs in a fresh interpreter.
"""

import os
import subprocess
import sys

import zerograd.backends as B

NO_NUMPY = "import sys; sys.modules['numpy'] = None  # numpy absent: importing it fails\n"

IMPORT_EVERYTHING = """
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("error")  # a plugin loaded (and failing) at import would warn
    import zerograd_nn
    from zerograd_nn import datasets, functional, layers, models, optimizers, transforms
    from zerograd_nn.datasets import MNIST, get_spiral
    from zerograd_nn.layers import Linear
    import zerograd_nn.dezero  # DeZero's module layout: re-exports, nothing loaded
from zerograd.backends.registry import registry
print("loaded at import:", sorted(registry.backends) or None)
"""

FIRST_USE = """
for name, use in [
    ("Linear", lambda: Linear(3, in_size=2)),
    ("get_spiral", get_spiral),
    ("ToFloat", lambda: transforms.ToFloat()(transforms.Flatten()([[1, 2]]))),
]:
    try:
        use()
    except Exception as exc:
        print(f"{name}: {type(exc).__name__}: {exc}")
"""


def _run(script, **env):
    full = dict(os.environ, **env)
    full.pop("ZEROGRAD_BLOCK_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_imports_without_numpy_and_backend_then_names_what_to_install():
    out = _run(NO_NUMPY + IMPORT_EVERYTHING + FIRST_USE, ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out[0] == "loaded at import: None"
    no_backend = (
        "NoBackendError: zerograd: no array backend is loaded. Plugin autoloading is switched "
        "off (ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD=1): register backends by hand with "
        "zerograd.backends.register(...), or unset the variable. If none is installed, install "
        "the numpy backend from a zerograd checkout: pip install ./packages/backend-numpy"
    )
    assert out[1].startswith("Linear: " + no_backend), out
    assert out[2] == (
        "get_spiral: ModuleNotFoundError: zerograd-nn's data sets read their files and make "
        "their data with numpy on the host, and numpy is not installed: pip install numpy (the "
        "numpy backend brings it: pip install zerograd-numpy, or ./packages/backend-numpy from "
        "a checkout)."
    ), out
    assert out[3].startswith("ToFloat: " + no_backend), out
    assert len(out) == 4


def test_imports_with_numpy_and_no_backend_and_fails_at_first_use():
    out = _run(IMPORT_EVERYTHING + FIRST_USE, ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out[0] == "loaded at import: None"
    assert [line.split(":")[0] for line in out[1:]] == ["Linear", "get_spiral", "ToFloat"]
    for line in out[1:]:
        assert ": NoBackendError: zerograd: no array backend is loaded." in line
        assert "pip install ./packages/backend-numpy" in line


def test_importing_loads_no_backend_and_first_use_loads_them():
    script = IMPORT_EVERYTHING + "print(Linear(3, in_size=2).W.data.shape)\n"
    out = _run(script)
    assert out == ["loaded at import: None", "(2, 3)"]
    assert B.list_backends()  # here (autoloading on), the plugins are found at first use
