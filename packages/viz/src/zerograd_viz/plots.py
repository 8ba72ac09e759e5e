"""Training plots with matplotlib: ``plot_history`` and ``plot_decision_boundary``.

matplotlib is an optional extra (``pip install 'zerograd-viz[plot]'``), imported on first
use. Figures are drawn on matplotlib's Agg canvas without pyplot, so the user's pyplot
state and backend are left alone, and saved to a file.
"""

from __future__ import annotations

import io
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zerograd import Variable, no_grad, test_mode
from zerograd.backends import as_numpy, backend_of

from .files import check_path, replace_file, writable_folder

PLOT_INSTALL = "pip install 'zerograd-viz[plot]'"
"""The command that installs matplotlib for the plots, named when it is missing."""
CLASS_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
"""The colour of each class's points and region (matplotlib's tab10), class 0 first."""
MARKERS = ("o", "x", "^", "s", "v", "D", "*", "P", "<", ">")
"""The marker of each class's points, as in the book's spiral figure."""
NON_FINITE_COLOR = "#d62728"
"""The colour of the marks ``plot_history`` puts over epochs whose value is nan or inf."""
_CHUNK = 4096  # grid rows evaluated per model call


def _new_figure(op: str, to_file: str | os.PathLike[str], **kw: Any) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(f"{op} needs matplotlib, which is not installed: {PLOT_INSTALL}") from e
    path = check_path(op, to_file)
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    ext = os.path.splitext(path)[1][1:].lower()
    kinds = fig.canvas.get_supported_filetypes()
    if ext not in kinds:
        raise ValueError(
            f"{op}: to_file={path!r} needs an image extension matplotlib writes, one of "
            f"{', '.join('.' + k for k in sorted(kinds))}"
        )
    writable_folder(op, path)
    return fig


def _save(op: str, fig: Any, to_file: str | os.PathLike[str]) -> str:
    """Draw ``fig`` in memory, then write it in one step (a failure leaves the old file)."""
    path = check_path(op, to_file)
    buf = io.BytesIO()
    fig.savefig(buf, dpi=100, format=os.path.splitext(path)[1][1:].lower())
    replace_file(op, path, writable_folder(op, path), buf.getvalue())
    return path


def _real(op: str, name: str, v: Any, *, low: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {type(v).__qualname__} ({v!r})")
    if math.isnan(v):
        raise ValueError(f"{op}: {name} must be a number, not nan")
    if low is not None and v < low:
        raise ValueError(f"{op}: {name} must be >= {low:g}, got {v!r}")
    return float(v)


def _resolution(op: str, resolution: Any) -> int:
    if isinstance(resolution, bool) or not isinstance(resolution, numbers.Integral):
        raise TypeError(
            f"{op}: resolution must be an int >= 2, got {type(resolution).__qualname__} "
            f"({resolution!r})"
        )
    if resolution < 2:
        raise ValueError(f"{op}: resolution must be an int >= 2, got {resolution!r}")
    return int(resolution)


def _number(op: str, where: str, v: Any) -> float:
    if isinstance(v, Variable):
        v = v.data
    if isinstance(v, (str, bytes)):
        raise TypeError(f"{op}: {where} is a string ({v!r}); values must be numbers")
    try:
        return float(v.item() if hasattr(v, "item") else v)
    except OverflowError:  # a Python int (or Fraction) beyond float's range
        text = repr(v)
        text = text if len(text) <= 40 else f"{text[:12]}... ({len(text)} characters)"
        raise ValueError(f"{op}: {where} = {text} is too large for a float") from None
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{op}: {where} must be a number (a float, a 0-d array or a Variable), got "
            f"{type(v).__qualname__} ({e})"
        ) from None


def _series(op: str, name: str, values: Any) -> list[float]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{op}: {name} must be a list of numbers, got {type(values).__qualname__}")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(
            f"{op}: {name} must be a list of numbers, got {type(values).__qualname__}"
        ) from None
    if not items:
        raise ValueError(f"{op}: {name} is empty; there is nothing to plot")
    return [_number(op, f"{name}[{i}]", v) for i, v in enumerate(items)]


def _panels(history: Any) -> list[tuple[str | None, dict[str, list[float]]]]:
    """[(panel title, {curve label: values})] from a list, a dict of lists or a dict of dicts."""
    op = "plot_history"
    if not isinstance(history, Mapping):
        return [(None, {"": _series(op, "history", history)})]
    if not history:
        raise ValueError(f"{op}: history is an empty dict; there is nothing to plot")
    panels = []
    for key, values in history.items():
        if isinstance(values, Mapping):
            if not values:
                raise ValueError(f"{op}: history[{key!r}] is an empty dict; nothing to plot")
            curves = {str(k): _series(op, f"history[{key!r}][{k!r}]", v) for k, v in values.items()}
        else:
            curves = {"": _series(op, f"history[{key!r}]", values)}
        panels.append((str(key), curves))
    return panels


