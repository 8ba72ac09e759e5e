"""``export``: a model's forward written as an ONNX file."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx

from zerograd import Variable
from zerograd.backends import as_numpy
from zerograd.checks import flag, integer
from zerograd.utils import add_note
from zerograd_nn import Layer
from zerograd_nn.atomic import write_atomically

from .assemble import build_model, write_external_data
from .capture import Capture, capture, layer_sites
from .errors import ExportError
from .inputs import (
    batch_size,
    check_model,
    file_path,
    input_arrays,
    one_more_row,
    output_variables,
    rows_in_another_order,
    value_names,
)
from .program import REORDERED, build_program, refuse_side_channels, refuse_value_dependence

DEFAULT_OPSET = 18
"""The opset ``export`` writes unless told otherwise (PyTorch's exporter starts at 18 too)."""
MIN_OPSET = 18
"""The oldest opset the converters are written for (``Reduce*`` axes as inputs, ``Col2Im``)."""

_OP = "zerograd_onnx.export"


def export(
    model: Any,
    example_inputs: Any,
    path: Any,
    *,
    opset: int = DEFAULT_OPSET,
    dynamic_batch: bool = True,
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
    external_data: bool | None = None,
) -> str:
    """Write ``model``'s forward as an ONNX file, its parameters as initializers.

    The forward runs on ``example_inputs`` in test mode without gradients (dropout off,
    batch norm on its running statistics) while every Function applied is recorded; with
    ``dynamic_batch`` it runs once more on a batch one row larger, and the axes whose
    length changed become the graph's ``batch`` axis. Each function becomes the ONNX
    nodes its converter writes (:func:`supported`); parameters become initializers named
    by their dotted paths (``fc1.W``). The file's metadata names the zerograd version.

    Nothing is written unless the whole model converts and passes
    ``onnx.checker.check_model(full_check=True)``; the file is written atomically, so an
    old file at ``path`` stays whole until the new one replaces it. Layer states that the
    forward replaces (an RNN's ``h``) are put back afterwards.

    A model over protobuf's 2 GB limit for one file keeps its weights (every initializer
    of 1 KiB or more) in ONNX's external data file ``<path>.data`` beside the model, which
    names it by its file name: keep the two files together. Each is written atomically,
    the data file once the model's temporary is written, and renamed just before it.

    Args:
        model: a :class:`zerograd_nn.Layer` (or any callable of Variables returning a
            Variable or a tuple of them).
        example_inputs: an array (or Variable), or a tuple of them: one forward's inputs.
        path: the file to write (``model.onnx``).
        opset: the ONNX opset, from 18 to the newest the installed ``onnx`` knows.
        dynamic_batch: make axis 0 of every input, and the axes that follow it, a
            ``batch`` axis of any length; False fixes every shape at the example's.
        input_names: the graph's input names (default ``input``, or ``input_0``, ...).
        output_names: the graph's output names (default ``output``, or ``output_0``, ...).
        external_data: True to write the weights into ``<path>.data`` whatever the size,
            False to refuse a model over 2 GB; None (the default): only when over 2 GB.

    Returns:
        ``path``.

    Raises:
        ExportError: a function without an ONNX counterpart (named, with the layer that
            applied it), data of a type its ONNX operator does not take, or a forward ONNX
            cannot follow (a value read into Python, ``x.data`` read by your own code, an
            input the graph does not read, a recurrent state an earlier call left, a
            constant that changes with the input, a graph that changes with the batch
            size), or a model over 2 GB with ``external_data=False``; nothing was written.
        TypeError: ``model`` is not callable, returns something other than Variables, or
            an argument has the wrong type.
        ValueError: a bad opset, names, or example inputs without a shared batch axis.
        FileNotFoundError: the folder of ``path`` does not exist.
        OSError: the folder does not take new files (read-only, full); nothing written.

    Examples:
        >>> import numpy as np, tempfile, os
        >>> from zerograd_nn.models import MLP
        >>> model = MLP((8, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "mlp.onnx")
        >>> export(model, np.zeros((2, 4), np.float32), path) == path
        True
    """
    check_model(model, _OP)
    path = file_path(path, _OP)
    opset = _opset(opset)
    dynamic_batch = flag(_OP, "dynamic_batch", dynamic_batch)
    if external_data is not None:
        external_data = flag(_OP, "external_data", external_data)
    arrays = input_arrays(example_inputs, _OP, "example_inputs")
    names = value_names(input_names, len(arrays), "input", _OP, "input_names")
    if dynamic_batch:
        n = batch_size(arrays, _OP)
    sites = layer_sites(model)
    xs = tuple(Variable(a) for a in arrays)
    first, ys = _run(model, xs, sites, "on the example inputs")
    refuse_side_channels(first)  # before a second run that they may make fail otherwise
    out_names = value_names(output_names, len(ys), "output", _OP, "output_names")
    second = None
    if dynamic_batch:
        xs2 = tuple(Variable(one_more_row(a)) for a in arrays)
        cap2, ys2 = _run(model, xs2, sites, f"on a batch of {n + 1} (the example's rows and "
                         f"its first row again), to find the batch axes")  # fmt: skip
        if len(ys2) != len(ys):
            raise ExportError(
                f"{_OP}: the model returns {len(ys)} outputs at batch {n} but {len(ys2)} at "
                f"batch {n + 1}; export with dynamic_batch=False."
            )
        second = (cap2, xs2, ys2)
    params = {}  # read after the forward: a lazily sized layer makes its parameters there
    if isinstance(model, Layer):
        params = {id(p): name for name, p in model.named_params().items()}
    clash = sorted(set(params.values()) & {*names, *out_names})
    if clash:
        raise ValueError(
            f"{_OP}: {clash} name both inputs or outputs and parameters of the model; choose "
            f"other input_names / output_names."
        )
    program = build_program(first, xs, ys, second, names, out_names, params)
    if not dynamic_batch:
        _refuse_value_dependence(model, arrays, sites, first, xs, ys, params)
    location = os.path.basename(path) + ".data"
    proto, blobs = build_model(program, opset, out_names, model, external_data, location)
    data = proto.SerializeToString()
    beside = os.path.join(os.path.dirname(path), location)

    def write(f: Any) -> None:
        f.write(data)
        if blobs:  # once the model's temporary is written: renamed just before the model
            write_atomically(beside, lambda g: write_external_data(g, blobs), _OP)

    write_atomically(path, write, _OP, example="model.onnx")
    return path


def _refuse_value_dependence(
    model: Any, arrays: tuple, sites: dict, first: Capture, xs: tuple, ys: tuple, params: dict
) -> None:
    """Run the forward on the example's rows in another order and compare (static exports).

    A dynamic export's second run (a batch one row larger) finds constants computed from
    the input; a static one has this instead. Skipped when no input has two different rows.
    """
    reordered = tuple(rows_in_another_order(a) for a in arrays)
    if all(
        np.array_equal(as_numpy(a), as_numpy(b)) for a, b in zip(arrays, reordered)
    ):  # batch 1, 0-d inputs, equal rows: nothing would differ
        return
    xs2 = tuple(Variable(a) for a in reordered)
    cap2, ys2 = _run(model, xs2, sites, f"{REORDERED}, to find arrays computed from the input "
                     f"outside the graph")  # fmt: skip
    if len(ys2) != len(ys):
        raise ExportError(
            f"{_OP}: the model returns {len(ys)} outputs on the example but {len(ys2)} "
            f"{REORDERED}; a forward that depends on the input's values cannot be exported."
        )
    refuse_value_dependence(first, xs, ys, (cap2, xs2, ys2), params)


def _opset(opset: Any) -> int:
    newest = onnx.defs.onnx_opset_version()
    opset = integer(_OP, "opset", opset)
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(
            f"{_OP}: opset {opset} is outside {MIN_OPSET}..{newest} (the oldest the converters "
            f"are written for, the newest onnx {onnx.__version__} knows)."
        )
    return opset


def _run(
    model: Any, xs: tuple[Variable, ...], sites: dict, when: str
) -> tuple[Capture, tuple[Variable, ...]]:
    """Capture one forward pass; what it returned as a tuple of Variables."""
    try:
        cap, out = capture(model, xs, sites)
    except Exception as exc:
        add_note(exc, f"{_OP} ran the model's forward {when} (test mode, no gradients)")
        raise
    return cap, output_variables(out, _OP)


__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "export"]
