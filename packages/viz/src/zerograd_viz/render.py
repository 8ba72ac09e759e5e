"""Rendering DOT text with Graphviz's ``dot`` program, and ``plot_dot_graph``."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from zerograd import Variable

from .dot import get_dot_graph

FORMATS = ("png", "svg", "pdf")
"""The image formats ``plot_dot_graph`` writes, chosen by the file's extension."""

INSTALL_HINT = (
    "Install Graphviz (a system program, not a pip package): "
    "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "`conda install graphviz` (conda), or see https://graphviz.org/download/. "
    "get_dot_graph(output) still works without it and returns the DOT text."
)


class GraphvizError(RuntimeError):
    """Graphviz's ``dot`` failed to render a graph (the message holds its stderr)."""


class GraphvizNotFoundError(GraphvizError):
    """Graphviz's ``dot`` program is not on ``PATH`` (the message says how to install it)."""


def find_dot() -> str:
    """The path of Graphviz's ``dot`` program; ``GraphvizNotFoundError`` when not on PATH."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(
            f"Graphviz's `dot` program was not found on PATH. {INSTALL_HINT}"
        )
    return exe


def render_dot(source: str, fmt: str) -> bytes:
    """Render DOT text to an image in ``fmt`` (png, svg or pdf) with ``dot``; the image bytes.

    The text goes to ``dot`` through its stdin and the image comes back on its stdout: no
    shell, no temporary files.
    """
    if fmt not in FORMATS:
        raise ValueError(f"render_dot: format {fmt!r} is not supported; use one of {FORMATS}")
    exe = find_dot()
    try:
        proc = subprocess.run(
            [exe, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, check=False
        )
    except OSError as e:  # removed or not executable between which() and run()
        raise GraphvizNotFoundError(
            f"Graphviz's `dot` at {exe} could not run ({e}). {INSTALL_HINT}"
        ) from e
    stderr = proc.stderr.decode("utf-8", errors="replace").strip()
    if proc.returncode != 0:
        raise GraphvizError(
            f"Graphviz `dot -T{fmt}` ({exe}) failed with exit code {proc.returncode}: "
            f"{stderr or '(no message on stderr)'}"
        )
    if not proc.stdout:
        raise GraphvizError(f"Graphviz `dot -T{fmt}` ({exe}) produced no output. {stderr}".strip())
    return proc.stdout


def image_format(to_file: str | os.PathLike[str]) -> str:
    """The format named by ``to_file``'s extension (lower case); ``ValueError`` if unsupported."""
    ext = os.path.splitext(os.fspath(to_file))[1][1:].lower()
    if ext not in FORMATS:
        got = f"extension {'.' + ext!r}" if ext else "no extension"
        raise ValueError(
            f"plot_dot_graph: to_file={os.fspath(to_file)!r} has {got}; the image format is "
            f"chosen by the extension: use one of {', '.join('.' + f for f in FORMATS)}"
        )
    return ext


def write_image(source: str, to_file: str | os.PathLike[str]) -> str:
    """Render DOT text into ``to_file`` (format by extension); the path written, as a string.

    Nothing is written unless ``dot`` succeeds, and nothing but ``to_file``.
    """
    path = os.fspath(to_file)
    fmt = image_format(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"plot_dot_graph: the folder of to_file={path!r} does not exist ({folder}); "
            f"create it first"
        )
    data = render_dot(source, fmt)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def plot_dot_graph(
    output: Variable, verbose: bool = True, to_file: str | os.PathLike[str] = "graph.png"
) -> Any:
    """Draw the graph that produced ``output`` into ``to_file`` (.png, .svg or .pdf).

    Renders :func:`get_dot_graph` with Graphviz's ``dot`` (install the system package
    ``graphviz``). Only ``to_file`` is written. Returns, like DeZero, an image object that
    Jupyter shows inline when IPython is importable (``IPython.display.Image`` for PNG,
    ``SVG`` for SVG), else the path as a string (always the path for PDF).

    >>> import numpy as np
    >>> from zerograd import Variable
    >>> x = Variable(np.array(1.0), name="x")
    >>> plot_dot_graph(x * x, to_file="square.svg")  # doctest: +SKIP
    """
    image_format(to_file)  # a bad extension fails before any work
    source = get_dot_graph(output, verbose)
    path = write_image(source, to_file)
    return _notebook_image(path)


def _notebook_image(path: str) -> Any:
    fmt = image_format(path)
    if fmt == "pdf":
        return path
    try:
        from IPython import display
    except ImportError:
        return path
    if fmt == "svg":
        return display.SVG(filename=path)
    return display.Image(filename=path)
