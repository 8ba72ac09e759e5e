"""The ONNX model of a program: converters run, graph and metadata made, checked by onnx.

The model is checked before anything is written: ``onnx.checker.check_model`` with
``full_check=True``, then ONNX's own shape inference is compared with the shapes the
forward produced, so that a converter that froze the batch size or got a shape wrong is
an error here, not a wrong file. Both run on the graph with its large initializers
declared as typed inputs instead (the same nodes, types and shapes; VGG16's 553 MB of
weights are then copied once, into the written model, not three more times).
"""

from __future__ import annotations

from importlib.metadata import version as _distribution_version
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from zerograd.utils import add_note

from .context import GraphBuilder, OpContext
from .errors import ExportError
from .program import Program, Value
from .registry import converter_for

_SMALL = 64  # initializers up to this many elements stay in the model onnx checks (shapes)

PROTOBUF_LIMIT = 2**31 - 1
"""The largest ONNX file protobuf writes (2 GB): larger models keep their weights beside it."""
EXTERNAL_MIN_BYTES = 1024
"""Initializers of at least this many bytes go into the external data file (onnx's default)."""
EXTERNAL_ALIGNMENT = 4096
"""Each array in the external data file starts at a multiple of this (a page: mmap-able)."""

BATCH = "batch"
"""The ``dim_param`` of the batch axis in the graph's inputs and outputs."""


def _unsupported(program: Program) -> None:
    seen: dict[tuple[type, str], None] = {}
    for step in program.steps:
        if converter_for(step.call.fn) is None:
            seen.setdefault((type(step.call.fn), str(step.call.site)), None)
    if not seen:
        return
    listed = [f"{cls.__module__}.{cls.__qualname__} (applied {site})" for cls, site in seen]
    shown = "; ".join(listed[:5]) + (f"; and {len(listed) - 5} more" if len(listed) > 5 else "")
    raise ExportError(
        f"zerograd_onnx.export: no ONNX counterpart for {shown}. zerograd_onnx.supported() "
        f"lists the functions it converts; give a function of your own a converter with "
        f"zerograd_onnx.register(FunctionClass, converter). Nothing was written."
    )


def _dims(value: Value, name: str, batch: tuple[int, int] | None) -> list[Any]:
    """The dims of a graph input or output: ints, with the batch axes symbolic."""
    dims: list[Any] = list(value.shape)
    for axis in value.dynamic:
        same = batch and (value.shape[axis], value.other_shape[axis]) == batch
        dims[axis] = BATCH if same else f"{name}_dim{axis}"
    return dims


def _info(name: str, value: Value, batch: tuple[int, int] | None) -> onnx.ValueInfoProto:
    elem = helper.np_dtype_to_tensor_dtype(value.dtype)
    return helper.make_tensor_value_info(name, elem, _dims(value, name, batch))


