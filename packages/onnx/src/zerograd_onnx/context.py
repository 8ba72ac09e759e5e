"""What a converter writes with: :class:`OpContext`, one Function call and the graph it adds to.

A converter (one per Function class, :mod:`zerograd_onnx.registry`) reads the call's
settings from the function object (what its constructor stored), the names, shapes and
dtypes of its inputs and outputs, and which axes are the batch's; it adds ONNX nodes that
compute ``ctx.outputs`` from ``ctx.inputs`` with :meth:`OpContext.node` and the constants
they need with :meth:`OpContext.constant`, :meth:`OpContext.ints` and
:meth:`OpContext.tensor`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from zerograd import Function, Parameter, Variable
from zerograd.backends import as_numpy

from .errors import ExportError
from .program import Program, Step, Value


class GraphBuilder:
    """The nodes and initializers of the graph being built, and the names in use."""

    def __init__(self, program: Program, opset: int) -> None:
        self.program = program
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, np.ndarray] = {}  # made TensorProtos once, when written
        self.made_by: dict[str, Step] = {}  # value name -> the step whose converter made it
        self._const_ids: dict[int, str] = {}
        self._count = 0

    def fresh(self, hint: str) -> str:
        """A value name not used yet, starting with ``hint``."""
        while True:
            self._count += 1
            name = f"{hint}__{self._count}"
            if name not in self.program.values and name not in self.initializers:
                return name

    def initializer(self, name: str, array: np.ndarray) -> str:
        """Add ``array`` as the initializer ``name`` (once)."""
        if name not in self.initializers:
            a = np.asarray(array)
            self.initializers[name] = a.astype(a.dtype.newbyteorder("="), copy=False)
        return name

    def add_values(self) -> None:
        """Make the initializers of every parameter and constant the steps read."""
        for step in self.program.steps:
            for name in step.inputs:
                self.ensure(name)
        for name in self.program.outputs:
            self.ensure(name)

    def ensure(self, name: str) -> None:
        """Add the initializer of ``name`` when it is a parameter or a constant."""
        value = self.program.values[name]
        if value.kind in ("param", "const") and name not in self.initializers:
            self.initializer(name, as_numpy(value.data))


class OpContext:
    """One Function call under conversion: read its settings and values, add its nodes.

    Attributes:
        fn: the Function object applied (read what its constructor stored, never what its
            forward wrote: those are the settings a converter may rely on).
        inputs: the value names of its inputs, in order.
        outputs: the value names its nodes must produce, in order.
        site: where it was applied (``str(ctx.site)`` names the layer).
        opset: the ONNX opset the graph is written for.
    """

    def __init__(self, graph: GraphBuilder, step: Step) -> None:
        self.graph = graph
        self.step = step
        self.fn: Function = step.call.fn
        self.inputs: list[str] = list(step.inputs)
        self.outputs: list[str] = list(step.outputs)
        self.site = step.call.site
        self.opset = graph.opset

    # -- what the call saw --------------------------------------------------------------
    def _value(self, name: str) -> Value:
        return self.graph.program.values[name]

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape value ``name`` had on the example inputs."""
        return self._value(name).shape

    def dtype(self, name: str) -> np.dtype:
        """The numpy dtype of value ``name``."""
        return self._value(name).dtype

    def dynamic(self, name: str) -> frozenset[int]:
        """The axes of value ``name`` whose length follows the batch size."""
        return self._value(name).dynamic

    def other_shape(self, name: str) -> tuple[int, ...] | None:
        """The shape value ``name`` had at the second batch size (None: static batch)."""
        return self._value(name).other_shape

    def value_of(self, array: Any) -> str | None:
        """The value whose data ``array`` is (an input or an earlier output), or None.

        A function that takes an array in its constructor (GetItem's index) may be given
        one the graph computed; this finds it, so that it stays an input of the node.
        """
        return self.graph.program.by_data.get(id(array))

    def error(self, message: str) -> ExportError:
        """An :class:`ExportError` naming this function and its layer, then ``message``."""
        return ExportError(
            f"zerograd_onnx.export: {type(self.fn).__name__} (applied {self.site}): {message}"
        )

    # -- what the converter adds --------------------------------------------------------
    def node(self, op_type: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        """Add one ONNX node of ``op_type``; its single output is ``out`` or a fresh name.

        Args:
            op_type: the ONNX operator (``"Conv"``).
            inputs: the value names it reads (``""`` for an omitted optional input).
            out: the output's name; a fresh one when None.
            **attrs: the node's attributes.

        Returns:
            The output's name.
        """
        out = out or self.graph.fresh(self.outputs[0])
        name = f"{self.outputs[0]}/{op_type}_{len(self.graph.nodes)}"
        self.graph.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        self.graph.made_by[out] = self.step
        return out

    def constant(self, array: Any, hint: str = "const") -> str:
        """Add ``array`` (any backend's, or a number) as an initializer; its name."""
        name = self.graph.fresh(f"{self.outputs[0]}/{hint}")
        return self.graph.initializer(name, np.asarray(as_numpy(array)))

    def scalar(self, value: Any, dtype: Any) -> str:
        """A 0-d initializer holding ``value`` in ``dtype``."""
        return self.constant(np.asarray(value, dtype=dtype), "scalar")

    def ints(self, values: Any) -> str:
        """A 1-d int64 initializer (shapes, axes, starts and ends)."""
        return self.constant(np.asarray(list(values), dtype=np.int64).reshape(-1), "ints")

    def tensor(self, obj: Any) -> str:
        """The value for an array a constructor holds (BatchNorm's running statistics).

        A Parameter of the model becomes the initializer named by its dotted path; a
        Variable or an array the graph computed stays that value; anything else is a new
        constant.
        """
        if isinstance(obj, Parameter):
            name = self.graph.program.param_name(obj)
            self.graph.initializer(name, as_numpy(obj.data))
            return name
        data = obj.data if isinstance(obj, Variable) else obj
        found = self.value_of(data)
        if found is not None:
            return found
        cached = self.graph._const_ids.get(id(data))
        if cached is None:
            cached = self.constant(data)
            self.graph._const_ids[id(data)] = cached
        return cached

    def cast(self, name: str, dtype: Any) -> str:
        """``name`` converted to ``dtype`` (a Cast node), or ``name`` when it already is."""
        dtype = np.dtype(dtype)
        if self.dtype_of(name) == dtype:
            return name
        to = helper.np_dtype_to_tensor_dtype(dtype)
        return self.node("Cast", [name], to=to)

    def dtype_of(self, name: str) -> np.dtype | None:
        """The dtype of ``name``: a value's, an initializer's, or None for a node's temporary."""
        if name in self.graph.program.values:
            return self.graph.program.values[name].dtype
        if name in self.graph.initializers:
            return self.graph.initializers[name].dtype
        return None

    def inputs_as_output_dtype(self) -> list[str]:
        """Every input cast to the (first) output's dtype, as numpy's promotion gave it."""
        dtype = self.dtype(self.outputs[0])
        return [self.cast(name, dtype) for name in self.inputs]


__all__ = ["OpContext"]
