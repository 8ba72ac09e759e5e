"""Rendering DOT text with Graphviz's ``dot`` program, and ``plot_dot_graph``."""

from __future__ import annotations

import math
import numbers
import os
import shutil
import signal
import subprocess
from typing import Any

from zerograd import Variable

from .dot import check_verbose, get_dot_graph
from .files import check_path, replace_file, writable_folder

FORMATS = ("png", "svg", "pdf")
"""The image formats ``plot_dot_graph`` writes, chosen by the file's extension."""

DEFAULT_TIMEOUT: float | None = None
"""Seconds ``dot`` may run before it is stopped (the ``timeout=`` keywords' default).

None: no limit, as in DeZero. Laying out a large graph can take ``dot`` minutes (the
book's step 35 draws the 7th derivative of tanh); a run that must not hang passes its
own ``timeout=``."""

INSTALL_HINT = (
    "Install Graphviz (a system program, not a pip package): "
    "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "`conda install graphviz` (conda), or see https://graphviz.org/download/. "
    "get_dot_graph(output) still works without it and returns the DOT text."
)
"""How to install Graphviz, appended to the errors that say ``dot`` is missing."""


class GraphvizError(RuntimeError):
    """Graphviz's ``dot`` failed to render a graph (the message holds its stderr)."""


class GraphvizNotFoundError(GraphvizError):
    """Graphviz's ``dot`` program is not on ``PATH`` (the message says how to install it)."""


class GraphvizTimeoutError(GraphvizError):
    """``dot`` ran longer than its timeout and was stopped (no file was written)."""


def find_dot() -> str:
    """Return the path of Graphviz's ``dot`` program.

    Returns:
        The full path of ``dot`` as found on ``PATH``.

    Raises:
        GraphvizNotFoundError: ``dot`` is not on ``PATH`` (the message says how to install it).
    """
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(
            f"Graphviz's `dot` program was not found on PATH. {INSTALL_HINT}"
        )
    return exe


