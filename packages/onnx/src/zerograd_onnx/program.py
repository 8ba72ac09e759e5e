"""From captured forward passes to the program to convert: values named, batch axes found.

The forward runs once on the example inputs and, with a dynamic batch, once more on a
batch one row larger. The two captures must apply the same functions in the same order;
an axis whose length differs between them is a batch axis (dynamic in the ONNX graph),
every other length is fixed. A static export runs the forward again on the example's rows
in another order instead (:func:`refuse_value_dependence`), for the constants alone.

Each input of each call is a model input, a parameter (named by its dotted path), the
output of an earlier call, or a constant: an array the forward made outside zerograd's
functions (a raw operand such as the ``2.0`` of ``x * 2.0``). A constant must be the same
in both passes; one that changed was computed from the input outside the graph, and ONNX
would freeze it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zerograd import Parameter, Variable
from zerograd.backends import as_numpy

from .capture import Call, Capture
from .errors import ExportError


@dataclass
class Value:
    """One tensor of the ONNX graph and what the captures saw of it."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    other_shape: tuple[int, ...] | None = None  # in the second capture (dynamic batch)
    kind: str = "value"  # "input", "param", "const" or "value" (a call's output)
    data: Any = None  # the array, for params and constants

    @property
    def dynamic(self) -> frozenset[int]:
        """The axes whose length changes with the batch size."""
        if self.other_shape is None:
            return frozenset()
        return frozenset(i for i, (a, b) in enumerate(zip(self.shape, self.other_shape)) if a != b)


@dataclass
class Step:
    """One call to convert: the function, its twin in the second capture, its values."""

    index: int
    call: Call
    twin: Call | None
    inputs: list[str]
    outputs: list[str]


@dataclass
class Program:
    """The calls to convert, in order, with every value they read and write."""

    steps: list[Step]
    values: dict[str, Value]
    inputs: list[str]
    outputs: list[str]  # the value each model output is (Identity nodes added for repeats)
    params: dict[int, str] = field(default_factory=dict)  # id(Parameter) -> name
    by_data: dict[int, str] = field(default_factory=dict)  # id(array) -> value it is the data of
    batch: tuple[int, int] | None = None  # the two batch sizes

    def param_name(self, p: Parameter) -> str:
        """The name of ``p``'s initializer, giving an unnamed one a fresh name."""
        name = self.params.get(id(p))
        if name is None:
            base = p.name if isinstance(p.name, str) and p.name else "param"
            name = base
            k = 0
            while name in self.values or name in self.params.values():
                k += 1
                name = f"{base}_{k}"
            self.params[id(p)] = name
        return name


def _dtype(data: Any, what: str) -> np.dtype:
    """The ONNX graph's dtype for ``data`` (``what`` it is, for the error).

    Raises:
        ExportError: a complex or extended-precision dtype, which no ONNX operator the
            converters write computes with.
    """
    if data is None:
        return np.dtype("float32")
    # ONNX types have no byte order: a big-endian '>f4' (np.load of another machine's file)
    # is float32 in the graph, and its initializers are written little-endian
    dtype = np.dtype(str(as_numpy(data).dtype)).newbyteorder("=")
    if dtype.kind == "c" or (dtype.kind == "f" and dtype.itemsize > 8):
        raise ExportError(
            f"zerograd_onnx.export: {what} is {dtype.name}, which the ONNX operators do not "
            f"compute with (float16, float32, float64, integers and bool are exported); "
            f"convert it with astype before exporting. Nothing was written."
        )
    return dtype


class _Keys:
    """Classify the Variables of one capture: ("input", i), ("out", call, j), or None."""

    def __init__(self, inputs: tuple[Variable, ...], calls: list[Call]) -> None:
        self.of: dict[int, tuple] = {id(x): ("input", i) for i, x in enumerate(inputs)}
        for k, call in enumerate(calls):
            for j, y in enumerate(call.outputs):
                self.of.setdefault(id(y), ("out", k, j))
        self.data: dict[int, tuple] = {}  # id(array) -> key, for index arrays (GetItem)
        for x in inputs:
            self.data.setdefault(id(x.data), self.of[id(x)])
        for call in calls:
            for y in call.outputs:
                self.data.setdefault(id(y.data), self.of[id(y)])

    def key(self, v: Variable) -> tuple | None:
        """Where ``v`` comes from: a model input, a call's output, a parameter, or None."""
        if isinstance(v, Parameter):
            return ("param", id(v))
        # a raw operand wrapped by Function.__call__ may be a traced value's own array
        return self.of.get(id(v)) or self.data.get(id(v.data))


