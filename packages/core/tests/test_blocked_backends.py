"""With every installed backend blocked, the error says they are blocked, not missing."""

import os
import subprocess
import sys

import pytest

import zerograd.backends as B

SCRIPT = """
import numpy as np
import zerograd
try:
    {expr}
except zerograd.backends.NoBackendError as exc:
    print(exc)
"""


@pytest.mark.parametrize("block", ["numpy", "zerograd-numpy"])
@pytest.mark.parametrize("expr", ["zerograd.Variable(np.ones(1))", "zerograd.as_array(1.0)"])
def test_blocked_backends_are_named_with_the_variable_to_change(block, expr):
    others = [b.plugin for b in B.list_backends() if b.name != "numpy"]  # block them all
    block = ",".join([block, *others])
    env = dict(os.environ, ZEROGRAD_BLOCK_PLUGINS=block)
    env.pop("ZEROGRAD_DISABLE_PLUGIN_AUTOLOAD", None)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(expr=expr)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert out.startswith(
        f"zerograd: no array backend is loaded: the installed ones are blocked by "
        f"ZEROGRAD_BLOCK_PLUGINS='{block}': "
    ), out
    assert "'numpy' (from zerograd-numpy)" in out and "Remove them from that variable" in out
    assert "pip install" not in out
