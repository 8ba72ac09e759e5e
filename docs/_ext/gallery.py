"""An mkdocs hook: the examples gallery's pictures and outputs come from running ``examples/``.

Each run in ``RUNS`` executes ``python examples/<script> <args>`` (``{out}`` in the args is
the run's output folder), at the start of every build (see ``generated.py`` for when a
rebuild reuses them). A run must exit with 0, print text matching its ``expect`` pattern
and write each of its ``images`` as a real PNG or SVG, or the build fails saying which
run broke and how. The images go into the site as ``gallery/<run>/<file>``; on a page, the
line ``<!-- gallery: <run> -->`` becomes the command and what it printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generated import ROOT, add_file, is_image, mark_done, output_folder, require_dot, source_key
from mkdocs.exceptions import PluginError

EXAMPLES = ROOT / "examples"
MARKER = re.compile(r"^<!-- gallery: (?P<run>[\w-]+) -->$", re.M)
TIMEOUT = 300  # seconds per run: the slowest (cnn_digits) takes about 15 s on one core


@dataclass(frozen=True)
class Run:
    """One example run: its script, arguments, the images it writes and a pattern that
    its printed output must match (what says the example worked)."""

    name: str
    script: str
    args: tuple[str, ...] = ("--out", "{out}")
    images: tuple[str, ...] = ()
    expect: str = ""


RUNS = (
    Run(
        "spiral",
        "spiral.py",
        images=("spiral_boundary.png", "spiral_history.png", "spiral_graph.svg"),
        expect=r"final training accuracy: (9[5-9]|100)\.\d%",
    ),
    Run(
        "cnn_digits",
        "cnn_digits.py",
        images=("loss.png", "accuracy.png"),
        expect=r"test accuracy: (9[5-9]|100)\.\d%",
    ),
    Run(
        "lstm_sine",
        "lstm_sine.py",
        images=("lstm_sine_loss.png",),
        expect=r"one-step MSE on cos: 0\.0\d+",
    ),
    Run("char_rnn", "char_rnn.py", args=(), expect=r"sample:\n"),
    Run("newton", "newton.py", args=(), expect=r"minimum at x = 1\.0000000000"),
    Run(
        "book_graphs",
        "book_graphs.py",
        images=("goldstein.svg", "tanh_d1.svg", "tanh_d2.svg", "tanh_d3.svg"),
        expect=r"dz/dx = -5376, dz/dy = 8064",  # the book's step 26 prints these
    ),
)
_printed: dict[str, str] = {}  # run name -> what it printed


def command(run: Run, out: str) -> list[str]:
    """The run's command line, with ``out`` as its output folder."""
    return ["python", f"examples/{run.script}", *(a.format(out=out) for a in run.args)]


def execute(run: Run, folder: Path) -> str:
    """Run ``run`` into ``folder``; return what it printed, or raise PluginError saying what
    went wrong."""
    argv = [sys.executable, str(EXAMPLES / run.script), *command(run, str(folder))[2:]]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        done = subprocess.run(
            argv, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise PluginError(f"gallery: {run.script} ran past {TIMEOUT} s") from None
    problems = []
    if done.returncode != 0:
        problems.append(f"exit status {done.returncode}")
    if not re.search(run.expect, done.stdout):
        problems.append(f"its output does not match {run.expect!r}")
    problems += [f"{name} is not a PNG or SVG image" for name in run.images
                 if not is_image(folder / name)]  # fmt: skip
    if problems:
        raise PluginError(
            f"gallery: {' '.join(command(run, 'OUT'))}: {'; '.join(problems)}\n"
            f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
        )
    return done.stdout.replace(str(folder), f"out/{run.name}")


def on_files(files: Any, config: Any) -> Any:
    """Run the examples (or reuse an identical earlier run) and add their images."""
    require_dot("The examples gallery")
    for run in RUNS:
        key = source_key(repr(run), sorted(EXAMPLES.glob("*.py")), sorted(EXAMPLES.glob("data/*")))
        folder, reused = output_folder("gallery", run.name, key)
        if not reused:
            (folder / "stdout.txt").write_text(execute(run, folder), encoding="utf-8")
            mark_done(folder)
        _printed[run.name] = (folder / "stdout.txt").read_text(encoding="utf-8")
        for image in run.images:
            add_file(files, config, f"gallery/{run.name}/{image}", folder / image)
    return files


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Replace each ``<!-- gallery: NAME -->`` line with the run's command and output."""

    def output(match: re.Match) -> str:
        run = next((r for r in RUNS if r.name == match["run"]), None)
        if run is None:
            raise PluginError(f"gallery: no run named {match['run']!r} (gallery.py: RUNS)")
        shown = " ".join(command(run, f"out/{run.name}"))
        return f'```text title="{shown}"\n{_printed[run.name].rstrip()}\n```'

    return MARKER.sub(output, markdown)