def _curve(ax: Any, values: list[float], label: str | None, bad: set[int]) -> None:
    """Plot one curve; add the epochs of its nan/inf values to ``bad``.

    A line joins neighbouring finite values only, so a finite value with no finite
    neighbour (a history of one value, a value between nans) gets a marker of its own.
    """
    n = len(values)
    finite = [math.isfinite(v) for v in values]
    (line,) = ax.plot(range(1, n + 1), values, label=label)
    alone = [i for i in range(n) if finite[i]
             and not (i > 0 and finite[i - 1]) and not (i + 1 < n and finite[i + 1])]  # fmt: skip
    if alone:
        ax.plot([i + 1 for i in alone], [values[i] for i in alone], linestyle="none",
                marker="o", color=line.get_color())  # fmt: skip
    bad.update(i + 1 for i in range(n) if not finite[i])


def plot_history(
    history: Sequence[Any] | Mapping[str, Any],
    to_file: str | os.PathLike[str],
    title: str | None = None,
    *,
    xlabel: str = "epoch",
) -> str:
    """Plot training curves into an image file.

    Needs matplotlib (``pip install 'zerograd-viz[plot]'``). The x axis counts from 1. Every
    finite value shows (one with no finite neighbour as a marker); epochs whose value is nan
    or inf get a red mark at the top of their panel, "nan/inf (not drawn)" in the legend.

    Args:
        history: a list of values (one curve), a dict ``name -> list`` (one panel per
            name, e.g. ``{"loss": [...], "accuracy": [...]}``), or a dict
            ``name -> {label: list}`` (curves sharing a panel, e.g.
            ``{"loss": {"train": [...], "test": [...]}}``). Values may be floats, 0-d
            arrays or Variables.
        to_file: the image file; its extension picks the format (any matplotlib writes).
        title: a title over the whole figure.
        xlabel: the x axis label of every panel.

    Returns:
        The path written, as a string.

    Raises:
        ImportError: matplotlib is not installed.
        TypeError: a value is not a number, or ``to_file`` is not a path.
        ValueError: ``history`` or one of its lists is empty, a value is too large for a
            float, or the extension is not an image format matplotlib writes.
        PermissionError: ``to_file`` exists and is read-only.
        FileNotFoundError: ``to_file``'s folder does not exist.

    Examples:
        >>> plot_history({"loss": [1.0, 0.5, 0.2]}, "loss.png")  # doctest: +SKIP
        'loss.png'
    """
    panels = _panels(history)
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig = _new_figure("plot_history", to_file, figsize=(5 * cols, 3.6 * rows), layout="constrained")
    from matplotlib.ticker import MaxNLocator

    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (name, curves) in zip(axes, panels):
        bad: set[int] = set()
        for label, values in curves.items():
            _curve(ax, values, label or None, bad)
        if bad:
            # matplotlib leaves nan and inf out silently: a diverged run must not look calm
            marks = sorted(bad)
            ax.plot(marks, [1.0] * len(marks), transform=ax.get_xaxis_transform(),
                    linestyle="none", marker="v", color=NON_FINITE_COLOR, clip_on=False,
                    label="nan/inf (not drawn)")  # fmt: skip
        if any(curves) or bad:
            ax.legend()
        ax.set_xlabel(xlabel)
        if max(len(v) for v in curves.values()) == 1:
            ax.set_xlim(0.5, 1.5)  # one epoch: else matplotlib's ticks are 0.95, 0.975, ...
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        if name is not None:
            ax.set_ylabel(name)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    if title is not None:
        fig.suptitle(title)
    return _save("plot_history", fig, to_file)