def build_model(
    program: Program,
    opset: int,
    output_names: list[str],
    model: Any,
    external_data: bool | None = False,
    location: str = "",
) -> tuple[onnx.ModelProto, list[tuple[int, np.ndarray]]]:
    """Convert every step, make the ONNX model and check it.

    Args:
        program: the captured program.
        opset: the ONNX opset (default domain) to write.
        output_names: the names of the graph's outputs.
        model: the exported model (its class names the graph).
        external_data: whether initializers of :data:`EXTERNAL_MIN_BYTES` or more go into
            an external data file; None: only when the model would pass
            :data:`PROTOBUF_LIMIT` otherwise.
        location: the external data file's name, relative to the model's folder.

    Returns:
        The checked model, and the ``(offset, array)`` pairs of its external data file
        (none when every initializer is in the model; :func:`write_external_data`).

    Raises:
        ExportError: a function has no converter (all of them named, with their layers),
            the model fails ONNX's checks (a converter's fault: please report it), or it
            passes protobuf's limit with ``external_data=False``.
    """
    _unsupported(program)
    graph = GraphBuilder(program, opset)
    graph.add_values()
    for step in program.steps:
        try:
            converter_for(step.call.fn)(OpContext(graph, step))
        except ExportError:
            raise  # ctx.error's own message names the function and its layer
        except Exception as exc:  # a converter's bug, often one of the user's own
            cls = type(step.call.fn)
            add_note(
                exc,
                f"zerograd_onnx.export: the converter of {cls.__module__}.{cls.__qualname__} "
                f"(applied {step.call.site}) raised this; nothing was written.",
            )
            raise
    made = {out for node in graph.nodes for out in node.output}
    for step in program.steps:
        for name in step.outputs:
            if name not in made:
                raise ExportError(
                    f"zerograd_onnx.export: the converter of {type(step.call.fn).__name__} "
                    f"(applied {step.call.site}) made no node computing {name!r}"
                )
    inputs = [_info(name, program.values[name], program.batch) for name in program.inputs]
    outputs = []
    for name, value_name in zip(output_names, program.outputs):
        if value_name != name:  # an input, a parameter, a constant, or a repeated output
            graph.nodes.append(helper.make_node("Identity", [value_name], [name], name=name))
        outputs.append(_info(name, program.values[value_name], program.batch))
    clash = sorted(set(graph.initializers) & {*program.inputs, *output_names})
    if clash:
        raise ValueError(
            f"zerograd_onnx.export: the names {clash} are both inputs or outputs and parameters; "
            f"choose other input_names / output_names."
        )
    title = type(model).__name__
    doc = f"The forward of {title}, exported by zerograd-onnx."
    # onnx's checks run on the graph with its large initializers declared as inputs (type
    # and shape, no data): the same nodes, types and shapes, without copying the weights
    small = {k: a for k, a in graph.initializers.items() if a.size <= _SMALL}
    large = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
             for k, a in graph.initializers.items() if a.size > _SMALL]  # fmt: skip
    light = helper.make_graph(
        graph.nodes, title, inputs + large, outputs,
        [numpy_helper.from_array(a, k) for k, a in small.items()], doc_string=doc,
    )  # fmt: skip
    checked = _model(light, opset, model)
    try:
        onnx.checker.check_model(checked, full_check=True)
    except Exception as exc:  # onnx's ValidationError / InferenceError
        _refuse_operator_dtypes(graph, opset, exc)
        raise ExportError(
            f"zerograd_onnx.export: the ONNX model fails onnx's checker ({exc}); this is a "
            f"fault of zerograd-onnx's converters, please report it. Nothing was written."
        ) from exc
    _compare_shapes(checked, program, graph)
    # the model first, then the initializers into its graph: make_model copies a graph
    proto = _model(helper.make_graph(graph.nodes, title, inputs, outputs, doc_string=doc),
                   opset, model)  # fmt: skip
    headers = []
    for name, a in graph.initializers.items():
        t = onnx.TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(a.dtype))
        t.dims.extend(a.shape)
        headers.append((t, a))
    if external_data is not True:  # the tags and lengths of a field take at most 12 bytes more
        size = proto.ByteSize() + sum(t.ByteSize() + a.nbytes + 12 for t, a in headers)
        if size > PROTOBUF_LIMIT and external_data is False:
            raise ExportError(
                f"zerograd_onnx.export: the model takes {size / 1e9:.2f} GB, over protobuf's "
                f"limit of 2 GB for one ONNX file; export with external_data=None (the "
                f"default) or True to write its weights into a file beside it. Nothing was "
                f"written."
            )
        external_data = size > PROTOBUF_LIMIT
    blobs: list[tuple[int, np.ndarray]] = []
    end = 0
    for t, a in headers:  # one copy of each array into the message, or into the data file
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        if external_data and a.nbytes >= EXTERNAL_MIN_BYTES:
            offset = -(-end // EXTERNAL_ALIGNMENT) * EXTERNAL_ALIGNMENT
            end = offset + a.nbytes
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", offset), ("length", a.nbytes)):
                t.external_data.add(key=key, value=str(value))
            blobs.append((offset, a))
            proto.graph.initializer.append(t)
        else:
            kept = proto.graph.initializer.add()
            kept.CopyFrom(t)
            kept.raw_data = a.tobytes()  # the one copy of the array in the message
    return proto, blobs


def write_external_data(f: Any, blobs: list[tuple[int, np.ndarray]]) -> None:
    """Write ``(offset, array)`` pairs (from :func:`build_model`) to the binary file ``f``.

    The gaps before each offset are zeros; arrays are written from their memory, uncopied.
    """
    at = 0
    for offset, a in blobs:
        f.write(bytes(offset - at))
        f.write(memoryview(a.reshape(-1)).cast("B"))
        at = offset + a.nbytes


def _type_name(tensor_type: str) -> str:
    """``'tensor(float)'`` as numpy names it (``'float32'``), or ONNX's name without numpy's."""
    name = tensor_type[len("tensor(") : -1]
    try:
        elem = onnx.TensorProto.DataType.Value(name.upper())
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name
    except (ValueError, TypeError, KeyError):
        return name


def _refuse_operator_dtypes(graph: GraphBuilder, opset: int, cause: Exception) -> None:
    """Name the function whose data has a type its ONNX operator does not take, if one does.

    Called when onnx's checker refuses the model: an input of the model's own data (an
    input, a parameter, a function's result) of a type outside the operator's type
    constraint is the user's dtype, not a converter's fault (int64 max pooling, ``-x`` of
    uint8, ``+`` of bools).

    Raises:
        ExportError: naming the function, its layer, the dtype and what the operator takes.
    """
    values = graph.program.values
    for node in graph.nodes:
        try:
            schema = onnx.defs.get_schema(node.op_type, opset)
        except onnx.defs.SchemaError:
            continue
        allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
        for i, name in enumerate(node.input):
            if name not in values or not schema.inputs:
                continue
            formal = schema.inputs[min(i, len(schema.inputs) - 1)]  # the last may repeat
            types = allowed.get(formal.type_str)
            dtype = values[name].dtype
            elem = onnx.TensorProto.DataType.Name(helper.np_dtype_to_tensor_dtype(dtype))
            if types is None or f"tensor({elem.lower()})" in types:
                continue
            step = graph.made_by[node.output[0]]
            takes = ", ".join(dict.fromkeys(_type_name(t) for t in types))
            raise ExportError(
                f"zerograd_onnx.export: {type(step.call.fn).__name__} (applied "
                f"{step.call.site}) computes on {dtype} data, which ONNX's {node.op_type} "
                f"does not take (it takes {takes}). Give that function data of one of those "
                f"types (the model's input as float32: example.astype(numpy.float32)). Nothing "
                f"was written."
            ) from cause


def _model(g: onnx.GraphProto, opset: int, model: Any) -> onnx.ModelProto:
    """The model around graph ``g``, its metadata naming zerograd's version."""
    title = type(model).__name__
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(
        g, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)
    )
    zerograd_version = _distribution_version("zerograd")
    own_version = _distribution_version("zerograd-onnx")
    proto.producer_name = "zerograd-onnx"
    proto.producer_version = own_version
    proto.doc_string = (
        f"{title} exported from zerograd {zerograd_version} by zerograd-onnx {own_version}"
    )
    helper.set_model_props(
        proto,
        {
            "zerograd_version": zerograd_version,
            "zerograd_onnx_version": own_version,
            "model_class": f"{type(model).__module__}.{type(model).__qualname__}",
        },
    )
    return proto