def _describe(v: Any) -> str:
    a = as_numpy(v.data)
    text = np.array2string(a) if a.ndim == 0 or a.ndim == 1 and a.size <= 4 else f"shape {a.shape}"
    return f"{type(v).__name__} {text}"


def _same_constant(a: Variable, b: Variable) -> bool:
    x, y = as_numpy(a.data), as_numpy(b.data)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)


def build_program(
    first: Capture,
    inputs: tuple[Variable, ...],
    outputs: tuple[Variable, ...],
    second: tuple[Capture, tuple[Variable, ...], tuple[Variable, ...]] | None,
    input_names: list[str],
    output_names: list[str],
    params: dict[int, str],
) -> Program:
    """Pair the captures, name every value, and keep only the calls the outputs need.

    Args:
        first: the capture on the example inputs.
        inputs: the example input Variables.
        outputs: the Variables the model returned.
        second: ``(capture, inputs, outputs)`` of the pass one row larger, or None.
        input_names: the ONNX graph's input names.
        output_names: its output names.
        params: ``{id(Parameter): dotted name}`` of the model's parameters.

    Returns:
        The program.

    Raises:
        ExportError: the passes differ in their functions or constants, or read values
            into Python, or ran a backward pass or an optimizer inside the forward.
    """
    refuse_side_channels(first)
    keys = _Keys(inputs, first.calls)
    program = Program([], {}, list(input_names), [], dict(params))
    cap2, inputs2, outputs2, twin_keys = None, None, None, None
    if second is not None:
        cap2, inputs2, outputs2 = second
        refuse_side_channels(cap2)
        _check_same_calls(
            first.calls,
            cap2.calls,
            SECOND_BATCH,
            "A forward whose functions depend on the batch size cannot be exported with a "
            "dynamic batch; export with dynamic_batch=False.",
        )
        twin_keys = _Keys(inputs2, cap2.calls)
        program.batch = (inputs[0].shape[0], inputs2[0].shape[0])

    for i, x in enumerate(inputs):
        other = None if inputs2 is None else tuple(inputs2[i].shape)
        name = input_names[i]
        program.values[name] = Value(
            name, tuple(x.shape), _dtype(x.data, f"input {name!r}"), other, "input"
        )
        program.by_data.setdefault(id(x.data), name)
    for name in output_names:
        if name in program.values:
            raise ValueError(
                f"zerograd_onnx.export: output name {name!r} is also an input's name "
                f"{list(input_names)}; ONNX names each value once: choose other output_names "
                f"(an output that is an input gets its own name). Nothing was written."
            )
    naming = _Naming(program, keys, twin_keys, output_names, outputs, params)
    for k in sorted(_needed(first.calls, outputs, keys)):
        naming.step(k, first.calls[k], None if cap2 is None else cap2.calls[k])
    for i, y in enumerate(outputs):
        other = None if outputs2 is None else outputs2[i]
        if other is not None and keys.key(y) != twin_keys.key(other):
            raise ExportError(
                f"zerograd_onnx.export: output {i} of the model is not the same value at "
                f"batch {program.batch[0]} and at batch {program.batch[1]}; the forward must "
                f"return the same computation at every batch size."
            )
        if keys.key(y) is None and other is not None and not _same_constant(y, other):
            raise ExportError(
                f"zerograd_onnx.export: output {i} of the model is an array made outside "
                f"zerograd's functions ({_describe(y)}) that changes with the input; ONNX "
                f"would freeze it. Compute it with zerograd's functions."
            )
        program.outputs.append(naming.source(y))
    _refuse_unread_inputs(program)
    return program


def _refuse_unread_inputs(program: Program) -> None:
    """Refuse a model input that no converted call (nor an output) reads.

    The forward either ignores it or turned it into an array outside zerograd's functions,
    which the graph would hold as a constant: the file would not read the input at all.
    """
    read = set(program.outputs)
    for step in program.steps:
        read.update(step.inputs)
        read.update(program.by_data.get(id(a)) for a in _index_arrays(step.call.fn))
    for name in program.inputs:
        if name not in read:
            value = program.values[name]
            raise ExportError(
                f"zerograd_onnx.export: input {name!r} (shape {value.shape}, {value.dtype}) "
                f"reaches no node of the graph: no function whose result the outputs need "
                f"takes it. Either the forward made an array of it outside zerograd's functions "
                f"(sigmoid_cross_entropy's and binary_cross_entropy's targets, "
                f"softmax_cross_entropy's labels of shape (N, 1) are), which the file would "
                f"freeze at the example's values, or the outputs do not depend on it. Give it "
                f"to zerograd's functions as it is (labels of shape (N,)), or leave it out of "
                f"the inputs. Nothing was written."
            )