def _as_numpy_points(op: str, x: Any, t: Any) -> tuple[Any, Any, Any]:
    """(x's data, x as a numpy (N, 2) array, t as numpy (N,) ints)."""
    import numpy as np

    data = x.data if isinstance(x, Variable) else x
    xn = np.asarray(_to_numpy(op, "x", data))
    if xn.ndim != 2 or xn.shape[1] != 2:
        raise ValueError(f"{op}: x must hold 2-D points, shape (N, 2); got shape {xn.shape}")
    if xn.dtype.kind not in "biuf":
        raise TypeError(f"{op}: x must hold real numbers, got dtype {xn.dtype}")
    if not np.isfinite(xn).all():
        raise ValueError(f"{op}: x holds NaN or infinite coordinates; drop those points first")
    if t is None:
        return data, xn, None
    tn = np.asarray(_to_numpy(op, "t", t.data if isinstance(t, Variable) else t))
    if tn.ndim == 2 and tn.shape[1] == 1:
        tn = tn[:, 0]
    if tn.shape != (xn.shape[0],):
        hint = ""
        if tn.ndim == 2 and tn.shape[0] == xn.shape[0]:
            hint = " (one-hot labels? pass t.argmax(axis=1))"
        raise ValueError(
            f"{op}: t must hold one integer class label per point, shape ({xn.shape[0]},); "
            f"got shape {tn.shape}{hint}"
        )
    if tn.dtype.kind not in "iub":
        hint = " (whole-number labels: pass t.astype(int))" if tn.dtype.kind == "f" else ""
        raise ValueError(
            f"{op}: t must hold one integer class label per point; got dtype {tn.dtype}{hint}"
        )
    if tn.size and tn.min() < 0:
        raise ValueError(f"{op}: t holds negative class labels ({tn.min()}); labels count from 0")
    return data, xn, tn.astype(np.int64)


def _to_numpy(op: str, name: str, v: Any) -> Any:
    try:
        return as_numpy(v)
    except TypeError:
        raise TypeError(
            f"{op}: {name} must be an array, a Variable or a list of numbers, got "
            f"{type(v).__qualname__}"
        ) from None


def _classes(op: str, y: Any, threshold: float, m: int) -> tuple[Any, int]:
    """(the classes of ``m`` points from the model's output ``y``, how many scores were nan)."""
    import numpy as np

    try:
        y = np.asarray(as_numpy(y.data if isinstance(y, Variable) else y))
    except TypeError:
        raise TypeError(
            f"{op}: the model returned {type(y).__qualname__}; it must return an array or a "
            f"Variable of per-point scores"
        ) from None
    shape = y.shape
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim not in (1, 2):
        raise ValueError(
            f"{op}: the model must return one row per point, shape (M, C) scores, (M, 1) or "
            f"(M,); got shape {shape}"
        )
    if y.shape[0] != m:
        raise ValueError(
            f"{op}: the model returned shape {shape} for {m} points; it must return one row "
            f"per point: (M, C) scores, (M, 1) or (M,) with M = {m}"
        )
    nan = 0
    if y.dtype.kind == "f":
        bad = np.isnan(y) if y.ndim == 1 else np.isnan(y).any(axis=1)
        nan = int(bad.sum())
    if y.ndim == 2:
        return np.argmax(y, axis=1), nan
    if y.dtype.kind in "iu":
        if y.size and y.min() < 0:  # no colour, no legend entry: its region stayed blank
            raise ValueError(
                f"{op}: the model returned negative classes ({y.min()}); integer outputs are "
                f"taken as class numbers, counting from 0 (for labels -1/+1 return "
                f"(y + 1) // 2, or return scores)"
            )
        return y.astype(np.int64), nan
    return (y > threshold).astype(np.int64), nan


