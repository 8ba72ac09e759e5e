"""``check``: run an exported file in ONNX Runtime and compare with zerograd's forward."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.checks import real_number

from .capture import capture, layer_sites
from .errors import ParityError
from .inputs import check_model, file_path, input_arrays, output_variables

_OP = "zerograd_onnx.check"

# ONNX Runtime's names of tensor types -> numpy dtypes
_ORT_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}
_TOLERANCE = 1e-5  # onnx-chainer's rtol and atol
# float16 keeps about 3 digits (its epsilon is 9.8e-4), and ONNX Runtime may compute a
# float16 operator in float32 where zerograd rounds each result: ten epsilons
_FLOAT16_TOLERANCE = 1e-2


@dataclass(frozen=True)
class OutputComparison:
    """How far one output of ONNX Runtime is from zerograd's.

    Attributes:
        name: the graph output's name.
        shape: its shape (the same in both, or ``check`` raised).
        max_abs_error: the largest ``|onnx - zerograd|``.
        max_rel_error: the largest ``|onnx - zerograd| / |zerograd|`` where zerograd's
            value is not 0.
        within: whether every element satisfies ``|onnx - zerograd| <= atol + rtol *
            |zerograd|``.
        rtol: the relative tolerance this output was compared at.
        atol: the absolute tolerance this output was compared at.
    """

    name: str
    shape: tuple[int, ...]
    max_abs_error: float
    max_rel_error: float
    within: bool
    rtol: float
    atol: float


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` found: one comparison per output, and the tolerances used.

    Attributes:
        outputs: one :class:`OutputComparison` per graph output, in order.
        rtol: the relative tolerance asked for (1e-5 when none was); a float16 output
            compared at its own default says so in its :class:`OutputComparison`.
        atol: the absolute tolerance asked for (likewise).
    """

    outputs: tuple[OutputComparison, ...]
    rtol: float
    atol: float

    @property
    def ok(self) -> bool:
        """Whether every output is within the tolerances."""
        return all(o.within for o in self.outputs)

    def __str__(self) -> str:
        lines = [
            f"{o.name} {o.shape}: max abs error {o.max_abs_error:.3g}, max rel error "
            f"{o.max_rel_error:.3g} ({'within' if o.within else 'OUTSIDE'} rtol={o.rtol:g}, "
            f"atol={o.atol:g})"
            for o in self.outputs
        ]
        return "\n".join(lines)


def check(
    model: Any, path: Any, inputs: Any, *, rtol: float | None = None, atol: float | None = None
) -> CheckResult:
    """Run the ONNX file at ``path`` in ONNX Runtime on ``inputs`` and compare with ``model``.

    ``model``'s forward runs as :func:`export` ran it (test mode, no gradients, layer
    states put back); each output must have zerograd's shape and satisfy
    ``|onnx - zerograd| <= atol + rtol * |zerograd|`` elementwise, at ``rtol = atol = 1e-5``
    unless given; a float16 output is compared at 1e-2 unless given (float16 keeps about
    three digits, and ONNX Runtime may compute in float32 where zerograd rounds each
    result to float16). Needs ONNX Runtime:
    ``pip install 'zerograd-onnx[check]'``.

    Args:
        model: the model the file was exported from.
        path: the ONNX file.
        inputs: an array (or Variable), or a tuple of them; their shapes may differ from
            the example's on the batch axes only.
        rtol: the relative tolerance (None: 1e-5, and 1e-2 for float16 outputs).
        atol: the absolute tolerance (None: likewise).

    Returns:
        A :class:`CheckResult` (``print`` it for a summary).

    Raises:
        ParityError: an output's shape or values differ beyond the tolerances (an
            ``AssertionError``); the message gives the errors of every output.
        ValueError: ``inputs`` do not fit the file's inputs (count, or a fixed axis's
            length); ``rtol`` or ``atol`` is negative or nan; ONNX Runtime cannot load the
            file: not ONNX, or damaged, or valid ONNX it cannot run (an opset newer than it
            knows, a node type without a kernel such as a float64 ``Conv``), said apart.
        TypeError: an input's dtype is not the file's, an argument has the wrong type, or
            ``model`` is not callable or returns something other than Variables.
        FileNotFoundError: no file at ``path`` (or a folder, a FIFO).
        ImportError: ONNX Runtime is not installed.
    """
    check_model(model, _OP)
    path = file_path(path, _OP)
    asked = {
        k: None if v is None else real_number(_OP, k, v, low=0.0)
        for k, v in (("rtol", rtol), ("atol", atol))
    }
    try:
        import onnxruntime as ort  # the [check] extra
    except ImportError as exc:
        raise ImportError(
            f"{_OP} runs the file in ONNX Runtime, which is not installed: "
            f"pip install 'zerograd-onnx[check]' (or pip install onnxruntime)"
        ) from exc
    if not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "a FIFO, a device or a socket"
        raise FileNotFoundError(
            f"{_OP}: {path!r} is {what}, not an ONNX file; give the file export() wrote"
            if os.path.exists(path)
            else f"{_OP}: no ONNX file at {path!r}; export one first"
        )
    arrays = input_arrays(inputs, _OP, "inputs")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own error types, for any bad file
        raise ValueError(_unloadable(path, ort.__version__, exc)) from exc
    feeds = _feeds(session.get_inputs(), arrays)
    _, out = capture(model, tuple(Variable(a) for a in arrays), layer_sites(model))
    ours = [as_numpy(y.data) for y in output_variables(out, _OP)]
    names = [o.name for o in session.get_outputs()]
    if len(ours) != len(names):
        raise ParityError(
            f"{_OP}: the file has {len(names)} outputs {names} but the model returns {len(ours)}"
        )
    theirs = session.run(names, feeds)
    comparisons = []
    for name, a, b in zip(names, theirs, ours):
        if a.shape != b.shape:
            raise ParityError(
                f"{_OP}: output {name!r} has shape {a.shape} in ONNX Runtime but {b.shape} in "
                f"zerograd"
            )
        default = _FLOAT16_TOLERANCE if b.dtype == np.float16 else _TOLERANCE
        tolerances = [default if v is None else v for v in asked.values()]
        comparisons.append(_compare(name, a, b, *tolerances))
    rtol, atol = (_TOLERANCE if v is None else v for v in asked.values())
    result = CheckResult(tuple(comparisons), rtol, atol)
    if not result.ok:
        raise ParityError(f"{_OP}: ONNX Runtime's outputs differ from zerograd's:\n{result}")
    return result