class _Naming:
    """Names the values of the program's steps as they are added, in call order."""

    def __init__(
        self,
        program: Program,
        keys: _Keys,
        twin_keys: _Keys | None,
        output_names: list[str],
        outputs: tuple[Variable, ...],
        params: dict[int, str],
    ) -> None:
        self.program, self.keys, self.twin_keys = program, keys, twin_keys
        self.names: dict[tuple, str] = {("input", i): n for i, n in enumerate(program.inputs)}
        self.reserved = {*output_names, *params.values()}
        self.model_params = set(params)
        # an output a call produces takes the output's name (others go through Identity)
        self.chosen: dict[tuple, str] = {}
        for name, y in zip(output_names, outputs):
            key = keys.key(y)
            if key is not None and key[0] == "out" and key not in self.chosen:
                self.chosen[key] = name

    def _made_in_forward(self, x: Variable | None) -> bool:
        """Whether ``x`` is a Parameter that is not one of the model's."""
        return isinstance(x, Parameter) and id(x) not in self.model_params

    def unique(self, name: str) -> str:
        """``name``, or ``name_1``, ...: one no value, output or parameter has."""
        base, k = name, 0
        while name in self.program.values or name in self.reserved:
            k += 1
            name = f"{base}_{k}"
        return name

    def source(self, x: Variable) -> str:
        """The value ``x`` is: an input's, an earlier output's, a parameter, a new constant."""
        key = self.keys.key(x)
        values = self.program.values
        if key is None:  # a constant: an array made outside zerograd's functions
            name = self.unique("const")
            values[name] = Value(
                name, tuple(x.shape), _dtype(x.data, "a constant"), tuple(x.shape), "const", x.data
            )
        elif key[0] == "param":
            name = self.program.param_name(x)
            if name not in values:
                values[name] = Value(
                    name,
                    tuple(x.shape),
                    _dtype(x.data, f"parameter {name!r}"),
                    tuple(x.shape),
                    "param",
                    x.data,
                )
        else:
            name = self.names[key]
        return name

    def step(self, k: int, call: Call, twin: Call | None) -> None:
        """Add call ``k`` (``twin``: the same call at the second batch size, or None)."""
        program = self.program
        if twin is not None and _index_key(call.fn, self.keys) != _index_key(
            twin.fn, self.twin_keys
        ):
            raise ExportError(
                f"zerograd_onnx.export: the index of {type(call.fn).__name__} (applied "
                f"{call.site}) changes with the batch size: {_index_text(call.fn)} at batch "
                f"{program.batch[0]}, {_index_text(twin.fn)} at batch {program.batch[1]}. "
                f"Index the batch axis with bounds that do not depend on its length (x[:], "
                f"x[1:], x[-1]), or export with dynamic_batch=False."
            )
        for i, x in enumerate(call.inputs):
            other = None if twin is None else twin.inputs[i]
            # a Parameter the forward makes anew on each run is a constant, as an array is
            made = self._made_in_forward(x) and self._made_in_forward(other) and x is not other
            if twin is not None and not made and self.keys.key(x) != self.twin_keys.key(other):
                raise ExportError(_moved(call, k, i))
            constant = made or self.keys.key(x) is None
            if constant and other is not None and not _same_constant(x, other):
                raise ExportError(_changed(call, i, x, other, program.batch))
        inputs = [self.source(x) for x in call.inputs]
        outputs = []
        for j, y in enumerate(call.outputs):
            name = self.chosen.get(("out", k, j)) or self.unique(_value_name(call, k, j))
            other = None if twin is None else tuple(twin.outputs[j].shape)
            if other is not None and len(other) != y.ndim:
                raise ExportError(
                    f"zerograd_onnx.export: {type(call.fn).__name__} (applied {call.site}) "
                    f"gives a {y.ndim}-d result at batch {program.batch[0]} and a {len(other)}-d "
                    f"one at batch {program.batch[1]}; ONNX needs the same rank at every batch "
                    f"size. Export with dynamic_batch=False."
                )
            what = f"the result of {type(call.fn).__name__} (applied {call.site})"
            program.values[name] = Value(name, tuple(y.shape), _dtype(y.data, what), other)
            self.names[("out", k, j)] = name
            program.by_data.setdefault(id(y.data), name)
            outputs.append(name)
        program.steps.append(Step(k, call, twin, inputs, outputs))