def check_timeout(op: str, timeout: Any) -> float | None:
    """Check a ``timeout=`` argument and return it as seconds.

    Args:
        op: the calling function's name, used in error messages.
        timeout: a positive number of seconds, or ``None`` for no limit.

    Returns:
        The seconds as a float, or ``None`` for no limit (``None`` or infinity).

    Raises:
        TypeError: ``timeout`` is not a real number or ``None``.
        ValueError: ``timeout`` is not more than 0 (or is NaN).
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(
            f"{op}: timeout must be a number of seconds or None (no limit), got "
            f"{type(timeout).__qualname__} ({timeout!r})"
        )
    seconds = float(timeout)
    if not seconds > 0:  # also refuses nan
        raise ValueError(
            f"{op}: timeout must be more than 0 seconds (or None for no limit), got {timeout!r}"
        )
    return None if math.isinf(seconds) else seconds


def render_dot(source: str, fmt: str, *, timeout: float | None = DEFAULT_TIMEOUT) -> bytes:
    """Render DOT text to an image in ``fmt`` (png, svg or pdf) with ``dot``.

    The text goes to ``dot`` through its stdin and the image comes back on its stdout: no
    shell, no temporary files.

    Args:
        source: DOT text, e.g. from ``get_dot_graph``.
        fmt: ``"png"``, ``"svg"`` or ``"pdf"``.
        timeout: seconds ``dot`` may run (``None``: no limit). When they are up, ``dot`` and
            every process it started are killed and waited for.

    Returns:
        The image file's bytes.

    Raises:
        TypeError: ``source`` is not a str, or ``timeout`` is not a number or ``None``.
        ValueError: ``fmt`` is not a supported format, or ``timeout`` is not positive.
        GraphvizNotFoundError: ``dot`` is not on ``PATH`` or cannot run.
        GraphvizTimeoutError: ``dot`` ran past ``timeout``.
        GraphvizError: ``dot`` failed (its stderr is in the message).
    """
    if not isinstance(source, str):
        raise TypeError(
            f"render_dot: source must be DOT text (a str, e.g. from get_dot_graph(output)), "
            f"got {type(source).__qualname__}"
        )
    if fmt not in FORMATS:
        raise ValueError(f"render_dot: format {fmt!r} is not supported; use one of {FORMATS}")
    seconds = check_timeout("render_dot", timeout)
    exe = find_dot()
    try:
        proc = subprocess.Popen(
            [exe, f"-T{fmt}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=os.name == "posix",  # its own group: a kill reaches its children
        )
    except OSError as e:  # removed or not executable between which() and run()
        raise GraphvizNotFoundError(
            f"Graphviz's `dot` at {exe} could not run ({e}). {INSTALL_HINT}"
        ) from e
    try:
        out, err = proc.communicate(source.encode("utf-8"), timeout=seconds)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise GraphvizTimeoutError(
            f"Graphviz `dot -T{fmt}` ({exe}) did not finish within {seconds:g} s, so it was "
            f"stopped (killed with any process it started) and no file was written. For a "
            f"very large graph ({source.count(chr(10)) + 1} lines of DOT text here) pass a "
            f"larger timeout= (timeout=None waits without limit); otherwise check that {exe} "
            f"is Graphviz's dot (`{exe} -V` prints its version)."
        ) from None
    except BaseException:  # Ctrl-C while waiting: never leave dot running behind
        _stop(proc)
        raise
    stderr = err.decode("utf-8", errors="replace").strip()
    if proc.returncode != 0:
        raise GraphvizError(
            f"Graphviz `dot -T{fmt}` ({exe}) failed with exit code {proc.returncode}: "
            f"{stderr or '(no message on stderr)'}"
        )
    if not out:
        raise GraphvizError(f"Graphviz `dot -T{fmt}` ({exe}) produced no output. {stderr}".strip())
    return out


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and its process group, reap it and close its pipes."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass  # already gone
    proc.wait()  # reaped: no zombie left
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def image_format(to_file: str | os.PathLike[str]) -> str:
    """Return the image format named by ``to_file``'s extension.

    Args:
        to_file: the image file's path.

    Returns:
        ``"png"``, ``"svg"`` or ``"pdf"`` (lower case).

    Raises:
        TypeError: ``to_file`` is not a path.
        ValueError: the extension is missing or not one of ``FORMATS``.
    """
    path = check_path("plot_dot_graph", to_file)
    ext = os.path.splitext(path)[1][1:].lower()
    if ext not in FORMATS:
        got = f"extension {'.' + ext!r}" if ext else "no extension"
        raise ValueError(
            f"plot_dot_graph: to_file={path!r} has {got}; the image format is "
            f"chosen by the extension: use one of {', '.join('.' + f for f in FORMATS)}"
        )
    return ext


def write_image(
    source: str, to_file: str | os.PathLike[str], *, timeout: float | None = DEFAULT_TIMEOUT
) -> str:
    """Render DOT text into ``to_file``, the format chosen by its extension.

    Nothing is written unless ``dot`` succeeds, and nothing but ``to_file``: the image is
    written to a temporary file beside it and moved over it in one step, so a failure at any
    point leaves an existing ``to_file`` as it was.

    Args:
        source: DOT text, e.g. from ``get_dot_graph``.
        to_file: the image file (``.png``, ``.svg`` or ``.pdf``).
        timeout: seconds ``dot`` may run (``None``: no limit).

    Returns:
        The path written, as a string.

    Raises:
        ValueError: ``to_file``'s extension is not a supported format.
        FileNotFoundError: ``to_file``'s folder does not exist.
        PermissionError: ``to_file`` exists and is read-only.
        GraphvizError: ``dot`` is missing, timed out or failed (see ``render_dot``).
    """
    path = check_path("plot_dot_graph", to_file)
    fmt = image_format(path)
    folder = writable_folder("plot_dot_graph", path)
    data = render_dot(source, fmt, timeout=timeout)
    replace_file("plot_dot_graph", path, folder, data)
    return path


def plot_dot_graph(
    output: Variable,
    verbose: bool = True,
    to_file: str | os.PathLike[str] = "graph.png",
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Any:
    """Draw the graph that produced ``output`` into ``to_file`` (.png, .svg or .pdf).

    Renders ``get_dot_graph(output, verbose)`` with Graphviz's ``dot`` (install the system package
    ``graphviz``). Only ``to_file`` is written, and only when ``dot`` succeeds.

    Args:
        output: the Variable whose graph is drawn.
        verbose: label variables with their shape and dtype too.
        to_file: the image file; its extension picks the format.
        timeout: seconds ``dot`` may run (default ``None``: no limit, as in DeZero, since a
            large graph can take ``dot`` minutes). When they are up, ``dot`` is killed with
            every process it started and ``GraphvizTimeoutError`` is raised.

    Returns:
        Like DeZero, an image object that Jupyter shows inline when IPython is importable
            (``IPython.display.Image`` for PNG, ``SVG`` for SVG), else the path as a string
            (always the path for PDF).

    Raises:
        TypeError: ``output`` is not a Variable, or an argument has the wrong type.
        ValueError: ``to_file``'s extension is not a supported format.
        PermissionError: ``to_file`` exists and is read-only (it is left as it is).
        GraphvizNotFoundError: ``dot`` is not installed (the message says how to get it).
        GraphvizTimeoutError: ``dot`` ran past ``timeout``; ``to_file`` is unchanged.
        GraphvizError: ``dot`` failed; ``to_file`` is unchanged.

    Examples:
        >>> import numpy as np
        >>> from zerograd import Variable
        >>> x = Variable(np.array(1.0), name="x")
        >>> plot_dot_graph(x * x, to_file="square.svg")  # doctest: +SKIP
    """
    path = check_path("plot_dot_graph", to_file)
    image_format(path)  # a bad extension fails before any work
    check_verbose("plot_dot_graph", verbose)
    check_timeout("plot_dot_graph", timeout)
    source = get_dot_graph(output, verbose)
    path = write_image(source, path, timeout=timeout)
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


__all__ = ["GraphvizError", "GraphvizNotFoundError", "GraphvizTimeoutError", "plot_dot_graph"]
