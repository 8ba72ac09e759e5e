"""Looking at models: the tree ``repr``, parameter counts and ``summary``.

These are behind the Layer methods of the same names (``Layer.__repr__``,
``Layer.count_params``, ``Layer.summary``).

Examples:
    >>> import numpy as np
    >>> from zerograd_nn.models import MLP
    >>> model = MLP((10, 1))
    >>> print(model)
    MLP(
      (l0): Linear(in=None, out=10)
      (l1): Linear(in=None, out=1)
    )
    >>> s = model.summary(np.zeros((5, 3), np.float32), verbose=False)
    >>> s.total_params
    51
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from zerograd import Parameter, Variable, no_grad, test_mode
from zerograd.utils import size_of


def _own_params(layer: Any) -> Iterator[Parameter]:
    """The Parameters ``layer`` holds itself (not its sub-layers'), once each."""
    seen: set[int] = set()
    for _, member in layer.named_members():
        if isinstance(member, Parameter) and id(member) not in seen:
            seen.add(id(member))
            yield member


def _layers(layer: Any) -> list[tuple[str, str, int, Any]]:
    """``(dotted name, local name, depth, layer)`` for ``layer`` and every layer below it."""
    return [node for node in layer.walk() if not isinstance(node[3], Parameter)]


def _size(param: Parameter) -> int:
    return 0 if param.data is None else size_of(param.data)


def count_params(layer: Any) -> int:
    """Count the scalars in ``layer``'s Parameters.

    Args:
        layer: a ``Layer``.

    Returns:
        The number of elements of every Parameter (a shared one counted once, one not
            sized yet counted as 0).
    """
    return sum(_size(p) for p in layer.params())


def layer_repr(layer: Any, above: frozenset[int] = frozenset()) -> str:
    """Describe ``layer`` and its sub-layers as an indented tree.

    Built without recursion, so a tree of any depth works.

    Args:
        layer: a ``Layer``.
        above: the ids of the layers above it, which a reference back up does not repeat.

    Returns:
        ``Type(extra)`` for a leaf; else ``Type(``, the extra and one ``(name): child``
            per line, and ``)``.
    """
    lines: list[str] = []
    path = set(above)  # the layers from the top down to the one being written

    def opened(node: Any, indent: int, head: str) -> Iterator[tuple[str, Any]] | None:
        """Write ``node``'s first lines; its children to write next, or None for a leaf."""
        extra = node.extra_repr()
        pad = " " * indent
        path.add(id(node))
        children = [(n, c) for n, c in node.named_children() if id(c) not in path]
        if not children:
            path.discard(id(node))
            lines.append(pad + f"{head}{type(node).__name__}({extra})".replace("\n", "\n" + pad))
            return None
        lines.append(f"{pad}{head}{type(node).__name__}(")
        if extra:
            lines.append(pad + f"  {extra}".replace("\n", "\n" + pad))
        return iter(children)

    children = opened(layer, 0, "")
    stack = [] if children is None else [(layer, 0, children)]
    while stack:
        node, indent, children = stack[-1]
        for name, child in children:
            below = opened(child, indent + 2, f"({name}): ")
            if below is not None:
                stack.append((child, indent + 2, below))
                break  # its children first, then the rest of this layer's
        else:
            stack.pop()
            path.discard(id(node))
            lines.append(" " * indent + ")")
    return "\n".join(lines)


@dataclass
class ModelSummary:
    """What ``Layer.summary`` measured: one row per layer, and the total.

    ``str()`` gives the printed table.

    Attributes:
        rows: dicts with ``name`` (dotted; ``''`` for the model itself), ``label`` (the
            attribute name), ``depth``, ``type``,
            ``output_shape`` (a tuple; a list of them for outputs returned as a tuple or a
            list, a dict of them for a dict; None when the layer was not called or returned
            something without a shape), ``calls`` and ``params`` (the layer's own
            parameters, not its sub-layers').
        total_params: the model's ``Layer.count_params()`` after the forward pass.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    total_params: int = 0

    def __str__(self) -> str:
        head = ("Layer", "Type", "Output shape", "Params")
        body = [
            (
                "  " * r["depth"] + (r["label"] or "(model)"),
                r["type"],
                "-" if r["output_shape"] is None else str(r["output_shape"]),
                f"{r['params']:,}",
            )
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(4)]
        rule = "-" * (sum(widths) + 6)

        def fmt(row: tuple[str, ...]) -> str:
            cells = [row[i].ljust(widths[i]) for i in range(3)] + [row[3].rjust(widths[3])]
            return "  ".join(cells).rstrip()

        lines = [fmt(head), rule, *(fmt(r) for r in body), rule]
        lines.append(f"Total params: {self.total_params:,}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"ModelSummary({len(self.rows)} layers, total_params={self.total_params})"


def _restore_variable_state(layer: Any, before: dict[str, Any]) -> None:
    """Put back the attributes of ``layer`` that now hold a (non-Parameter) Variable."""
    for name, value in list(layer.__dict__.items()):
        if isinstance(value, Variable) and not isinstance(value, Parameter):
            if name in before:
                object.__setattr__(layer, name, before[name])
            else:
                object.__delattr__(layer, name)


def _shape_of(outputs: Any) -> Any:
    """The shape of an output; a list of them for a tuple or list, a dict for a dict."""
    if isinstance(outputs, (tuple, list)):
        return [_shape_of(y) for y in outputs]
    if isinstance(outputs, dict):
        return {k: _shape_of(y) for k, y in outputs.items()}
    shape = getattr(outputs, "shape", None)
    return None if shape is None else tuple(shape)


def summarize(
    layer: Any, inputs: tuple, file: TextIO | None = None, verbose: bool = True
) -> ModelSummary:
    """Run ``layer(*inputs)`` without a graph and in test mode, recording each layer's output.

    State that the pass leaves in Variable attributes (a recurrent cell's ``h`` and ``c``)
    is put back afterwards; sizes found by lazily sized layers are kept.

    Args:
        layer: the model.
        inputs: its inputs.
        file: where to print the table (default: the current ``sys.stdout``).
        verbose: print it.

    Returns:
        The ``ModelSummary`` (printed when ``verbose``).
    """
    layers = _layers(layer)
    records: dict[int, dict[str, Any]] = {}

    def wrap(sub: Any) -> Any:
        forward = sub.forward

        def recording_forward(*args: Any) -> Any:
            outputs = forward(*args)
            rec = records.setdefault(id(sub), {"calls": 0})
            rec["calls"] += 1
            rec["output_shape"] = _shape_of(outputs)
            return outputs

        return recording_forward

    # Shadow each layer's forward with an instance attribute for this one call only, so
    # Layer.__call__ (a hot path) carries no hook machinery.
    wrapped = []
    states = [(sub, dict(sub.__dict__)) for *_, sub in layers]
    try:
        for *_, sub in layers:
            if "forward" not in sub.__dict__:
                object.__setattr__(sub, "forward", wrap(sub))
                wrapped.append(sub)
        with no_grad(), test_mode():
            layer(*inputs)
    finally:
        for sub in wrapped:
            object.__delattr__(sub, "forward")
        for sub, before in states:
            _restore_variable_state(sub, before)
    result = ModelSummary(total_params=count_params(layer))
    for name, label, depth, sub in layers:
        rec = records.get(id(sub), {})
        result.rows.append(
            {
                "name": name,
                "label": label,
                "depth": depth,
                "type": type(sub).__name__,
                "output_shape": rec.get("output_shape"),
                "calls": rec.get("calls", 0),
                "params": sum(_size(p) for p in _own_params(sub)),
            }
        )
    if verbose:
        print(result, file=file if file is not None else sys.stdout)
    return result


__all__ = ["ModelSummary", "count_params", "layer_repr", "summarize"]
