"""Core's modules import each other in one direction: variable <- function <- functions."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import zerograd

SRC = Path(zerograd.__file__).parent


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports (relative ones as written: ``.functions``, ``..utils``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.add(base)
            found.update(f"{base}.{a.name}" if not node.module else base for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_variable_and_function_import_no_function():
    for name in ("variable.py", "function.py"):
        bad = {m for m in _imports(SRC / name) if "functions" in m}
        assert not bad, f"zerograd/{name} imports {bad}: the functions package must install them"


def test_operators_are_installed_by_the_functions_package():
    code = (
        "import zerograd.variable as v, sys\n"
        "assert 'zerograd.functions' in sys.modules\n"  # the package import brings them
        "import numpy as np\n"
        "x = v.Variable(np.array([1.0, 2.0]))\n"
        "print(((x * 2 + 1) @ x).data, x.T.shape, x.sum().data)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["13.0", "(2,)", "3.0"], out.stderr
