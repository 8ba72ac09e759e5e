"""Type-checking a user's script against the installed packages' annotations.

The packages ship ``py.typed``: a user's type checker reads their annotations. A test
writes code the docs show and asks mypy whether it accepts it; without mypy the test skips,
saying so (the nox test sessions on numpy 2 install it).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_mypy(code: str, folder: Path, *options: str) -> subprocess.CompletedProcess:
    """Mypy's report on ``code`` (a user's script, dedented), as the installed packages are seen.

    Args:
        code: The script.
        folder: An empty folder for the script and mypy's cache (pytest's ``tmp_path``).
        *options: More of mypy's options (``--ignore-missing-imports``).

    Returns:
        The finished mypy process: ``returncode`` 0 when it accepts the script, its report
        in ``stdout``.
    """
    if importlib.util.find_spec("mypy") is None:
        reason = "mypy is not installed here (pip install mypy to type-check documented code)"
        print(reason)
        pytest.skip(reason)
    script = folder / "user_script.py"
    script.write_text(textwrap.dedent(code))
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(folder / "c")]
        + ["--python-version", version, *options, str(script)],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=600,
    )