def _needed(calls: list[Call], outputs: tuple[Variable, ...], keys: _Keys) -> set[int]:
    """The calls the outputs depend on (a forward's unused work is left out)."""
    needed: set[int] = set()
    stack = [keys.key(y) for y in outputs]
    while stack:
        key = stack.pop()
        if key is None or key[0] != "out" or key[1] in needed:
            continue
        needed.add(key[1])
        stack.extend(keys.key(x) for x in calls[key[1]].inputs)
        for a in _index_arrays(calls[key[1]].fn):  # GetItem's index may be a traced value
            stack.append(keys.data.get(id(a)))
    return needed


def _index_arrays(fn: Any) -> list[Any]:
    slices = getattr(fn, "slices", None)
    if slices is None:
        return []
    items = slices if isinstance(slices, tuple) else (slices,)
    return [s for s in items if hasattr(s, "shape") and hasattr(s, "dtype")]


def _index_key(fn: Any, keys: _Keys) -> Any:
    """GetItem's index, comparable across the two captures (arrays by origin or value)."""
    slices = getattr(fn, "slices", None)
    if slices is None:
        return None
    out = []
    for s in slices if isinstance(slices, tuple) else (slices,):
        if hasattr(s, "shape") and hasattr(s, "dtype"):
            key = keys.data.get(id(s))
            if key is None:
                a = as_numpy(s)
                key = ("array", a.shape, str(a.dtype), a.tobytes())
            out.append(key)
        elif isinstance(s, slice):
            out.append(("slice", s.start, s.stop, s.step))
        else:
            out.append(s)
    return tuple(out)


def _index_text(fn: Any) -> str:
    slices = fn.slices
    items = slices if isinstance(slices, tuple) else (slices,)
    shown = [
        f"array{tuple(s.shape)}" if hasattr(s, "shape") and hasattr(s, "dtype") else repr(s)
        for s in items
    ]
    return f"[{', '.join(shown)}]"


def _value_name(call: Call, k: int, j: int) -> str:
    prefix = f"{call.site.path}/" if call.site.path else ""
    suffix = f":{j}" if len(call.outputs) > 1 else ""
    return f"{prefix}{type(call.fn).__name__}_{k}{suffix}"


def refuse_side_channels(cap: Capture) -> None:
    """Refuse what a capture saw escape the graph.

    Raises:
        ExportError: a value read into Python, a layer state an earlier call left read
            by the forward, or a backward pass or an optimizer update in the forward.
    """
    if cap.reads:
        what, site = cap.reads[0]
        raise ExportError(
            f"zerograd_onnx.export: the forward reads a Variable's value into Python "
            f"({what}, {site}); an ONNX graph cannot follow a computation that goes "
            f"through Python values. A branch on them would keep the example's path and an "
            f"array made from them the example's values. Keep the computation in zerograd's "
            f"functions (x.sum(), F.clip, ...; x.shape and x.dtype need no .data) or export "
            f"the part after that read."
        )
    if cap.held:
        name, site, shape = cap.held[0]
        layer = f"{site.path}.{name}" if site.path else name
        raise ExportError(
            f"zerograd_onnx.export: the forward reads the state {layer!r} of shape {shape} "
            f"that an earlier call left ({site}); the file would hold it as a constant, the "
            f"same at every run, where the layer's state moves on with each call. Call "
            f"reset_state() on the model (or that layer) before exporting, and the file "
            f"computes a call from no state; to export a sequence, unroll it in the forward "
            f"after a reset_state(). Nothing was written."
        )
    if cap.others:
        what, site = cap.others[0]
        raise ExportError(
            f"zerograd_onnx.export: the forward runs {what} ({site}); an exported model "
            f"is its forward computation only."
        )


def _check_same_calls(a: list[Call], b: list[Call], then: str, cause: str) -> None:
    """Refuse two captures of one forward that apply different functions.

    ``then`` names the second run (``"at the second batch size"``, :data:`REORDERED`);
    ``cause`` ends the message: what the forward's path depends on, and what to do.
    """
    for k, (x, y) in enumerate(zip(a, b)):
        if type(x.fn) is not type(y.fn):
            raise ExportError(
                f"zerograd_onnx.export: the forward takes another path {then}: call {k} is "
                f"{type(x.fn).__name__} (applied {x.site}) on the example inputs but "
                f"{type(y.fn).__name__} (applied {y.site}) then. {cause}"
            )
    if len(a) != len(b):
        raise ExportError(
            f"zerograd_onnx.export: the forward applies {len(a)} functions on the example "
            f"inputs but {len(b)} {then}. {cause}"
        )