def _unloadable(path: str, runtime: str, exc: Exception) -> str:
    """Why ONNX Runtime ``runtime`` could not load ``path``, for the error message.

    A bad file, or a valid one it cannot run (an opset newer than it knows, a node type it
    has no kernel for).
    """
    # ONNX Runtime 1.23 (the last for Python 3.10) ends its messages with a newline
    what = f"{type(exc).__name__}: {str(exc).strip()}"
    damaged = (
        f"{_OP}: ONNX Runtime cannot load {path!r} ({what}); it is not an ONNX file, or a "
        f"damaged one: export it again."
    )
    try:
        proto = onnx.load_model(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - whatever onnx makes of a bad file
        return damaged
    folder = os.path.dirname(os.path.abspath(path))
    tensors = proto.graph.initializer
    named = {e.value for t in tensors for e in t.external_data if e.key == "location"}
    missing = sorted(n for n in named if not os.path.isfile(os.path.join(folder, n)))
    if missing:
        return (
            f"{_OP}: ONNX Runtime cannot load {path!r}: its weights are in the external data "
            f"file {missing[0]!r}, which is not in {folder!r}. Keep the two files together in "
            f"one folder (export wrote them side by side), or export again."
        )
    try:
        onnx.checker.check_model(path)
    except Exception:  # noqa: BLE001 - whatever onnx makes of a bad file
        return damaged
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in proto.opset_import)
    start = f"{_OP}: ONNX Runtime {runtime} cannot run {path!r} ({what}). The file is valid ONNX"
    if type(exc).__name__ == "NotImplemented":  # onnxruntime's error for a missing kernel
        return (
            f"{start}, but this runtime has no kernel for one of its nodes with these types: "
            f"its CPU provider computes Conv, ConvTranspose, AveragePool and Col2Im in float16 "
            f"and float32 only (zerograd computes integer data into them in float64). Export a "
            f"float32 copy of the model (its parameters and inputs cast with "
            f"astype(numpy.float32)) to run it in ONNX Runtime, or run the file elsewhere."
        )
    return (
        f"{start} (opset {opsets}); where ONNX Runtime names the opset, it is newer than this "
        f"runtime knows: export again with a lower opset= (from 18), or update onnxruntime."
    )


def _feeds(specs: list, arrays: tuple[Any, ...]) -> dict[str, np.ndarray]:
    """The session's inputs from ``arrays``, checked against the file's types and shapes."""
    if len(specs) != len(arrays):
        raise ValueError(
            f"{_OP}: the file takes {len(specs)} inputs {[s.name for s in specs]} but "
            f"{len(arrays)} were given"
        )
    feeds = {}
    for spec, a in zip(specs, arrays):
        a = np.asarray(as_numpy(a))
        a = a.astype(a.dtype.newbyteorder("="), copy=False)  # ONNX Runtime reads native order
        want = _ORT_TYPES.get(spec.type)
        if want is not None and a.dtype != want:
            raise TypeError(
                f"{_OP}: input {spec.name!r} is {spec.type} in the file but the array given is "
                f"{a.dtype}; convert it (a.astype(numpy.{np.dtype(want).name}))."
            )
        if len(spec.shape) != a.ndim:
            raise ValueError(
                f"{_OP}: input {spec.name!r} has {len(spec.shape)} axes {spec.shape} in the file "
                f"but the array given has shape {a.shape}"
            )
        for axis, (d, n) in enumerate(zip(spec.shape, a.shape)):
            if isinstance(d, int) and d != n:
                raise ValueError(
                    f"{_OP}: input {spec.name!r} has shape {a.shape} but axis {axis} is fixed "
                    f"at {d} in the file (its shape is {spec.shape}; only named axes such as "
                    f"'batch' take any length). Give an array of that length there, or export "
                    f"again with an example of this shape."
                )
        feeds[spec.name] = a
    return feeds


def _compare(name: str, a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> OutputComparison:
    if a.size == 0:
        return OutputComparison(name, a.shape, 0.0, 0.0, True, rtol, atol)
    x, y = a.astype(np.float64), b.astype(np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))  # equal infinities and nans agree
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(x - y))
        close = same | (err <= atol + rtol * np.abs(y))
        nonzero = (y != 0) & ~same
        rel = float(np.max(err[nonzero] / np.abs(y[nonzero]))) if nonzero.any() else 0.0
    worst = float(np.max(err)) if not np.isnan(err).any() else float("nan")
    return OutputComparison(name, a.shape, worst, rel, bool(close.all()), rtol, atol)


__all__ = ["CheckResult", "OutputComparison", "check"]