def predict_grid(
    model_or_fn: Callable[[Any], Any],
    x: Any,
    resolution: int = 200,
    *,
    threshold: float = 0.5,
    margin: float = 0.1,
) -> tuple[Any, Any, Any]:
    """Predict classes on a ``resolution`` x ``resolution`` grid covering the points ``x``.

    The model runs under ``no_grad`` and ``test_mode`` on arrays of ``x``'s backend and
    dtype (integer points give a float64 grid), a few thousand grid points per call.

    Args:
        model_or_fn: a model or function mapping an ``(M, 2)`` array to per-point outputs:
            scores ``(M, C)`` give the argmax; a single float score (``(M,)`` or
            ``(M, 1)``) gives class 1 above ``threshold``; integers are taken as the classes
            (counting from 0).
        x: the ``(N, 2)`` points (array, Variable or nested list) the grid covers.
        resolution: grid points along each axis (at least 2).
        threshold: the score above which a single-score model predicts class 1.
        margin: padding around the points' bounding box, as a fraction of its size.

    Returns:
        Numpy arrays ``(xs, ys, classes)``: ``classes[i, j]`` is the class at
            ``(xs[j], ys[i])``.

    Raises:
        TypeError: ``model_or_fn`` is not callable, or an argument or the model's output has
            the wrong type.
        ValueError: ``x`` is not ``(N, 2)`` finite points, ``resolution < 2``,
            ``margin < 0``, ``threshold`` or ``margin`` is nan, or the model's output has
            the wrong shape or holds nan.
    """
    import numpy as np

    op = "plot_decision_boundary"
    if not callable(model_or_fn):
        raise TypeError(
            f"{op}: model_or_fn must be a model or function mapping (M, 2) points to scores, "
            f"got {type(model_or_fn).__qualname__}"
        )
    resolution = _resolution(op, resolution)
    threshold = _real(op, "threshold", threshold)
    margin = _real(op, "margin", margin, low=0.0)
    data, xn, _ = _as_numpy_points(op, x, None)
    if xn.shape[0] == 0:
        raise ValueError(f"{op}: x holds no points")
    dtype = xn.dtype if xn.dtype.kind == "f" else np.dtype("float64")
    lo, hi = xn.min(axis=0).astype(np.float64), xn.max(axis=0).astype(np.float64)
    pad = np.where(hi > lo, (hi - lo) * margin, 0.5)
    xs = np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution)
    ys = np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution)
    xx, yy = np.meshgrid(xs, ys)
    grid = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(dtype)
    backend = None if isinstance(data, (list, tuple)) else backend_of(data)
    parts = []
    nan = 0
    with no_grad(), test_mode():
        for start in range(0, grid.shape[0], _CHUNK):
            chunk = grid[start : start + _CHUNK]
            arr = backend.from_numpy(chunk) if backend is not None else chunk
            part, k = _classes(op, model_or_fn(arr), threshold, chunk.shape[0])
            parts.append(part)
            nan += k
    if nan:  # argmax and "> threshold" would quietly make every such point class 0
        raise ValueError(
            f"{op}: the model returned nan scores for {nan} of {grid.shape[0]} points of the "
            f"grid, so their class is unknown; check the model (after a diverged training its "
            f"parameters hold nan)"
        )
    classes = np.concatenate(parts)
    return xs, ys, classes.reshape(resolution, resolution)


def plot_decision_boundary(
    model_or_fn: Callable[[Any], Any],
    x: Any,
    t: Any,
    to_file: str | os.PathLike[str],
    resolution: int = 200,
    *,
    threshold: float = 0.5,
    title: str | None = None,
) -> str:
    """Colour the regions a 2-D classifier assigns to each class and scatter the points.

    Needs matplotlib (``pip install 'zerograd-viz[plot]'``); at most 10 classes.

    Args:
        model_or_fn: maps an ``(M, 2)`` array to per-point outputs (see ``predict_grid``).
        x: the ``(N, 2)`` points.
        t: their integer class labels, shape ``(N,)`` or ``(N, 1)``, counting from 0.
        to_file: the image file; its extension picks the format.
        resolution: grid points along each axis of the coloured regions.
        threshold: the score above which a single-score model predicts class 1.
        title: a title over the plot.

    Returns:
        The path written, as a string.

    Raises:
        ImportError: matplotlib is not installed.
        TypeError: ``t`` is None, or an argument or the model's output has the wrong type.
        ValueError: bad shapes or labels (see ``predict_grid``), more than 10 classes, or
            an extension that is not an image format matplotlib writes.
        PermissionError: ``to_file`` exists and is read-only (checked before the model runs).

    Examples:
        >>> plot_decision_boundary(model, x, t, "spiral.png")  # doctest: +SKIP
        'spiral.png'
    """
    import numpy as np  # matplotlib needs numpy, so it is there whenever matplotlib is

    op = "plot_decision_boundary"
    fig = _new_figure(op, to_file, figsize=(6, 5), layout="constrained")
    if t is None:
        raise TypeError(f"{op}: t must hold one integer class label per point, got None")
    _, xn, tn = _as_numpy_points(op, x, t)
    xs, ys, classes = predict_grid(model_or_fn, x, resolution, threshold=threshold)
    n = int(max(tn.max(initial=0), classes.max())) + 1
    if n > len(CLASS_COLORS):
        raise ValueError(f"{op}: {n} classes; at most {len(CLASS_COLORS)} can be coloured")
    ax = fig.subplots()
    ax.contourf(xs, ys, classes, levels=np.arange(n + 1) - 0.5, colors=CLASS_COLORS[:n], alpha=0.3)
    for k in range(n):
        pts = xn[tn == k]
        if len(pts):
            ax.scatter(
                pts[:, 0], pts[:, 1], s=30, c=CLASS_COLORS[k], marker=MARKERS[k], label=str(k)
            )
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(ys[0], ys[-1])
    ax.legend(title="class")
    if title is not None:
        ax.set_title(title)
    return _save(op, fig, to_file)


__all__ = ["plot_decision_boundary", "plot_history", "predict_grid"]