SECOND_BATCH = "on a batch one row larger"
"""The second run of a dynamic-batch export, as the messages name it."""


REORDERED = "on the example's rows in another order (the first row last)"
"""The second run of a static export, as the messages name it."""


def refuse_value_dependence(
    first: Capture,
    inputs: tuple[Variable, ...],
    outputs: tuple[Variable, ...],
    second: tuple[Capture, tuple[Variable, ...], tuple[Variable, ...]],
    params: dict[int, str],
) -> None:
    """Refuse a forward whose graph depends on the input's values outside zerograd's functions.

    A static export's second run: ``second`` captured the forward on the example's rows in
    another order (:data:`REORDERED`). It must apply the same functions, and every constant
    the outputs need (an array made outside zerograd's functions, a Parameter made in the
    forward, an index array) must be the same: one that differs was computed from the
    input's values, and the file would freeze it.

    Args:
        first: the capture on the example inputs.
        inputs: the example input Variables.
        outputs: the Variables the model returned.
        second: ``(capture, inputs, outputs)`` of the reordered run.
        params: ``{id(Parameter): dotted name}`` of the model's parameters.

    Raises:
        ExportError: naming the function and the constant that changed.
    """
    cap2, inputs2, outputs2 = second
    refuse_side_channels(cap2)
    a, b = first.calls, cap2.calls
    _check_same_calls(
        a,
        b,
        REORDERED,
        "A forward whose functions depend on the input's values cannot be exported: ONNX "
        "would keep one path.",
    )
    keys, keys2 = _Keys(inputs, a), _Keys(inputs2, b)

    def made(v: Any) -> bool:
        return isinstance(v, Parameter) and id(v) not in params

    for k in sorted(_needed(a, outputs, keys)):
        call, twin = a[k], b[k]
        if _index_key(call.fn, keys) != _index_key(twin.fn, keys2):
            raise ExportError(
                f"zerograd_onnx.export: the index of {type(call.fn).__name__} (applied "
                f"{call.site}) changes with the input's values: {_index_text(call.fn)} on the "
                f"example, {_index_text(twin.fn)} {REORDERED}; ONNX would freeze it. Compute "
                f"the selection with zerograd's functions."
            )
        for i, (x, other) in enumerate(zip(call.inputs, twin.inputs)):
            constant = keys.key(x) is None or (made(x) and made(other) and x is not other)
            if constant and not _same_constant(x, other):
                raise ExportError(_changed_with_values(call, i, x, other))
    for i, (y, other) in enumerate(zip(outputs, outputs2)):
        if keys.key(y) is None and not _same_constant(y, other):
            raise ExportError(
                f"zerograd_onnx.export: output {i} of the model is an array made outside "
                f"zerograd's functions ({_describe(y)}) that changes with the input's values; "
                f"ONNX would freeze it. Compute it with zerograd's functions."
            )


def _changed_with_values(call: Call, i: int, x: Variable, other: Variable) -> str:
    return (
        f"zerograd_onnx.export: input {i} of {type(call.fn).__name__} (applied {call.site}) is an "
        f"array made outside zerograd's functions from the input's values: {_describe(x)} on "
        f"the example, {_describe(other)} {REORDERED}. ONNX would freeze it at its example "
        f"value. Compute it with zerograd's functions."
    )


def _moved(call: Call, k: int, i: int) -> str:
    return (
        f"zerograd_onnx.export: input {i} of {type(call.fn).__name__} (call {k}, applied "
        f"{call.site}) comes from different places at the two batch sizes; the forward must "
        f"build the same graph at every batch size (export with dynamic_batch=False)."
    )


def _changed(call: Call, i: int, x: Variable, other: Variable, batch: tuple[int, int]) -> str:
    return (
        f"zerograd_onnx.export: input {i} of {type(call.fn).__name__} (applied {call.site}) is an "
        f"array made outside zerograd's functions, and it changes with the input: "
        f"{_describe(x)} at batch {batch[0]}, {_describe(other)} at batch {batch[1]}. ONNX "
        f"would freeze it at its example value. Compute it with zerograd's functions (for a "
        f"mean over the batch, F.sum then a division by a constant also changes with the "
        f"batch: export with dynamic_batch=False)."
    )