def _compare_shapes(proto: onnx.ModelProto, program: Program, graph: GraphBuilder) -> None:
    """Check ONNX's inferred shape of every value against the forward's own shapes."""
    inferred = shape_inference.infer_shapes(proto, strict_mode=True, data_prop=True)
    infos = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)}
    for step in program.steps:
        for name in step.outputs:
            info = infos.get(name)
            if info is None or not info.type.tensor_type.HasField("shape"):
                continue
            value = program.values[name]
            dims = info.type.tensor_type.shape.dim
            where = f"{type(step.call.fn).__name__} (applied {step.call.site})"
            if len(dims) != len(value.shape):
                raise ExportError(
                    f"zerograd_onnx.export: {where} gives shape {value.shape} but its ONNX "
                    f"nodes give rank {len(dims)}; a converter's fault, please report it."
                )
            for axis, (d, n) in enumerate(zip(dims, value.shape)):
                if not d.HasField("dim_value"):
                    continue
                if axis in value.dynamic:
                    raise ExportError(
                        f"zerograd_onnx.export: {where} fixes axis {axis} of its result at "
                        f"{d.dim_value}, but that axis follows the batch size ({n} at batch "
                        f"{program.batch[0]}, {value.other_shape[axis]} at batch "
                        f"{program.batch[1]}); the ONNX graph would only run at one batch size. "
                        f"Export with dynamic_batch=False, or compute the shape from the input."
                    )
                if d.dim_value != n:
                    raise ExportError(
                        f"zerograd_onnx.export: {where} gives shape {value.shape} but its ONNX "
                        f"nodes give length {d.dim_value} on axis {axis}; a converter's fault, "
                        f"please report it."
                    )
